// Metrics on real infrastructure: fundings run to APPROVED, then the API's GET /metrics and the
// worker's registry (served as the worker serves it) carry the funding, wallet call, token
// refresh, session URL and HTTP series with the expected values and bounded labels. A worker run
// as its own process serves its series and the Temporal SDK's at WORKER_METRICS_PORT.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { createServer, type AddressInfo } from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FundingView } from '../../domain/funding.ts';
import { startMetricsServer } from '../../lib/metrics-server.ts';
import { readWorkload } from '../../lib/workload-gauges.ts';
import { createSettlementRuns } from '../../ledger/settlement-runs.ts';
import { Prisma } from '../../generated/prisma/client.ts';
import { createEmbeddedLink } from '../support/embedded-link.ts';
import { startPartnerStack, type PartnerStack } from '../support/partner-stack.ts';
import { parseSamples, sampleValue } from '../support/prometheus-text.ts';
import { nodeArgsFor } from '../support/node-entry.ts';

const root = path.resolve(import.meta.dirname, '../..');

async function fund(stack: PartnerStack, recipient: unknown): Promise<FundingView> {
  const response = await stack.opsFetch('/ops/fundings', {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'idempotency-key': randomUUID() },
    body: JSON.stringify({ recipient, amount: { currency: 'PHP', value: '10.00' } }),
  });
  expect(response.status).toBe(202);
  const { fundingId } = (await response.json()) as FundingView;
  const deadline = Date.now() + 60_000;
  for (;;) {
    const funding = (await (await stack.opsFetch(`/ops/fundings/${fundingId}`)).json()) as FundingView;
    if (['APPROVED', 'DECLINED', 'REJECTED', 'FAILED'].includes(funding.status)) return funding;
    if (Date.now() > deadline) throw new Error(`funding ${fundingId} still ${funding.status}`);
    await new Promise((resolve) => setTimeout(resolve, 150));
  }
}

async function codeRecipient(stack: PartnerStack) {
  const user = await stack.admin.createUser({ kycLevel: 'KYC1', balance: '0.00' });
  const { code } = await stack.admin.cashInCode(user.userId);
  return { type: 'CODE', code };
}

/** An embedded link whose access token walletflow believes expired: the vault refreshes once. */
async function expiredLinkRecipient(stack: PartnerStack) {
  const { linkId } = await createEmbeddedLink(stack, { kycLevel: 'KYC1', balance: '0.00' }, { expired: true });
  return { type: 'TOKEN', linkId };
}

describe('metrics of the API and the in-process worker', () => {
  let stack: PartnerStack;
  const fundings: FundingView[] = [];
  let apiText = '';
  let workerText = '';

  beforeAll(async () => {
    stack = await startPartnerStack();
    await stack.startWorker();
    fundings.push(await fund(stack, await codeRecipient(stack)));
    fundings.push(await fund(stack, await expiredLinkRecipient(stack)));
    // The session URL refuses a body that is not JSON: still an answer, still timed.
    const session = await fetch(`${stack.apiBase}/embedded/session`, {
      method: 'POST',
      headers: { 'content-type': 'text/plain' },
      body: 'x',
    });
    expect(session.status).toBe(400);

    const scrape = await fetch(`${stack.apiBase}/metrics`);
    expect(scrape.status).toBe(200);
    expect(scrape.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    apiText = await scrape.text();
    // The worker's registry, served the way worker/main.ts serves it.
    const server = await startMetricsServer({ registry: stack.workerMetrics.registry, host: '127.0.0.1', port: 0 });
    try {
      const answer = await fetch(server.url);
      expect(answer.status).toBe(200);
      workerText = await answer.text();
    } finally {
      await server.close();
    }
  }, 120_000);
  afterAll(async () => {
    await stack?.close();
  });

  it('ran both fundings to APPROVED', () => {
    expect(fundings.map((funding) => funding.status)).toEqual(['APPROVED', 'APPROVED']);
  });

  it('counts fundings by final state, with their time to it', () => {
    expect(sampleValue(workerText, 'walletflow_fundings_finished_total', { status: 'APPROVED' })).toBe(2);
    expect(sampleValue(workerText, 'walletflow_fundings_finished_total', { status: 'DECLINED' })).toBeUndefined();
    expect(sampleValue(workerText, 'walletflow_funding_duration_seconds_count', { status: 'APPROVED' })).toBe(2);
    expect(sampleValue(workerText, 'walletflow_funding_duration_seconds_sum', { status: 'APPROVED' })).toBeGreaterThan(
      0,
    );
    expect(
      sampleValue(workerText, 'walletflow_funding_duration_seconds_bucket', { status: 'APPROVED', le: '+Inf' }),
    ).toBe(2);
    // The API moved no funding to a final state (no cancel).
    expect(sampleValue(apiText, 'walletflow_fundings_finished_total')).toBeUndefined();
  });

  it('counts wallet calls by operation, status, outcome and error code, with latencies', () => {
    // The transfer service answers a create with 201, an execute with 200.
    for (const [operation, httpStatus] of [
      ['transfers.create', '201'],
      ['transfers.execute', '200'],
    ] as const) {
      expect(
        sampleValue(workerText, 'walletflow_wallet_calls_total', {
          service: 'transfers',
          operation,
          http_status: httpStatus,
          outcome: 'ok',
          error_code: 'none',
        }),
      ).toBe(2);
      expect(
        sampleValue(workerText, 'walletflow_wallet_call_duration_seconds_count', {
          service: 'transfers',
          operation,
          http_status: httpStatus,
        }),
      ).toBe(2);
    }
    expect(
      sampleValue(workerText, 'walletflow_wallet_calls_total', { operation: 'op.tokens', http_status: '200' }),
    ).toBe(1);
  });

  it('counts token refreshes', () => {
    expect(sampleValue(workerText, 'walletflow_token_refreshes_total', { kind: 'EMBEDDED', result: 'refreshed' })).toBe(
      1,
    );
  });

  it('times the session URL and every API request by route template', () => {
    expect(sampleValue(apiText, 'walletflow_session_url_duration_seconds_count', { status: '400' })).toBe(1);
    expect(
      sampleValue(apiText, 'walletflow_http_request_duration_seconds_count', {
        method: 'POST',
        route: '/ops/fundings',
        status: '202',
      }),
    ).toBe(2);
    expect(
      sampleValue(apiText, 'walletflow_http_request_duration_seconds_count', {
        method: 'GET',
        route: '/ops/fundings/:fundingId',
        status: '200',
      }),
    ).toBeGreaterThanOrEqual(2);
    expect(
      sampleValue(apiText, 'walletflow_http_request_duration_seconds_count', {
        method: 'POST',
        route: '/embedded/session',
        status: '400',
      }),
    ).toBe(1);
  });

  it('keeps label values bounded: no ids in any label', () => {
    const ids = fundings.flatMap((funding) => [funding.fundingId, funding.transferId ?? 'none-stored']);
    for (const text of [apiText, workerText]) {
      for (const sample of parseSamples(text)) {
        for (const value of Object.values(sample.labels)) {
          expect(ids).not.toContain(value);
          expect(value).not.toMatch(/[0-9a-f]{8}-[0-9a-f]{4}-/i);
        }
      }
    }
  });

  it('reports the on-call gauges, read from PostgreSQL at scrape time (cached 5 s)', async () => {
    for (const name of [
      'walletflow_fundings_in_review',
      'walletflow_payments_in_review',
      'walletflow_fundings_reconciling',
    ]) {
      expect(sampleValue(apiText, name), name).toBeGreaterThanOrEqual(0);
    }
    expect(
      sampleValue(apiText, 'walletflow_oldest_unfinished_age_seconds', { kind: 'funding' }),
    ).toBeGreaterThanOrEqual(0);
    const planted = await Promise.all(
      (['NEEDS_REVIEW', 'RECONCILING'] as const).map(async (status) => {
        const id = randomUUID();
        await stack.database.funding.create({
          data: {
            id,
            idempotencyKey: `gauge-${id}`,
            requestFingerprint: '0'.repeat(64),
            workflowId: `funding-gauge-${id}`,
            status,
            recipientType: 'TOKEN',
            currency: 'PHP',
            amount: new Prisma.Decimal('1.00'),
            createdAt: new Date(Date.now() - 3 * 3600_000),
          },
        });
        return id;
      }),
    );
    // A settlement run that began 40 minutes ago and has not ended (the wallet refusing its retrieves, say).
    const stuck = await createSettlementRuns(stack.database).start({
      date: '2001-01-01',
      timeZone: 'Asia/Manila',
      wholeDay: true,
      requestedBy: 'metrics.test',
    });
    await stack.database
      .$executeRaw`UPDATE settlement_run SET created_at = now() - interval '40 minutes' WHERE id = ${stuck.run.id}::uuid`;
    try {
      const workload = await readWorkload(stack.database);
      expect(workload.settlements.running).toBeGreaterThanOrEqual(1);
      expect(workload.funding.byStatus.NEEDS_REVIEW).toBeGreaterThanOrEqual(1);
      expect(workload.funding.byStatus.RECONCILING).toBeGreaterThanOrEqual(1);
      expect(workload.funding.byStatus.APPROVED).toBeUndefined();
      // The API's cache of the first scrape runs out after 5 s.
      await new Promise((resolve) => setTimeout(resolve, 5100));
      const text = await (await fetch(`${stack.apiBase}/metrics`)).text();
      expect(sampleValue(text, 'walletflow_fundings_in_review')).toBeGreaterThanOrEqual(1);
      expect(sampleValue(text, 'walletflow_fundings_reconciling')).toBeGreaterThanOrEqual(1);
      expect(
        sampleValue(text, 'walletflow_unfinished_items', { kind: 'funding', status: 'RECONCILING' }),
      ).toBeGreaterThanOrEqual(1);
      expect(sampleValue(text, 'walletflow_oldest_unfinished_age_seconds', { kind: 'funding' })).toBeGreaterThanOrEqual(
        3 * 3600,
      );
      expect(sampleValue(text, 'walletflow_oldest_running_settlement_age_seconds')).toBeGreaterThanOrEqual(40 * 60);
    } finally {
      await stack.database.$executeRaw`DELETE FROM settlement_run WHERE id = ${stuck.run.id}::uuid`;
      await stack.database.funding.deleteMany({ where: { id: { in: planted } } });
    }
  }, 20_000);

  it('serves /metrics without authentication, and refuses other routes of the worker server', async () => {
    expect((await fetch(`${stack.apiBase}/metrics`)).status).toBe(200);
    const server = await startMetricsServer({ registry: stack.workerMetrics.registry, host: '127.0.0.1', port: 0 });
    try {
      expect((await fetch(server.url.replace('/metrics', '/other'))).status).toBe(404);
    } finally {
      await server.close();
    }
  });
});

async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

describe('the worker process at WORKER_METRICS_PORT', () => {
  let stack: PartnerStack;
  let worker: ChildProcess | undefined;
  let output = '';
  let metricsUrl = '';

  beforeAll(async () => {
    stack = await startPartnerStack();
    const port = await freePort();
    metricsUrl = `http://127.0.0.1:${port}/metrics`;
    worker = spawn(process.execPath, nodeArgsFor('worker/main.ts'), {
      cwd: root,
      env: {
        ...stack.workerEnv(),
        WORKER_METRICS_PORT: String(port),
        HOST: '127.0.0.1',
        LOG_LEVEL: 'info',
        WORKER_MAX_CONCURRENT_ACTIVITIES: '7',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    for (const stream of [worker.stdout, worker.stderr])
      stream?.on('data', (chunk: Buffer) => (output = (output + chunk.toString()).slice(-20_000)));
  }, 60_000);
  afterAll(async () => {
    const child = worker;
    if (child && child.exitCode === null) {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    }
    await stack?.close();
  });

  it('serves walletflow series and the Temporal SDK series on one port', async () => {
    const funding = await fund(stack, await codeRecipient(stack));
    expect(funding.status, output).toBe('APPROVED');
    const answer = await fetch(metricsUrl);
    expect(answer.status).toBe(200);
    const text = await answer.text();
    expect(sampleValue(text, 'walletflow_fundings_finished_total', { status: 'APPROVED' })).toBe(1);
    expect(
      sampleValue(text, 'walletflow_wallet_calls_total', { operation: 'transfers.execute', http_status: '200' }),
    ).toBe(1);
    expect(sampleValue(text, 'nodejs_heap_size_used_bytes')).toBeGreaterThan(0);
    const sdkSeries = new Set(
      parseSamples(text)
        .map((sample) => sample.name)
        .filter((name) => name.startsWith('temporal_')),
    );
    expect([...sdkSeries].length, text).toBeGreaterThan(0);
    expect(text).not.toContain('more series unavailable');
    // WORKER_MAX_CONCURRENT_ACTIVITIES sizes the worker's activity slots (the SDK's default is 100).
    const activitySlots = { worker_type: 'ActivityWorker' };
    expect(
      (sampleValue(text, 'temporal_worker_task_slots_available', activitySlots) ?? 0) +
        (sampleValue(text, 'temporal_worker_task_slots_used', activitySlots) ?? 0),
      text,
    ).toBe(7);
    // The SDK's own log lines come out as walletflow's JSON lines too.
    expect(output).toMatch(/"sdk":true/);
  }, 90_000);
});
