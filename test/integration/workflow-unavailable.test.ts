// A request whose workflow Temporal cannot take now is answered 503 WORKFLOW_UNAVAILABLE with
// Retry-After, in words true for what it stored, never 500 (promise 23b, lib/workflow-unavailable.ts):
// a resolve whose funding's workflow task is failing (a deploy whose build cannot run the run: here a
// worker whose bundle has no fundWallet), and the starts of an API whose Temporal cannot be reached
// (its client on a closed port, as api/main.ts connects: lazily). What each left in the database is
// read back: a resolve changed nothing; a start stored its record whole, and the same request (with
// the same key), once Temporal answers, finds it and starts it; a cancel is done without its workflow.
import path from 'node:path';
import { createServer } from 'node:http';
import { createServer as createHttp2Server, type Http2Server } from 'node:http2';
import type { AddressInfo } from 'node:net';
import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createApp } from '../../api/app.ts';
import { createLogger } from '../../lib/logger.ts';
import { Client, Connection, defaultGrpcRetryOptions, makeGrpcRetryInterceptor } from '@temporalio/client';
import { createTokenCipher, deriveSubkey } from '../../lib/token-cipher.ts';
import { bundleWorkflows } from '../../lib/workflow-bundle.ts';
import { findFreePort } from '../../stack/ports.ts';
import { connectTemporal, type TemporalHandle } from '../../lib/temporal.ts';
import { batchWorkflowId } from '../../workflows/fund-batch.contract.ts';
import { settlementWorkflowId } from '../../workflows/settle-day.contract.ts';
import { NativeConnection } from '@temporalio/worker';
import { RESOLVE_DEADLINE_MS, resolveReview } from '../../reviews/resolve-review.ts';
import { resolveFundingUpdate, startFundWallet } from '../../workflows/fund-wallet.contract.ts';
import { startPartnerStack, type PartnerStack } from '../support/partner-stack.ts';
import { waitFor } from '../support/wait-for.ts';

let stack: PartnerStack;
/** The build without fundWallet, bundled while the stack starts (webpack takes seconds; the stack waits on I/O too). */
let withoutFundWallet: Promise<string>;

beforeAll(async () => {
  withoutFundWallet = bundleWorkflows({
    warnings: false,
    workflowsPath: path.resolve(import.meta.dirname, '../support/workflows-without-fund-wallet.ts'),
  });
  // Awaited by its test; a failure here is that test's, not an unhandled rejection.
  withoutFundWallet.catch(() => undefined);
  // No worker of today's build: each test says which build, if any, serves the stack's task queue.
  stack = await startPartnerStack();
});
afterAll(async () => {
  await stack?.close();
});

interface Answer {
  status: number;
  retryAfter: string | null;
  body: { code?: string; detail?: string; fundingId?: string; status?: string; batchId?: string; state?: string };
}

async function send(
  fetcher: (path: string, init?: RequestInit) => Promise<Response>,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<Answer> {
  const response = await fetcher(path, {
    method,
    headers: { 'content-type': 'application/json', ...headers },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return {
    status: response.status,
    retryAfter: response.headers.get('retry-after'),
    body: (await response.json()) as Answer['body'],
  };
}

interface ApiOn {
  fetch: (path: string, init?: RequestInit) => Promise<Response>;
  close(): Promise<void>;
}

/** An API on the stack's database, keys and sandbox whose Temporal client is `temporal`: its ops fetch. */
async function apiOn(temporal: Client): Promise<ApiOn> {
  const app = createApp({
    logger: createLogger({ level: 'silent' }),
    hardening: { attemptCountScope: `test-${randomBytes(6).toString('hex')}` },
    readiness: { postgres: async () => {}, temporal: async () => {}, walletService: async () => {} },
    services: {
      database: stack.database,
      refreshPool: stack.refreshPool,
      tokens: stack.tokens,
      cipher: createTokenCipher(stack.encryptionKey),
      fingerprintKey: deriveSubkey(stack.encryptionKey, 'funding-fingerprint'),
      wallet: stack.wallet,
      temporal,
      taskQueue: stack.taskQueue,
      onboarding: stack.onboarding,
      opsApiKeys: [stack.opsKey],
    },
  });
  const server = createServer(app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    fetch: (path, init = {}) =>
      fetch(`${base}${path}`, {
        ...init,
        headers: { authorization: `Bearer ${stack.opsKey}`, ...(init.headers ?? {}) },
      }),
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** A cash-in code of a fresh sandbox user. */
async function cashInCode(): Promise<string> {
  const user = await stack.admin.createUser({ kycLevel: 'KYC1', balance: '0.00' });
  return (await stack.admin.cashInCode(user.userId)).code;
}

/** A funding of `value` PHP to a fresh cash-in code, accepted (202) through the stack's API: its id. */
async function startedFunding(value: string): Promise<string> {
  const started = await send(
    stack.opsFetch,
    'POST',
    '/ops/fundings',
    { recipient: { type: 'CODE', code: await cashInCode() }, amount: { currency: 'PHP', value } },
    { 'idempotency-key': randomUUID() },
  );
  expect(started.status).toBe(202);
  return started.body.fundingId!;
}

/** The funding waits for a person, as one whose execute's outcome stayed unknown does. */
async function parkInReview(fundingId: string): Promise<void> {
  await stack.database.funding.update({
    where: { id: fundingId },
    data: {
      status: 'NEEDS_REVIEW',
      transferId: `t-${randomUUID()}`,
      reviewReason: 'the execute’s outcome stayed unknown',
    },
  });
}

/** The ledger's transactions of a funding, by kind: its hold, and a post or release once settled. */
async function ledgerKinds(fundingId: string): Promise<string[]> {
  return (
    await stack.database.ledgerTransaction.findMany({
      where: { fundingId },
      orderBy: { id: 'asc' },
      select: { kind: true },
    })
  ).map((row) => row.kind);
}

describe('a funding in review whose run no worker takes up (workers stopped)', () => {
  it('answers POST /ops/fundings/{id}/resolve 503 WORKFLOW_UNAVAILABLE (timed out) with Retry-After, within its deadline, and changes nothing', async () => {
    // No worker polls the stack's task queue yet: the funding's run waits for one.
    const fundingId = await startedFunding('6.00');
    await parkInReview(fundingId);
    // Before: the client asked Temporal again for ever (the update admitted, never accepted), and the request hung
    // until its client gave up.
    const resolved = await send(
      (route, init) => stack.opsFetch(route, { ...init, signal: AbortSignal.timeout(RESOLVE_DEADLINE_MS + 20_000) }),
      'POST',
      `/ops/fundings/${fundingId}/resolve`,
      { outcome: 'FAILED', note: 'the operator shows nothing executed' },
    );
    expect(resolved.status, JSON.stringify(resolved.body)).toBe(503);
    expect(resolved.body.code).toBe('WORKFLOW_UNAVAILABLE');
    expect(Number(resolved.retryAfter)).toBeGreaterThanOrEqual(1);
    expect(resolved.body.detail).toMatch(/did not answer in time/);
    expect(await stack.database.funding.findUniqueOrThrow({ where: { id: fundingId } })).toMatchObject({
      status: 'NEEDS_REVIEW',
      resolvedOutcome: null,
    });
    expect(await ledgerKinds(fundingId)).toEqual(['HOLD']);
  }, 60_000);
});

describe('a resolution through the worker’s own connection (the sweep’s), whose run no worker takes up', () => {
  it('is a time-out refusal, not an error: past the deadline the native connection answers CANCELLED', async () => {
    const connection = await NativeConnection.connect({ address: inject('temporalAddress') });
    try {
      const client = new Client({ connection, namespace: inject('temporalNamespace') });
      // A run on a task queue nobody polls: an update to it is admitted, never accepted.
      const workflowId = `no-worker-${randomUUID()}`;
      await startFundWallet(client, {
        taskQueue: `nobody-polls-${randomUUID()}`,
        workflowId,
        fundingId: randomUUID(),
        status: 'NEEDS_REVIEW',
        recipientType: 'CODE',
        reusePolicy: 'reject-duplicate',
      });
      try {
        let waitingChecks = 0;
        const result = await resolveReview(
          client,
          workflowId,
          resolveFundingUpdate,
          [{ outcome: 'FAILED', note: 'a test', resolvedBy: 'test', code: null, requestReferenceNo: null }],
          {
            stillWaiting: async () => {
              waitingChecks += 1;
              return true;
            },
            resolveWithoutWorkflow: async () => true,
          },
          500,
        );
        // Before: WorkflowUpdateRPCTimeoutOrCancelledError thrown (its cause CANCELLED, which no refusal maps), and the
        // sweep's attempt failed with it.
        expect(result).toMatchObject({ kind: 'workflow-unavailable', refusal: { reason: 'timed-out' } });
        expect(waitingChecks).toBe(1);
      } finally {
        await client.workflow.getHandle(workflowId).terminate();
      }
    } finally {
      await connection.close();
    }
  });
});

describe('a funding in review whose workflow task is failing (a build that cannot run its run)', () => {
  let worker: Awaited<ReturnType<PartnerStack['createWorker']>> | undefined;
  afterAll(async () => {
    if (!worker) return;
    worker.worker.shutdown();
    await worker.done;
    await worker.connection.close();
    await worker.wallet.close();
  });

  it('answers POST /ops/fundings/{id}/resolve 503 WORKFLOW_UNAVAILABLE with Retry-After, and changes nothing', async () => {
    // The stack's deployment's current build has no fundWallet: every task of a funding's run fails.
    const code = await withoutFundWallet;
    worker = await stack.createWorker({ workflowBundle: { code }, promote: 'always' });
    const fundingId = await startedFunding('7.00');
    const { workflowId } = await stack.database.funding.findUniqueOrThrow({
      where: { id: fundingId },
      select: { workflowId: true },
    });
    // Its run is open with its workflow task failing, as after a deploy whose build cannot replay it.
    await waitFor(
      'the run’s workflow task failing',
      async () => {
        const attempt =
          (await stack.temporal.workflow.getHandle(workflowId).describe()).raw.pendingWorkflowTask?.attempt ?? 0;
        return attempt >= 2 ? attempt : undefined;
      },
      60_000,
    );
    await parkInReview(fundingId);
    const eventsBefore = await stack.database.fundingEvent.count({ where: { fundingId } });

    const resolved = await send(stack.opsFetch, 'POST', `/ops/fundings/${fundingId}/resolve`, {
      outcome: 'FAILED',
      note: 'the operator shows nothing executed',
    });
    // Before: 500 INTERNAL (the update's FAILED_PRECONDITION thrown as it came).
    expect(resolved.status, JSON.stringify(resolved.body)).toBe(503);
    expect(resolved.body.code).toBe('WORKFLOW_UNAVAILABLE');
    expect(Number(resolved.retryAfter)).toBeGreaterThanOrEqual(1);
    expect(resolved.body.detail).toMatch(
      /nothing was changed, the funding is still NEEDS_REVIEW\. Send the same request again after Retry-After/,
    );
    expect(resolved.body.detail).toMatch(/workflow task is failing/);

    // Nothing changed: still in review, no resolution recorded, no event, the hold neither posted nor released.
    const after = await stack.database.funding.findUniqueOrThrow({ where: { id: fundingId } });
    expect(after).toMatchObject({
      status: 'NEEDS_REVIEW',
      resolvedOutcome: null,
      resolvedBy: null,
      resolvedNote: null,
      resolvedAt: null,
    });
    expect(await stack.database.fundingEvent.count({ where: { fundingId } })).toBe(eventsBefore);
    expect(await ledgerKinds(fundingId)).toEqual(['HOLD']);
    const view = await send(stack.opsFetch, 'GET', `/ops/fundings/${fundingId}`);
    expect(view.body.status).toBe('NEEDS_REVIEW');
  }, 120_000);
});

describe('an API whose Temporal cannot be reached', () => {
  let api: ApiOn;
  let connection: Connection;
  /** The unreachable API's ops fetch: the stack's database, keys and sandbox, a Temporal client on a closed port. */
  let unreachableFetch: (path: string, init?: RequestInit) => Promise<Response>;

  beforeAll(async () => {
    // As api/main.ts connects (lib/temporal.ts): lazily, so the API starts; every call then fails UNAVAILABLE after
    // the client's own retries. Three attempts here, not the client's default ten (about 20 s of backoff for each
    // call): what is proved is the answer to an UNAVAILABLE that came after retries, not how long they last.
    connection = Connection.lazy({
      address: `127.0.0.1:${await findFreePort()}`,
      interceptors: [makeGrpcRetryInterceptor(defaultGrpcRetryOptions({ maxAttempts: 3 }))],
    });
    api = await apiOn(new Client({ connection, namespace: stack.temporalNamespace }));
    unreachableFetch = api.fetch;
  });
  afterAll(async () => {
    await api?.close();
    await connection?.close();
  });

  it('POST /ops/fundings: 503 WORKFLOW_UNAVAILABLE; the funding stored whole with its hold, and the same request with its key, once Temporal answers, finds it and starts it', async () => {
    const key = randomUUID();
    const body = { recipient: { type: 'CODE', code: await cashInCode() }, amount: { currency: 'PHP', value: '5.25' } };
    const refused = await send(unreachableFetch, 'POST', '/ops/fundings', body, { 'idempotency-key': key });
    // Before: 500 INTERNAL, the funding stored with its hold all the same.
    expect(refused.status, JSON.stringify(refused.body)).toBe(503);
    expect(refused.body.code).toBe('WORKFLOW_UNAVAILABLE');
    expect(Number(refused.retryAfter)).toBeGreaterThanOrEqual(1);
    const stored = await stack.database.funding.findUniqueOrThrow({ where: { idempotencyKey: key } });
    // The words are true: it names the funding, says it is stored with its hold and has not started, and how to go on.
    expect(refused.body.detail).toContain(`the funding ${stored.id} is stored, with its hold`);
    expect(refused.body.detail).toMatch(
      /it has not started\. Send the same request with the same Idempotency-Key again after Retry-After/,
    );
    // Whole, not half: the funding, its PENDING event and its hold; no workflow.
    expect(stored.status).toBe('PENDING');
    expect(await stack.database.fundingEvent.count({ where: { fundingId: stored.id } })).toBeGreaterThanOrEqual(1);
    expect(await ledgerKinds(stored.id)).toEqual(['HOLD']);
    await expect(stack.temporal.workflow.getHandle(stored.workflowId).describe()).rejects.toThrow(/not found/i);

    // The same request with the same key, to an API whose Temporal answers: the same funding (200), its workflow
    // started.
    const retried = await send(stack.opsFetch, 'POST', '/ops/fundings', body, { 'idempotency-key': key });
    expect(retried.status, JSON.stringify(retried.body)).toBe(200);
    expect(retried.body.fundingId).toBe(stored.id);
    expect((await stack.temporal.workflow.getHandle(stored.workflowId).describe()).status.name).toBe('RUNNING');
    expect(await stack.database.funding.count({ where: { idempotencyKey: key } })).toBe(1);
    expect(await ledgerKinds(stored.id)).toEqual(['HOLD']);
  }, 60_000);

  it('POST /ops/fundings/{id}/cancel: cancelled in the database, its hold released, though its workflow could not be told (200, never 500)', async () => {
    // Started where Temporal answers (its run waits: no build of the stack runs fundWallet), cancelled where it does
    // not.
    const id = await startedFunding('3.00');
    const cancelled = await send(unreachableFetch, 'POST', `/ops/fundings/${id}/cancel`);
    expect(cancelled.status, JSON.stringify(cancelled.body)).toBe(200);
    expect(cancelled.body.status).toBe('FAILED');
    expect(await stack.database.funding.findUniqueOrThrow({ where: { id } })).toMatchObject({
      status: 'FAILED',
      errorCode: 'CANCELLED',
    });
    expect(await ledgerKinds(id)).toEqual(['HOLD', 'RELEASE']);
  }, 60_000);

  it('POST /ops/funding-batches: 503 WORKFLOW_UNAVAILABLE; the batch stored whole, RUNNING and held, and the same request with its key starts its runner', async () => {
    const key = randomUUID();
    const body = {
      name: 'temporal down',
      items: [
        {
          reference: 'a',
          recipient: { type: 'CODE', code: await cashInCode() },
          amount: { currency: 'PHP', value: '2.00' },
        },
      ],
    };
    const refused = await send(unreachableFetch, 'POST', '/ops/funding-batches', body, { 'idempotency-key': key });
    expect(refused.status, JSON.stringify(refused.body)).toBe(503);
    expect(refused.body.code).toBe('WORKFLOW_UNAVAILABLE');
    expect(Number(refused.retryAfter)).toBeGreaterThanOrEqual(1);
    const batch = await stack.database.fundingBatch.findUniqueOrThrow({ where: { idempotencyKey: key } });
    expect(refused.body.detail).toContain(
      `the batch ${batch.id} is stored with its total held, RUNNING, but its runner could not be started`,
    );
    expect(batch.state).toBe('RUNNING');
    expect(await stack.database.funding.count({ where: { batchId: batch.id } })).toBe(1);
    await expect(stack.temporal.workflow.getHandle(batchWorkflowId(batch.id)).describe()).rejects.toThrow(/not found/i);

    // Before, the same key answered 200 and left the runner to the sweep; now it starts it.
    const retried = await send(stack.opsFetch, 'POST', '/ops/funding-batches', body, { 'idempotency-key': key });
    expect(retried.status, JSON.stringify(retried.body)).toBe(200);
    expect(retried.body.batchId).toBe(batch.id);
    await expect(stack.temporal.workflow.getHandle(batchWorkflowId(batch.id)).describe()).resolves.toBeDefined();
  }, 60_000);

  it('GET /ops/settlements/{date}: 503 WORKFLOW_UNAVAILABLE, the day’s run recorded; the next GET, once Temporal answers, starts that run', async () => {
    // A past day no run of this database has settled (other files share it).
    const date = new Date(
      Date.UTC(
        1971 + Math.floor(Math.random() * 25),
        Math.floor(Math.random() * 12),
        1 + Math.floor(Math.random() * 28),
      ),
    )
      .toISOString()
      .slice(0, 10);
    const runsOf = () =>
      stack.database.$queryRaw<
        Array<{ id: string; state: string }>
      >`SELECT id::text AS id, state::text AS state FROM settlement_run WHERE date = ${date} ORDER BY number`;
    expect(await runsOf()).toEqual([]);
    const refused = await send(unreachableFetch, 'GET', `/ops/settlements/${date}`);
    // Before: 500 INTERNAL.
    expect(refused.status, JSON.stringify(refused.body)).toBe(503);
    expect(refused.body.code).toBe('WORKFLOW_UNAVAILABLE');
    expect(Number(refused.retryAfter)).toBeGreaterThanOrEqual(1);
    expect(refused.body.detail).toContain(
      `the settlement run of ${date} is recorded, but its workflow could not be started`,
    );
    const [run, ...more] = await runsOf();
    expect(more).toEqual([]);
    expect(run?.state).toBe('RUNNING');
    await expect(stack.temporal.workflow.getHandle(settlementWorkflowId(date, run!.id)).describe()).rejects.toThrow(
      /not found/i,
    );

    // The same request where Temporal answers: that run, its workflow started (no build of the stack runs it: 202,
    // under way).
    const again = await send(stack.opsFetch, 'GET', `/ops/settlements/${date}`);
    expect(again.status, JSON.stringify(again.body)).toBe(202);
    expect((again.body as { runId?: string }).runId).toBe(run!.id);
    await expect(
      stack.temporal.workflow.getHandle(settlementWorkflowId(date, run!.id)).describe(),
    ).resolves.toBeDefined();
  }, 60_000);
});

describe('an API whose Temporal takes calls and never answers them (a stuck frontend or proxy)', () => {
  let api: ApiOn;
  let temporal: TemporalHandle;
  let frontend: Http2Server;

  beforeAll(async () => {
    // A gRPC peer that answers the client's first call (GetSystemInfo, an empty answer is a whole one) and then takes
    // every call and never answers it.
    frontend = createHttp2Server();
    frontend.on('stream', (stream, headers) => {
      stream.on('error', () => undefined);
      if (!String(headers[':path']).endsWith('/GetSystemInfo')) return;
      stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
      stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
      stream.end(Buffer.alloc(5));
    });
    await new Promise<void>((resolve) => frontend.listen(0, '127.0.0.1', resolve));
    // As api/main.ts connects, with a shorter bound than CALL_DEADLINE_MS: what is proved is that there is one.
    temporal = connectTemporal(
      `127.0.0.1:${(frontend.address() as AddressInfo).port}`,
      stack.temporalNamespace,
      undefined,
      undefined,
      undefined,
      2_000,
    );
    api = await apiOn(temporal.client);
  });
  afterAll(async () => {
    await api?.close();
    await temporal?.close();
    await new Promise((resolve) => frontend?.close(resolve));
  });

  it('POST /ops/fundings: 503 WORKFLOW_UNAVAILABLE within the call’s bound, in words that do not say the start was not taken', async () => {
    const key = randomUUID();
    const body = { recipient: { type: 'CODE', code: await cashInCode() }, amount: { currency: 'PHP', value: '4.75' } };
    // Before: no answer at all (the start was waited on for ever), past this test's own time-out.
    const refused = await send(api.fetch, 'POST', '/ops/fundings', body, { 'idempotency-key': key });
    expect(refused.status, JSON.stringify(refused.body)).toBe(503);
    expect(refused.body.code).toBe('WORKFLOW_UNAVAILABLE');
    expect(Number(refused.retryAfter)).toBeGreaterThanOrEqual(1);
    const stored = await stack.database.funding.findUniqueOrThrow({ where: { idempotencyKey: key } });
    expect(refused.body.detail).toContain(`the funding ${stored.id} is stored, with its hold`);
    expect(refused.body.detail).toContain('Temporal did not answer in time');
    expect(refused.body.detail).toContain('it may have started all the same');
    expect(refused.body.detail).not.toContain('it has not started');
    expect(await ledgerKinds(stored.id)).toEqual(['HOLD']);
  }, 30_000);
});
