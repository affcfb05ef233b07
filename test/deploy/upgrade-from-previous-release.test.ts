// The first versioned deploy strands no run in flight (docs/changing-workflows.md, "The first
// versioned deploy"). The previous release (test/support/previous-release.ts, built from this
// checkout's history) runs as its operators ran it: its migrations, its API and its unversioned
// worker (on the bundle of its own workflows), on a real Temporal server on PostgreSQL. Its
// fundings and payments are left in flight: one in the retrieve loop, one in review, one waiting for
// a cancel, a payment in review and one waiting out the wallet's 429s. Today's build is deployed by
// the documented procedure: today's migrations, today's worker beside the old one with
// WORKER_PROMOTE=never, `walletflow deploy status` counting the unversioned runs, `walletflow
// deploy promote`, today's API. Every run then finishes on today's build with no failed workflow
// task, each review resolves through today's API, the cancel lands, nothing is executed twice, the
// holds are all settled, and status counts no unversioned run left before the old worker stops.
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import proto from '@temporalio/proto';
import { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { dropDatabase, ensureDatabaseExists } from '../../lib/database.ts';
import { dataConverterFor, parsePayloadKeys } from '../../lib/payload-codec.ts';
import { applyMigrations } from '../../prisma/schema-engine.ts';
import { startSandbox, type RunningSandbox } from '../../sandbox/server.ts';
import { sandboxAdminClient, type SandboxAdminClient } from '../../sandbox/admin-client.ts';
import { partnerEndpoints, sandboxWalletVariables } from '../../stack/sandbox-wallet.ts';
import { findFreePort } from '../../stack/ports.ts';
import { checkOutPreviousRelease, type PreviousRelease } from '../support/previous-release.ts';
import { startRealTemporal, type RealTemporal } from '../support/real-temporal.ts';
import { testDatabaseUrl } from '../support/test-database.ts';
import { startWorkerProcess, type WorkerProcess } from '../support/worker-process.ts';
import { runCli } from '../support/cli-run.ts';
import { waitFor } from '../support/wait-for.ts';
import { LANE_COUNT, laneWorkflowId } from '../../workflows/fund-lane.contract.ts';

type HistoryEvent = proto.temporal.api.history.v1.IHistoryEvent;
const EventType = proto.temporal.api.enums.v1.EventType;

interface Run {
  /** walletflow's id of the funding or payment. */
  id: string;
  workflowId: string;
}

describe('the first versioned deploy over the previous release, on a real Temporal server', () => {
  let release: PreviousRelease;
  let temporal: RealTemporal;
  let connection: Connection;
  let client: Client;
  let sandbox: RunningSandbox;
  let admin: SandboxAdminClient;
  let databaseUrl: string;
  const serverUrl = testDatabaseUrl();
  const databaseName = `walletflow_upgrade_${process.pid}_${Date.now().toString(36)}`;
  const taskQueue = `upgrade-${randomUUID().slice(0, 8)}`;
  const opsKey = `upgrade-${randomUUID()}`;
  /**
   * Both releases encrypt workflow payloads, as compose requires (the Schedules' arguments too); `walletflow deploy`
   * runs without the key, as an operator's machine does: found by a read, its status could not read the sweep
   * Schedule's encrypted arguments and exited 1 in every deployment that encrypts.
   */
  const payloadKeys = `upgrade-1:${Buffer.alloc(32, 9).toString('base64')}`;
  let apiPort: number;
  const processes: WorkerProcess[] = [];

  /** What every process of either release reads: one database, one Temporal, one sandbox, one key. */
  const environment = (extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv => ({
    ...process.env,
    NODE_ENV: 'test',
    LOG_LEVEL: 'info',
    DATABASE_URL: databaseUrl,
    TEMPORAL_ADDRESS: temporal.address,
    TEMPORAL_NAMESPACE: temporal.namespace,
    TEMPORAL_TASK_QUEUE: taskQueue,
    TOKEN_ENCRYPTION_KEY: Buffer.alloc(32, 7).toString('base64'),
    PAYLOAD_ENCRYPTION_KEYS: payloadKeys,
    OPS_API_KEYS: `upgrade-ops:read+fund+pay+resolve+accounts+admin+approve:${opsKey}`,
    SESSION_ALLOWED_IPS: '127.0.0.1',
    PORT: String(apiPort),
    WALLET_TIMEOUT_MS: '5000',
    WORKER_METRICS_PORT: '0',
    // The sweep leaves these runs to their workflows: none is old enough for it.
    RECONCILE_AFTER_SECONDS: '3600',
    ...sandboxWalletVariables(sandbox),
    ...extra,
  });

  const start = (env: NodeJS.ProcessEnv, options: { cwd?: string; entry?: string }) => {
    const child = startWorkerProcess(env, options);
    processes.push(child);
    return child;
  };
  const stop = async (child: WorkerProcess) => {
    await child.stop('SIGTERM');
    processes.splice(processes.indexOf(child), 1);
  };
  /** Where the test is, on stderr, with the seconds since the first step: a slow step shows where it waits. */
  let firstStepAt: number | undefined;
  const step = (what: string) => {
    firstStepAt ??= Date.now();
    process.stderr.write(`upgrade test: +${((Date.now() - firstStepAt) / 1000).toFixed(1)}s ${what}\n`);
  };
  const apiBase = () => `http://127.0.0.1:${apiPort}`;
  async function startApi(cwd: string): Promise<WorkerProcess> {
    const api = start(environment(), { cwd, entry: 'api/main.ts' });
    await waitFor(
      'the API answers',
      async () => ((await fetch(`${apiBase()}/healthz`).catch(() => undefined))?.ok ? true : undefined),
      90_000,
    ).catch((error: Error) => {
      throw new Error(`${error.message}\n${api.output()}`);
    });
    return api;
  }
  async function startWorker(cwd: string, extra: NodeJS.ProcessEnv = {}): Promise<WorkerProcess> {
    const worker = start(environment(extra), { cwd });
    await worker.polling(180_000);
    return worker;
  }
  const ops = async (method: string, route: string, body?: unknown) => {
    const response = await fetch(`${apiBase()}${route}`, {
      method,
      headers: {
        authorization: `Bearer ${opsKey}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json', 'idempotency-key': randomUUID() }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return {
      status: response.status,
      body: (await response.json().catch(() => null)) as Record<string, unknown> | null,
    };
  };
  const deployCli = (...args: string[]) =>
    runCli(['deploy', ...args], {
      env: {
        TEMPORAL_ADDRESS: temporal.address,
        TEMPORAL_NAMESPACE: temporal.namespace,
        TEMPORAL_TASK_QUEUE: taskQueue,
        LOG_LEVEL: 'warn',
      },
    });

  beforeAll(async () => {
    [release, temporal] = await Promise.all([checkOutPreviousRelease(), startRealTemporal()]);
    connection = await Connection.connect({ address: temporal.address });
    client = new Client({
      connection,
      namespace: temporal.namespace,
      dataConverter: dataConverterFor(parsePayloadKeys(payloadKeys)),
    });
    // Found free and bound by each API itself (PORT), not handed over as the other stacks do (LISTEN_FD): the previous
    // release reads no LISTEN_FD, and both releases' APIs answer on this one port, the sandbox's registration.
    apiPort = await findFreePort();
    sandbox = await startSandbox({ port: 0, registration: partnerEndpoints(`http://127.0.0.1:${apiPort}`) });
    admin = sandboxAdminClient(sandbox.url);
    databaseUrl = await ensureDatabaseExists(serverUrl, databaseName);
    await release.migrate(databaseUrl);
  }, 300_000);

  afterAll(async () => {
    for (const child of [...processes].reverse()) await child.stop('SIGTERM');
    await connection?.close();
    await sandbox?.close();
    await temporal?.stop();
    await dropDatabase(serverUrl, databaseName).catch(() => undefined);
    await release?.remove();
  }, 120_000);

  async function fund(cashInCodeOf: string): Promise<Run> {
    const { code } = await admin.cashInCode(cashInCodeOf);
    const answer = await ops('POST', '/ops/fundings', {
      recipient: { type: 'CODE', code },
      amount: { currency: 'PHP', value: '5.00' },
    });
    expect(answer.status, JSON.stringify(answer.body)).toBe(202);
    return runOf(answer.body!.fundingId as string, `/ops/fundings/`);
  }
  async function pay(linkId: string, value: string): Promise<Run> {
    const answer = await ops('POST', '/ops/payments', { linkId, amount: { currency: 'PHP', value } });
    expect(answer.status, JSON.stringify(answer.body)).toBe(202);
    return runOf(answer.body!.id as string, `/ops/payments/`);
  }
  /** The run's workflow id, as the release stored it beside the funding or payment. */
  async function runOf(id: string, route: string): Promise<Run> {
    const table = route.startsWith('/ops/fundings') ? 'funding' : 'payment';
    const database = new pg.Client({ connectionString: databaseUrl });
    await database.connect();
    try {
      const { rows } = await database.query<{ workflow_id: string }>(`SELECT workflow_id FROM ${table} WHERE id = $1`, [
        id,
      ]);
      return { id, workflowId: rows[0]!.workflow_id };
    } finally {
      await database.end();
    }
  }
  /** The run's result; one that does not end in time is described (its record, its last events). */
  async function resultOf(run: Run): Promise<{ status: string; errorCode: string | null }> {
    const result = client.workflow.getHandle(run.workflowId).result() as Promise<{
      status: string;
      errorCode: string | null;
    }>;
    const ended = await Promise.race([
      result.then(() => true),
      new Promise<false>((resolve) => setTimeout(() => resolve(false), 180_000)),
    ]);
    if (!ended) {
      const events = await historyOf(run.workflowId);
      const last = events
        .slice(-12)
        .map((event) => EventType[Number(event.eventType)])
        .join(', ');
      const record = (
        await ops('GET', `/ops/${run.workflowId.includes('payment') ? 'payments' : 'fundings'}/${run.id}`)
      ).body?.status;
      throw new Error(`${run.workflowId} did not end (record ${String(record)}); its last events: ${last}`);
    }
    return result;
  }
  const statusOf = async (route: string) => (await ops('GET', route)).body?.status as string | undefined;
  const until = (what: string, route: string, status: string) =>
    waitFor(what, async () => ((await statusOf(route)) === status ? true : undefined), 120_000);
  const historyOf = async (workflowId: string): Promise<HistoryEvent[]> =>
    (await client.workflow.getHandle(workflowId).fetchHistory()).events ?? [];
  /** The build that completed each workflow task, in order (undefined: no version, an unversioned worker). */
  const buildsOf = (events: HistoryEvent[]) =>
    events
      .filter((event) => Number(event.eventType) === EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED)
      .map((event) => event.workflowTaskCompletedEventAttributes?.deploymentVersion?.buildId || undefined);

  it('runs the previous release left in the retrieve loop, in review and waiting for a cancel finish on today’s build; nothing executes twice', async () => {
    step('the previous release starts');
    // The previous release, as it ran: its API and its worker (unversioned), on its own workflows'
    // bundle (WORKFLOW_BUNDLE_PATH, as its Dockerfile ran it; made once per release, previous-release.ts).
    const [oldApi, oldWorker] = await Promise.all([
      startApi(release.dir),
      startWorker(release.dir, { WORKFLOW_BUNDLE_PATH: release.workflowBundlePath }),
    ]);

    const recipient = await admin.createUser({ kycLevel: 'KYC1', balance: '0.00' });
    const payer = await admin.createUser({ kycLevel: 'KYC1', balance: '500.00' });
    await admin.launch(payer.userId);
    const linkId = await waitFor(
      'the payer linked by the release’s onboarding',
      async () => {
        const found = await ops('GET', `/ops/links?partnerUserId=${encodeURIComponent(`wallet:${payer.profileId}`)}`);
        return (found.body?.items as Array<{ linkId: string; status?: string }> | undefined)?.[0]?.linkId;
      },
      90_000,
    );

    step('F2, P1');
    // F2 and P1, in review: every execute fails before it takes effect, so their outcome stays unknown.
    await admin.setFaults([
      { endpoint: 'transfers.execute', mode: 'error-before-effect', rate: 1 },
      { endpoint: 'op.payments.execute', mode: 'error-before-effect', rate: 1 },
    ]);
    const f2 = await fund(recipient.userId);
    const p1 = await pay(linkId, '11.00');
    await until('F2 in review', `/ops/fundings/${f2.id}`, 'NEEDS_REVIEW');
    await until('P1 in review', `/ops/payments/${p1.id}`, 'NEEDS_REVIEW');

    step('F1');
    // F1, in the retrieve loop: executed, the transfer PROCESSING until the wallet's clock passes five minutes more
    // than the test takes. After F2 and P1 (their faults cleared), so that its retrieves are still close together when
    // the clock moves: the loop backs off to 32 s between retrieves within a minute.
    await admin.clearFaults();
    await admin.settings({ processingDelayMs: 300_000 });
    const f1 = await fund(recipient.userId);
    await waitFor(
      'F1 retrieving',
      async () =>
        (await historyOf(f1.workflowId)).some((event) => Number(event.eventType) === EventType.EVENT_TYPE_TIMER_STARTED)
          ? true
          : undefined,
      60_000,
    );

    step('F3, P2');
    // F3 waits before any create can succeed (429s), for the cancel; P2 waits out the wallet's 429s on its execute.
    // A funding's create gives up after 15 of them and a payment after MAX_NOT_SENT (10), each after the wallet's
    // Retry-After: at 10 s both still wait when ops act, whatever the deploy between took (at 2 s, 30 s and 20 s in
    // all, a loaded machine's deploy outlasted them: F3 ended FAILED before its cancel, P2 RATE_LIMITED).
    await admin.setFaults([
      { endpoint: 'transfers.create', mode: 'rate-limited', rate: 1, retryAfterSeconds: 10 },
      { endpoint: 'op.payments.execute', mode: 'rate-limited', rate: 1, retryAfterSeconds: 10 },
    ]);
    const f3 = await fund(recipient.userId);
    const p2 = await pay(linkId, '12.00');
    await until('F3 creating', `/ops/fundings/${f3.id}`, 'CREATING');
    await until('P2 executing', `/ops/payments/${p2.id}`, 'EXECUTING');
    const runs = [f1, f2, f3, p1, p2];
    for (const run of runs)
      expect(
        buildsOf(await historyOf(run.workflowId)).every((build) => build === undefined),
        run.workflowId,
      ).toBe(true);

    step('today’s worker');
    // Today's release, by the documented procedure: migrations, then today's worker beside the old
    // one, registered and not current.
    await applyMigrations(databaseUrl);
    const newWorker = await startWorker(process.cwd(), {
      WORKER_PROMOTE: 'never',
      WORKFLOW_BUNDLE_PATH: inject('workflowBundlePath'),
    });
    // The server lists the build once its pollers have reached it.
    const registered = await waitFor(
      'today’s build registered',
      async () => {
        const status = await deployCli('status', '--json');
        return status.code === 0
          ? (JSON.parse(status.stdout) as {
              current: string | null;
              versions: Array<{ buildId: string }>;
              unversioned: { total: number; byType: Record<string, number> };
            })
          : undefined;
      },
      60_000,
    );
    expect(registered.current).toBeNull();
    expect(registered.versions).toHaveLength(1);
    const build = registered.versions[0]!.buildId;
    expect(registered.unversioned.byType).toMatchObject({ fundWallet: 3, payWallet: 2 });
    // A configuration whose task queue is not the one the previous release's runs are on (a TEMPORAL_TASK_QUEUE in a
    // `.env` that the previous release's compose ignored): status still counts them, where the deployment's sweep
    // Schedule starts its runs, and says so. Before: it counted the configured queue alone and said 0, so the old
    // workers were stopped with every one of their runs open.
    const moved = await runCli(['deploy', 'status'], {
      env: {
        TEMPORAL_ADDRESS: temporal.address,
        TEMPORAL_NAMESPACE: temporal.namespace,
        TEMPORAL_TASK_QUEUE: `${taskQueue}-moved`,
        WORKER_DEPLOYMENT_NAME: taskQueue.replace(/[^A-Za-z0-9_-]/g, '-'),
        LOG_LEVEL: 'warn',
      },
    });
    expect(moved.code, moved.stderr).toBe(0);
    expect(moved.stdout).toContain(`unversioned runs open: ${registered.unversioned.total} (`);
    expect(moved.stdout).toContain(`this deployment's schedules start their runs on ${taskQueue}`);

    step('today’s API, promote');
    // Today's API replaces the old one; then today's build becomes current.
    await stop(oldApi);
    const api = await startApi(process.cwd());
    const promoted = await deployCli('promote', build);
    expect(promoted.code, promoted.stderr).toBe(0);

    step('resolve, cancel');
    // Ops act through today's API on runs the previous release started.
    const resolvedF2 = await ops('POST', `/ops/fundings/${f2.id}/resolve`, {
      outcome: 'FAILED',
      note: 'the wallet shows the transfer never executed',
    });
    expect(resolvedF2.status, `${JSON.stringify(resolvedF2.body)}\n${api.output()}\n${newWorker.output()}`).toBe(200);
    const resolvedP1 = await ops('POST', `/ops/payments/${p1.id}/resolve`, {
      outcome: 'FAILED',
      note: 'no debit in the wallet’s ledger',
    });
    expect(resolvedP1.status, JSON.stringify(resolvedP1.body)).toBe(200);
    const cancelled = await ops('POST', `/ops/fundings/${f3.id}/cancel`);
    expect(cancelled.status, JSON.stringify(cancelled.body)).toBe(200);
    await admin.clearFaults();
    await admin.settings({ processingDelayMs: 0 });
    // F1's transfer settles: the wallet's five minutes pass (its clock; the payer's tokens, ten minutes for the access
    // token, stay good for P2). Now, while P2 waits out its last Retry-After: F1's retrieve loop backs off to 32 s
    // between retrieves the longer it runs, so the sooner it finds the transfer settled.
    await admin.advanceClock(300);

    step('results');
    const results = await Promise.all([f2, f3, p1, p2].map(resultOf));
    expect(results.map((result) => [result.status, result.errorCode])).toEqual([
      ['FAILED', 'RESOLVED_FAILED'],
      ['FAILED', 'CANCELLED'],
      ['FAILED', 'RESOLVED_FAILED'],
      ['SUCCEEDED', null],
    ]);
    expect(await resultOf(f1)).toMatchObject({ status: 'APPROVED', errorCode: null });
    for (const run of runs) {
      const events = await historyOf(run.workflowId);
      // Begun on the old worker, finished on today's build, no task ever refused on the way.
      const builds = buildsOf(events);
      expect(builds[0], run.workflowId).toBeUndefined();
      expect(builds.at(-1), run.workflowId).toBe(build);
      expect(
        events.filter((event) => Number(event.eventType) === EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED),
        run.workflowId,
      ).toEqual([]);
    }

    // The lanes (FUNDING_LANES=auto): whichever are running began once today's build was current, never on the
    // previous release's workers, which have no fundLane (the lanes today's worker started before the promotion failed
    // their tasks there).
    for (let lane = 0; lane < LANE_COUNT; lane += 1) {
      const events = await historyOf(laneWorkflowId(taskQueue, lane)).catch(() => []);
      expect(
        events.filter((event) => Number(event.eventType) === EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED),
        `lane ${lane}`,
      ).toEqual([]);
      for (const builtBy of buildsOf(events)) expect(builtBy, `lane ${lane}`).toBe(build);
    }

    step('ledger');
    // Exactly once, and the books: F1 executed once, F2 and P1 never, P2 once; no hold left.
    const ledger = await admin.ledger();
    const transferOf = async (run: Run) =>
      (await ops('GET', `/ops/fundings/${run.id}`)).body?.transferId as string | null;
    const executionsOf = async (run: Run) => {
      const transferId = await transferOf(run);
      return ledger.transfers.find((transfer) => transfer.transferId === transferId)?.executions ?? 0;
    };
    expect(await executionsOf(f1)).toBe(1);
    expect(await executionsOf(f2)).toBe(0);
    for (const transfer of ledger.transfers) expect(transfer.executions).toBeLessThanOrEqual(1);
    for (const payment of ledger.payments) expect(payment.executions).toBeLessThanOrEqual(1);
    expect(ledger.payments.filter((payment) => payment.executions === 1)).toHaveLength(1);
    const treasury = await ops('GET', '/ops/accounts/TREASURY');
    expect(treasury.body?.held).toMatchObject({ value: '0.00' });

    step('unversioned');
    // No run of walletflow's workflows is left unversioned: the old worker may stop.
    await waitFor(
      'no unversioned run left',
      async () => {
        const now = JSON.parse((await deployCli('status', '--json')).stdout) as { unversioned: { total: number } };
        return now.unversioned.total === 0 ? true : undefined;
      },
      120_000,
    );
    await stop(oldWorker);
  }, 600_000);
});
