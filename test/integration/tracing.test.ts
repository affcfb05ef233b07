// OpenTelemetry traces through the real processes: the API (api/main.ts) and the worker
// (worker/main.ts, on the traced twin of a prebuilt workflow bundle) run as processes of their own
// with OTEL_EXPORTER_OTLP_ENDPOINT pointing at a receiver in this test, exactly as a collector
// would be configured. One CODE funding through them makes one trace: the API request → Temporal's
// StartWorkflow → RunWorkflow → StartActivity → RunActivity → a span per wallet HTTP call; and no
// span carries a secret.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { copyFile, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { workflowBundleFile } from '../../harness/workflow-bundle-file.ts';
import { holdFreePort, type HeldPort } from '../../stack/ports.ts';
import { handOverSocket } from '../../stack/child-process.ts';
import type { FundingView } from '../../domain/funding.ts';
import { tracedBundlePath } from '../../lib/tracing-bundle.ts';
import { buildIdOf } from '../../lib/workflow-bundle.ts';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../support/otlp-receiver.ts';
import { startPartnerStack, type PartnerStack } from '../support/partner-stack.ts';
import { waitFor } from '../support/wait-for.ts';
import { nodeArgsFor } from '../support/node-entry.ts';

const root = path.resolve(import.meta.dirname, '../..');
const SERVER = 2;
const CLIENT = 3;

let stack: PartnerStack;
let receiver: OtlpReceiver;
let bundleDir: string;
const children: { child: ChildProcess; output: () => string }[] = [];

function start(entry: string, env: NodeJS.ProcessEnv, socket?: HeldPort) {
  const handedOver = socket ? handOverSocket(socket) : undefined;
  const child = spawn(process.execPath, nodeArgsFor(entry), {
    cwd: root,
    env: { ...env, ...handedOver?.env },
    stdio: handedOver?.stdio ?? ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const handle = { child, output: () => output };
  children.push(handle);
  return handle;
}

describe('tracing', () => {
  let apiBase: string;
  let tracingEnv: NodeJS.ProcessEnv;
  /** The traced funding's workflow. */
  let workflowId = '';

  beforeAll(async () => {
    stack = await startPartnerStack();
    receiver = await startOtlpReceiver();
    // A prebuilt bundle and its traced twin, as `npm run build` writes them (the suite's bundle has no tracing).
    bundleDir = await mkdtemp(path.join(tmpdir(), 'walletflow-traced-bundle-'));
    const bundlePath = path.join(bundleDir, 'workflow-bundle.js');
    await copyFile(inject('workflowBundlePath'), bundlePath);
    await copyFile(await workflowBundleFile({ tracing: true }), tracedBundlePath(bundlePath));
    tracingEnv = {
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_BSP_SCHEDULE_DELAY: '100',
      WORKFLOW_BUNDLE_PATH: bundlePath,
    };

    const worker = start('worker/main.ts', { ...stack.workerEnv(), ...tracingEnv, LOG_LEVEL: 'info' });
    await waitFor(
      'the worker polls',
      () => (worker.output().includes('worker polling') ? true : undefined),
      90_000,
      worker.output,
    );
    expect(worker.output()).toContain('tracing on');
    // Its build is the plain bundle's: a worker without tracing serves the same runs pinned to it (a build id of the
    // traced twin's left every run pinned to the plain build with no worker once tracing was turned on).
    const polling = worker
      .output()
      .split('\n')
      .flatMap((line) => (line.includes('worker polling') ? [JSON.parse(line) as { buildId?: string }] : []));
    expect(polling.map((line) => line.buildId)).toEqual([buildIdOf(await readFile(bundlePath))]);

    const socket = await holdFreePort();
    apiBase = `http://127.0.0.1:${socket.port}`;
    const api = start(
      'api/main.ts',
      {
        ...stack.workerEnv(),
        ...tracingEnv,
        OPS_API_KEYS: stack.opsKey,
        HOST: '127.0.0.1',
        SESSION_ALLOWED_IPS: '127.0.0.1',
        LOG_LEVEL: 'info',
      },
      socket,
    );
    await socket.close();
    await waitFor(
      'the API answers',
      async () => ((await fetch(`${apiBase}/healthz`).catch(() => null))?.status === 200 ? true : undefined),
      60_000,
      api.output,
    );
  }, 180_000);

  afterAll(async () => {
    for (const { child } of children) if (child.exitCode === null) child.kill('SIGTERM');
    await Promise.all(
      children.map(({ child }) =>
        child.exitCode === null ? new Promise((resolve) => child.once('exit', resolve)) : undefined,
      ),
    );
    await receiver?.close();
    await stack?.close();
    if (bundleDir) await rm(bundleDir, { recursive: true, force: true });
  });

  it('make one trace of a funding: API request → StartWorkflow → RunWorkflow → activities → each wallet call, with no secret in any span', async () => {
    const user = await stack.admin.createUser({ kycLevel: 'KYC1', balance: '100.00' });
    const { code } = await stack.admin.cashInCode(user.userId);
    const ops = (route: string, init: RequestInit = {}) =>
      fetch(`${apiBase}${route}`, {
        ...init,
        headers: { authorization: `Bearer ${stack.opsKey}`, 'content-type': 'application/json', ...init.headers },
      });
    const response = await ops('/ops/fundings', {
      method: 'POST',
      headers: { 'idempotency-key': randomUUID() },
      body: JSON.stringify({ recipient: { type: 'CODE', code }, amount: { currency: 'PHP', value: '123.45' } }),
    });
    expect(response.status).toBe(202);
    const { fundingId } = (await response.json()) as FundingView;
    const funding = await waitFor(
      'the funding ends APPROVED',
      async () => {
        const view = (await (await ops(`/ops/fundings/${fundingId}`)).json()) as FundingView;
        return view.status === 'APPROVED' ? view : undefined;
      },
      60_000,
    );
    ({ workflowId } = await stack.database.funding.findUniqueOrThrow({
      where: { id: funding.fundingId },
      select: { workflowId: true },
    }));

    // The request's span, then everything of its trace once the workflow's own span is exported.
    const apiSpan = await waitFor(
      'the API span',
      () =>
        receiver.spans.find(
          (span) => span.name === 'POST /ops/fundings' && span.attributes['http.response.status_code'] === 202,
        ),
      20_000,
      () => JSON.stringify(receiver.spans.map((s) => s.name)),
    );
    const trace = await waitFor(
      'the whole trace',
      () => {
        const spans = receiver.spans.filter((span) => span.traceId === apiSpan.traceId);
        const done =
          spans.some((span) => span.name === 'RunWorkflow:fundWallet') &&
          spans.filter((span) => span.name.startsWith('wallet ')).length >= 2;
        return done ? spans : undefined;
      },
      20_000,
      () => JSON.stringify(receiver.spans.filter((span) => span.traceId === apiSpan.traceId).map((s) => s.name)),
    );
    const names = trace.map((span) => span.name);
    const one = (name: string): ReceivedSpan => {
      const found = trace.filter((span) => span.name === name);
      expect(found, `${name} in ${JSON.stringify(names)}`).toHaveLength(1);
      return found[0]!;
    };
    const parentOf = (span: ReceivedSpan) => trace.find((candidate) => candidate.spanId === span.parentSpanId);

    // The API request: a root SERVER span of the API process, named by its route template.
    expect(apiSpan).toMatchObject({ service: 'walletflow-api', kind: SERVER, parentSpanId: undefined });
    expect(apiSpan.attributes).toMatchObject({
      'http.request.method': 'POST',
      'http.route': '/ops/fundings',
      'walletflow.request_id': response.headers.get('x-request-id'),
    });
    // The client's start of the workflow, in the request.
    const startWorkflow = one('StartWorkflow:fundWallet');
    expect(startWorkflow).toMatchObject({ service: 'walletflow-api', parentSpanId: apiSpan.spanId });
    expect(startWorkflow.attributes).toMatchObject({ temporalWorkflowId: workflowId });
    // The workflow, in the worker, under the start.
    const runWorkflow = one('RunWorkflow:fundWallet');
    expect(runWorkflow).toMatchObject({ service: 'walletflow-worker', parentSpanId: startWorkflow.spanId });
    // Each activity: scheduled by the workflow, run under its scheduling. A fresh funding runs in one
    // pass, a local activity: its scheduling and its run are spans as an activity's are.
    const runActivities = trace.filter((span) => span.name.startsWith('RunActivity:'));
    expect(runActivities.map((span) => span.name)).toEqual(expect.arrayContaining(['RunActivity:fundInOnePass']));
    for (const run of runActivities) {
      const scheduled = parentOf(run);
      expect(scheduled?.name, run.name).toBe(run.name.replace('RunActivity:', 'StartActivity:'));
      expect(scheduled?.parentSpanId, run.name).toBe(runWorkflow.spanId);
      expect(run.attributes, run.name).toMatchObject({ temporalWorkflowId: workflowId });
    }
    // One CLIENT span per wallet HTTP call, under the activity that made it, matching the audit row.
    const walletSpans = trace.filter((span) => span.name.startsWith('wallet '));
    const rows = await stack.database.walletCall.findMany({
      where: {
        requestReferenceNo: {
          in: walletSpans.map((span) => String(span.attributes['walletflow.request_reference_no'])),
        },
      },
    });
    expect(rows).toHaveLength(walletSpans.length);
    for (const span of walletSpans) {
      const row = rows.find(
        (candidate) => candidate.requestReferenceNo === span.attributes['walletflow.request_reference_no'],
      )!;
      expect(span).toMatchObject({ service: 'walletflow-worker', kind: CLIENT, name: `wallet ${row.operation}` });
      expect(span.attributes).toMatchObject({
        'walletflow.wallet.operation': row.operation,
        'http.response.status_code': row.httpStatus,
        'walletflow.wallet.outcome': 'ok',
      });
      expect(parentOf(span)?.name, span.name).toMatch(/^RunActivity:/);
    }
    expect(walletSpans.map((span) => span.name)).toEqual(
      expect.arrayContaining(['wallet transfers.create', 'wallet transfers.execute']),
    );
    expect(parentOf(walletSpans.find((span) => span.name === 'wallet transfers.execute')!)?.name).toBe(
      'RunActivity:fundInOnePass',
    );

    // No secret anywhere in what the collector received: not the cash-in code, a key, or the amount.
    const exported = receiver.rawBodies.join('\n');
    const secrets = {
      code,
      opsKey: stack.opsKey,
      transferApiKey: stack.sandbox.partner.transferApiKey,
      amount: '123.45',
    };
    for (const [name, value] of Object.entries(secrets))
      expect(exported.includes(value), `${name} in an exported span`).toBe(false);
  }, 120_000);

  it('leave a history that replays on the plain bundle (tracing turned off under running workflows)', async () => {
    expect(workflowId).not.toBe('');
    const history = await stack.temporal.workflow.getHandle(workflowId).fetchHistory();
    // Traced: the trace context rides along in the headers of the activities a funding schedules.
    // This one ran in one pass, a local activity (a marker, no header in the history): what matters
    // is that the history the traced workflow left replays on the plain bundle.
    const scheduled = history.events?.filter((event) => event.activityTaskScheduledEventAttributes) ?? [];
    expect(
      scheduled.every((event) =>
        Object.keys(event.activityTaskScheduledEventAttributes?.header?.fields ?? {}).includes('_tracer-data'),
      ),
    ).toBe(true);
    expect(
      history.events?.filter((event) => event.markerRecordedEventAttributes?.markerName === 'core_local_activity')
        .length,
    ).toBeGreaterThan(0);
    const { Worker } = await import('@temporalio/worker');
    await expect(
      Worker.runReplayHistory({ workflowBundle: { codePath: inject('workflowBundlePath') } }, history, workflowId),
    ).resolves.toBeUndefined();
  }, 60_000);
});
