// The batch runner (workflows/fund-batch.ts, activities/batch.ts) on the real stack: a Temporal
// worker, PostgreSQL and the sandbox wallet. Every batch must end with each item final (or in
// review), each created transfer executed exactly once, and each item's ledger hold settled as its
// state says: posted when APPROVED, released otherwise. The runner continues as new every few
// items (its history stays bounded), pauses, resumes and cancels on the stored state, and slows
// the whole batch down when the wallet answers 429.
import { randomUUID } from 'node:crypto';
import { MockActivityEnvironment } from '@temporalio/testing';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import type { WorkflowHandle } from '@temporalio/client';
import { temporal as temporalProto, type temporal } from '@temporalio/proto';
import { createActivities } from '../../activities/index.ts';
import { createBatchRecord } from '../../fundings/batch-record.ts';
import { batchItemRows, createBatchItemsRecord, type NewBatchItem } from '../../fundings/batch-items-record.ts';
import { cashInCodeContext, createFundingRecord } from '../../fundings/funding-record.ts';
import { sha256Hex } from '../../lib/idempotency.ts';
import { createLogger } from '../../lib/logger.ts';
import { createTokenCipher } from '../../lib/token-cipher.ts';
import { checkLedgerInvariants } from '../../harness/ledger-invariants.ts';
import {
  batchProgressQuery,
  batchStateChangedSignal,
  batchWorkflowId,
  fundBatchActivityTimeouts,
  startFundBatch,
  type BatchItemsOutcome,
  type BatchRunnerProgress,
  type FundBatchResult,
} from '../../workflows/fund-batch.contract.ts';
import { fundingWorkflowId } from '../../workflows/fund-wallet.contract.ts';
import type { SweepReport } from '../../workflows/sweep.contract.ts';
import { startPartnerStack, type PartnerStack } from '../support/partner-stack.ts';
import { createEmbeddedLink } from '../support/embedded-link.ts';
import { waitFor, waitUntil } from '../support/wait-for.ts';
import { startWorkerProcess } from '../support/worker-process.ts';
import { startHttpRecorder, startTcpLink } from '../support/process-links.ts';

const temporalEnums = temporalProto.api.enums.v1;
let stack: PartnerStack;
let fundings: ReturnType<typeof createFundingRecord>;
let batches: ReturnType<typeof createBatchRecord>;

beforeAll(async () => {
  stack = await startPartnerStack();
  const records = { database: stack.database, cipher: createTokenCipher(stack.encryptionKey) };
  fundings = createFundingRecord(records);
  batches = createBatchRecord({ database: stack.database, fundings, batchItems: createBatchItemsRecord(records) });
  await stack.startWorker();
});
afterEach(async () => {
  await stack.admin.clearFaults();
});
afterAll(async () => {
  await stack.close();
});

/**
 * A RUNNING batch (or one AWAITING_APPROVAL) of `count` items from the TREASURY, each to a fresh cash-in code, stored
 * as the API stores one.
 */
async function runningBatch(
  count: number,
  options: { needsApproval?: boolean; recipient?: (userId: string) => void } = {},
): Promise<string> {
  const batchId = randomUUID();
  const user = await stack.admin.createUser({ kycLevel: 'KYC1', balance: '0.00' });
  options.recipient?.(user.userId);
  const items: NewBatchItem[] = [];
  for (let index = 1; index <= count; index += 1) {
    const { code } = await stack.admin.cashInCode(user.userId);
    const reference = `item-${index}`;
    const idempotencyKey = `batch:${batchId}:${reference}`;
    // 1.01, 1.02, …: each item's amount tells it apart in the wallet's ledger.
    items.push({
      id: randomUUID(),
      idempotencyKey,
      workflowId: fundingWorkflowId(idempotencyKey, sha256Hex),
      reference,
      recipient: { type: 'CODE', code },
      amount: 1000n + BigInt(index) * 10n,
    });
  }
  const inserted = await batches.insert({
    id: batchId,
    idempotencyKey: `batch-runner-${batchId}`,
    requestFingerprint: sha256Hex(batchId),
    workflowId: batchWorkflowId(batchId),
    name: `runner test ${count}`,
    currency: 'PHP',
    items: batchItemRows(items),
    createdBy: 'ops',
    // Always waits (0), or never (null).
    approvalThreshold: options.needsApproval ? 0n : null,
  });
  expect(inserted.stored).toBe(true);
  return batchId;
}

async function startRunner(
  batchId: string,
  options: { itemsPerRun: number; maxInFlight?: number },
): Promise<WorkflowHandle> {
  await startFundBatch(stack.temporal, {
    taskQueue: stack.taskQueue,
    input: { batchId, maxInFlight: options.maxInFlight ?? 4, itemsPerRun: options.itemsPerRun },
  });
  return stack.temporal.workflow.getHandle(batchWorkflowId(batchId));
}

const resultOf = (handle: WorkflowHandle) => handle.result() as Promise<FundBatchResult>;
const progressOf = (handle: WorkflowHandle) => handle.query<BatchRunnerProgress>(batchProgressQuery);
const signal = (handle: WorkflowHandle) => handle.signal(batchStateChangedSignal);

const itemsOf = (batchId: string) =>
  stack.database.funding.findMany({
    where: { batchId },
    orderBy: { id: 'asc' },
    select: {
      id: true,
      status: true,
      errorCode: true,
      transferId: true,
      abandonedTransferIds: true,
      workflowId: true,
      createdAt: true,
    },
  });

/** How many items are in each state (a batch-cancelled item apart, as the batch view counts it). */
async function tally(batchId: string): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (const row of await fundings.batchItemTally(batchId)) counts[row.status] = row.count;
  return counts;
}

/**
 * What every batch must end with: each item final, every created transfer executed exactly once
 * (an item not started created none), no intent abandoned, and each hold settled once, by a POST
 * when APPROVED and a RELEASE otherwise; the ledger's invariants hold for the batch's fundings.
 */
async function expectSettled(batchId: string): Promise<Awaited<ReturnType<typeof itemsOf>>> {
  const rows = await itemsOf(batchId);
  const wallet = new Map((await stack.admin.ledger()).transfers.map((transfer) => [transfer.transferId, transfer]));
  for (const row of rows) {
    expect(['APPROVED', 'DECLINED', 'REJECTED', 'FAILED'], `item ${row.id}`).toContain(row.status);
    expect(row.abandonedTransferIds).toEqual([]);
    if (row.status === 'APPROVED') expect(wallet.get(row.transferId!)?.executions, `item ${row.id}`).toBe(1);
    if (row.errorCode === 'CANCELLED') expect(row.transferId).toBeNull();
  }
  const settlements = await stack.database.$queryRaw<
    Array<{ id: string; status: string; holds: bigint; settled: string[] }>
  >`
    SELECT f.id::text AS id, f.status::text AS status, COUNT(DISTINCT h.id)::bigint AS holds,
           COALESCE(array_agg(s.kind::text) FILTER (WHERE s.id IS NOT NULL), ARRAY[]::text[]) AS settled
    FROM funding f
    LEFT JOIN ledger_transaction h ON h.funding_id = f.id AND h.kind = 'HOLD'
    LEFT JOIN ledger_transaction s ON s.settles_id = h.id
    WHERE f.batch_id = ${batchId}::uuid GROUP BY f.id, f.status`;
  expect(settlements).toHaveLength(rows.length);
  for (const row of settlements) {
    expect(Number(row.holds), `hold of ${row.id}`).toBe(1);
    expect(row.settled, `settlement of ${row.id} (${row.status})`).toEqual([
      row.status === 'APPROVED' ? 'POST' : 'RELEASE',
    ]);
  }
  const ids = new Set(rows.map((row) => row.id));
  const report = await checkLedgerInvariants(stack.database);
  expect(report.violations.filter((violation) => [...ids].some((id) => violation.includes(id)))).toEqual([]);
  return rows;
}

/** The runs of a workflow, newest first: each one's event count, walking back through continue-as-new. */
async function runsOf(
  workflowId: string,
): Promise<Array<{ runId: string; events: number; lastEvent: 'completed' | 'continued-as-new' | 'other' }>> {
  const runs: Array<{ runId: string; events: number; lastEvent: 'completed' | 'continued-as-new' | 'other' }> = [];
  let runId: string | undefined = (await stack.temporal.workflow.getHandle(workflowId).describe()).runId;
  while (runId) {
    const history: temporal.api.history.v1.IHistory = await stack.temporal.workflow
      .getHandle(workflowId, runId)
      .fetchHistory();
    const events: temporal.api.history.v1.IHistoryEvent[] = history.events ?? [];
    const last = events.at(-1);
    const lastEvent = last?.workflowExecutionCompletedEventAttributes
      ? 'completed'
      : last?.workflowExecutionContinuedAsNewEventAttributes
        ? 'continued-as-new'
        : 'other';
    runs.push({ runId, events: events.length, lastEvent });
    runId = events[0]?.workflowExecutionStartedEventAttributes?.continuedExecutionRunId ?? undefined;
  }
  return runs;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('the batch runner', () => {
  it('runs every item once, continuing as new every few items with a short history per run', async () => {
    const batchId = await runningBatch(20);
    const handle = await startRunner(batchId, { itemsPerRun: 5 });
    expect(await resultOf(handle)).toEqual({ state: 'COMPLETED' });

    const rows = await expectSettled(batchId);
    expect(rows.map((row) => row.status)).toEqual(Array(20).fill('APPROVED'));
    expect(new Set(rows.map((row) => row.transferId)).size).toBe(20);
    const batch = (await batches.find(batchId))!;
    expect(batch.state).toBe('COMPLETED');
    expect(batch.completedAt).toBeInstanceOf(Date);
    expect((await batches.view(batch)).counts).toEqual({ APPROVED: 20 });

    // 20 items at 5 a run: at least 4 runs, each but the last continued as new; none grows with
    // the batch (a run holds its 5 items, a few reads and its workflow tasks).
    const runs = await runsOf(batchWorkflowId(batchId));
    expect(runs.length).toBeGreaterThanOrEqual(4);
    expect(runs[0]!.lastEvent).toBe('completed');
    for (const run of runs.slice(1)) expect(run.lastEvent).toBe('continued-as-new');
    for (const run of runs) expect(run.events, `run ${run.runId}`).toBeLessThan(120);
    // The pass finished every item itself: no item needed its own workflow.
    for (const row of rows)
      await expect(stack.temporal.workflow.getHandle(row.workflowId).describe()).rejects.toThrow();
  });

  it('runs a batch of TOKEN and CODE items whose first item is TOKEN: every cash-in code stored readable, every item APPROVED', async () => {
    const batchId = randomUUID();
    const codeUser = await stack.admin.createUser({ kycLevel: 'KYC1', balance: '0.00' });
    const items: NewBatchItem[] = [];
    for (let index = 1; index <= 6; index += 1) {
      const reference = `mixed-${index}`;
      const idempotencyKey = `batch:${batchId}:${reference}`;
      // TOKEN, CODE, TOKEN, CODE, …: the first item has no cash-in code.
      const recipient: NewBatchItem['recipient'] =
        index % 2 === 1
          ? { type: 'TOKEN', linkId: (await createEmbeddedLink(stack, { kycLevel: 'KYC1', balance: '0.00' })).linkId }
          : { type: 'CODE', code: (await stack.admin.cashInCode(codeUser.userId)).code };
      items.push({
        id: randomUUID(),
        idempotencyKey,
        workflowId: fundingWorkflowId(idempotencyKey, sha256Hex),
        reference,
        recipient,
        amount: 1000n + BigInt(index) * 10n,
      });
    }
    expect(
      await batches.insert({
        id: batchId,
        idempotencyKey: `mixed-${batchId}`,
        requestFingerprint: sha256Hex(batchId),
        workflowId: batchWorkflowId(batchId),
        name: 'mixed',
        currency: 'PHP',
        items: batchItemRows(items),
        createdBy: 'ops',
        approvalThreshold: null,
      }),
    ).toEqual({ stored: true, needsApproval: false });
    for (const item of items) {
      if (item.recipient.type !== 'CODE') continue;
      expect(fundings.cashInCodeOf(await fundings.get(item.id)), item.reference).toBe(item.recipient.code);
    }
    const handle = await startRunner(batchId, { itemsPerRun: 100, maxInFlight: 8 });
    expect(await resultOf(handle)).toEqual({ state: 'COMPLETED' });
    const rows = await expectSettled(batchId);
    expect(rows.map((row) => row.status)).toEqual(Array(6).fill('APPROVED'));
  });

  it('pauses (no new item starts) and resumes to completion', async () => {
    const batchId = await runningBatch(12);
    // Each item takes a while: the pause lands with items left.
    await stack.admin.setFaults([{ endpoint: 'transfers.execute', mode: 'latency', rate: 1, delayMs: 400 }]);
    const handle = await startRunner(batchId, { itemsPerRun: 50, maxInFlight: 2 });
    await waitUntil(
      () => tally(batchId),
      (counts) => (counts.APPROVED ?? 0) >= 2,
      30_000,
    );

    expect(await batches.move(batchId, 'PAUSED', { field: 'pausedBy', name: 'ops' })).toBe(true);
    await signal(handle);
    // The runner heard it and the items under way finished.
    await waitUntil(
      () => progressOf(handle),
      (progress) => progress.state === 'PAUSED' && progress.running === 0,
      30_000,
    );
    const paused = await tally(batchId);
    expect(paused.PENDING ?? 0).toBeGreaterThan(0);
    expect(paused.CREATING ?? 0).toBe(0);
    expect(paused.EXECUTING ?? 0).toBe(0);
    await sleep(2500);
    expect(await tally(batchId)).toEqual(paused);
    expect((await batches.find(batchId))!.pausedBy).toBe('ops');

    expect(await batches.move(batchId, 'RUNNING')).toBe(true);
    await signal(handle);
    expect(await resultOf(handle)).toEqual({ state: 'COMPLETED' });
    const rows = await expectSettled(batchId);
    expect(rows.map((row) => row.status)).toEqual(Array(12).fill('APPROVED'));
  });

  it('cancelled midway: started items finish, the others are cancelled with their holds released', async () => {
    const batchId = await runningBatch(14);
    await stack.admin.setFaults([{ endpoint: 'transfers.execute', mode: 'latency', rate: 1, delayMs: 400 }]);
    const handle = await startRunner(batchId, { itemsPerRun: 50, maxInFlight: 2 });
    await waitUntil(
      () => tally(batchId),
      (counts) => (counts.APPROVED ?? 0) >= 2,
      30_000,
    );

    // The batch and its items not started end together (one transaction).
    expect(await batches.move(batchId, 'CANCELLED', { field: 'cancelledBy', name: 'ops' })).toBe(true);
    await signal(handle);
    expect(await resultOf(handle)).toEqual({ state: 'CANCELLED' });
    expect((await tally(batchId)).CANCELLED).toBeGreaterThan(0);

    const rows = await expectSettled(batchId);
    const approved = rows.filter((row) => row.status === 'APPROVED');
    const notStarted = rows.filter((row) => row.status === 'FAILED' && row.errorCode === 'CANCELLED');
    expect(approved.length).toBeGreaterThanOrEqual(2);
    expect(notStarted.length).toBeGreaterThan(0);
    expect(approved.length + notStarted.length).toBe(14);
    const batch = (await batches.find(batchId))!;
    expect(batch).toMatchObject({ state: 'CANCELLED', cancelledBy: 'ops' });
    expect(batch.completedAt).toBeInstanceOf(Date);
    // Nothing more starts after the end: the counts stay.
    const ended = await tally(batchId);
    await sleep(1500);
    expect(await tally(batchId)).toEqual(ended);
  });

  it("slows the whole batch down on the wallet's 429 and still runs every item exactly once", async () => {
    const batchId = await runningBatch(16);
    const since = new Date();
    await stack.admin.setFaults(
      [{ endpoint: 'transfers.create', mode: 'rate-limited', rate: 0.4, retryAfterSeconds: 1 }],
      7,
    );
    const handle = await startRunner(batchId, { itemsPerRun: 100, maxInFlight: 4 });
    expect(await resultOf(handle)).toEqual({ state: 'COMPLETED' });

    const rows = await expectSettled(batchId);
    expect(rows.map((row) => row.status)).toEqual(Array(16).fill('APPROVED'));
    const refused = await stack.database.walletCall.count({
      where: { startedAt: { gte: since }, operation: 'transfers.create', httpStatus: 429 },
    });
    expect(refused).toBeGreaterThan(0);
    // The runner halved its rate at least once (one run: the query answers for all of it).
    const progress = await progressOf(handle);
    expect(progress.slowDowns).toBeGreaterThanOrEqual(1);
    expect(progress.inFlight).toBeLessThanOrEqual(4);
    // The items refused in their pass went to their own workflows, which created and executed them.
    const handedOver = [];
    for (const row of rows) {
      const description = await stack.temporal.workflow
        .getHandle(row.workflowId)
        .describe()
        .catch(() => null);
      if (description) handedOver.push(description.status.name);
    }
    expect(handedOver.length).toBeGreaterThanOrEqual(1);
    expect(new Set(handedOver)).toEqual(new Set(['COMPLETED']));
  });

  it('does not slow down for a create that failed otherwise (503 before any effect): those items alone go to their workflows', async () => {
    const batchId = await runningBatch(16);
    const since = new Date();
    await stack.admin.setFaults([{ endpoint: 'transfers.create', mode: 'error-before-effect', rate: 0.4 }], 7);
    const handle = await startRunner(batchId, { itemsPerRun: 100, maxInFlight: 4 });
    expect(await resultOf(handle)).toEqual({ state: 'COMPLETED' });
    const rows = await expectSettled(batchId);
    expect(rows.map((row) => row.status)).toEqual(Array(16).fill('APPROVED'));
    expect(
      await stack.database.walletCall.count({
        where: { startedAt: { gte: since }, operation: 'transfers.create', httpStatus: 503 },
      }),
    ).toBeGreaterThan(0);
    // Full speed throughout: no halving, nothing waited for.
    expect(await progressOf(handle)).toMatchObject({ slowDowns: 0, inFlight: 4 });
  });

  it('hands an item whose execute outcome is unknown to its own workflow, and completes once that one finished it', async () => {
    const batchId = await runningBatch(3);
    await stack.admin.setFaults([{ endpoint: 'transfers.execute', mode: 'error-after-effect', rate: 1 }]);
    const handle = await startRunner(batchId, { itemsPerRun: 50 });
    expect(await resultOf(handle)).toEqual({ state: 'COMPLETED' });

    // Each item's own workflow retrieved the transfer (executed once, by the pass) and approved it.
    const rows = await expectSettled(batchId);
    expect(rows.map((row) => row.status)).toEqual(Array(3).fill('APPROVED'));
    for (const row of rows)
      expect((await stack.temporal.workflow.getHandle(row.workflowId).describe()).status.name).toBe('COMPLETED');
  });
});

describe('a chunk run again (a retried runBatchItems)', () => {
  const activitiesOf = () =>
    createActivities({
      database: stack.database,
      refreshPool: stack.refreshPool,
      wallet: stack.wallet,
      cipher: createTokenCipher(stack.encryptionKey),
      logger: createLogger({ level: 'silent' }),
      temporal: stack.temporal,
      taskQueue: stack.taskQueue,
    });
  const runItems = (
    activities: ReturnType<typeof activitiesOf>,
    batchId: string,
    fundingIds: string[],
    attempt: number,
  ): Promise<BatchItemsOutcome> =>
    new MockActivityEnvironment({ attempt, startToCloseTimeoutMs: fundBatchActivityTimeouts.runItemMs }).run(
      activities.runBatchItems,
      batchId,
      fundingIds,
    );

  it('finds its fundings past PENDING: no wallet call, no second execute; a final item needs no workflow', async () => {
    const activities = activitiesOf();
    const batchId = await runningBatch(2);
    const [first, second] = await itemsOf(batchId);

    expect(await runItems(activities, batchId, [first!.id], 1)).toEqual({
      finished: 1,
      handedOver: 0,
      notStarted: 0,
      slowDownMs: null,
    });
    const since = new Date();
    expect(await runItems(activities, batchId, [first!.id], 2)).toEqual({
      finished: 1,
      handedOver: 0,
      notStarted: 0,
      slowDownMs: null,
    });
    expect(
      await stack.database.walletCall.count({
        where: { startedAt: { gte: since }, operation: { in: ['transfers.create', 'transfers.execute'] } },
      }),
    ).toBe(0);
    await expect(stack.temporal.workflow.getHandle(first!.workflowId).describe()).rejects.toThrow();

    // Left RECONCILING by its pass (the execute's answer was lost): a run again hands it over,
    // and the item's workflow learns its outcome by retrieve.
    await stack.admin.setFaults([{ endpoint: 'transfers.execute', mode: 'error-after-effect', rate: 1 }]);
    expect(await runItems(activities, batchId, [second!.id], 1)).toEqual({
      finished: 0,
      handedOver: 1,
      notStarted: 0,
      slowDownMs: null,
    });
    await stack.admin.clearFaults();
    const itsWorkflow = stack.temporal.workflow.getHandle(second!.workflowId);
    const firstRun = (await itsWorkflow.describe()).runId;
    // Handed over again (or finished, if its workflow was that quick): the running one was found, none started anew.
    const again = await runItems(activities, batchId, [second!.id], 2);
    expect(again.finished + again.handedOver).toBe(1);
    expect((await itsWorkflow.describe()).runId).toBe(firstRun);
    await itsWorkflow.result();
    expect(await runItems(activities, batchId, [second!.id], 3)).toEqual({
      finished: 1,
      handedOver: 0,
      notStarted: 0,
      slowDownMs: null,
    });
    await expect(runItems(activities, randomUUID(), [second!.id], 1)).rejects.toThrow(/is not an item of batch/);

    // Both run outside a runner: the batch still counts them, and its ledger is settled.
    expect(await batches.unfinishedItems(batchId)).toBe(0);
    const rows = await expectSettled(batchId);
    expect(rows.map((row) => row.status)).toEqual(['APPROVED', 'APPROVED']);
  });

  it('runs a chunk in one pass: each item created, stored before its execute, executed once, settled and announced; a refused create ends REJECTED', async () => {
    const activities = activitiesOf();
    const batchId = await runningBatch(6);
    const items = await itemsOf(batchId);
    // The third item's wallet is not upgraded: its create is refused (M133), before any execute.
    const kyc0 = await stack.admin.createUser({ kycLevel: 'KYC0', balance: '0.00' });
    const { code } = await stack.admin.cashInCode(kyc0.userId);
    await stack.database.funding.update({
      where: { id: items[2]!.id },
      data: {
        cashInCodeEncrypted: Buffer.from(
          createTokenCipher(stack.encryptionKey).encrypt(code, cashInCodeContext(items[2]!.id)),
        ),
      },
    });
    const since = new Date();
    expect(
      await runItems(
        activities,
        batchId,
        items.map((item) => item.id),
        1,
      ),
    ).toEqual({ finished: 6, handedOver: 0, notStarted: 0, slowDownMs: null });

    const rows = await expectSettled(batchId);
    expect(rows.map((row) => row.status)).toEqual([
      'APPROVED',
      'APPROVED',
      'REJECTED',
      'APPROVED',
      'APPROVED',
      'APPROVED',
    ]);
    expect(rows[2]!.errorCode).toBe('M133');
    // The timeline each item would have had in its own pass, under one claim: created, executing, final.
    for (const row of rows) {
      const events = await stack.database.fundingEvent.findMany({
        where: { fundingId: row.id },
        orderBy: { id: 'asc' },
      });
      const fences = new Set(events.flatMap((event) => (event.fence === null ? [] : [event.fence])));
      expect(fences.size, row.id).toBe(1);
      expect(events.map((event) => event.status)).toEqual(
        row.status === 'APPROVED'
          ? ['PENDING', 'CREATING', 'EXECUTING', 'APPROVED']
          : ['PENDING', 'CREATING', 'REJECTED'],
      );
    }
    // Each executed transfer executed once; its transferId stored on the funding it belongs to.
    const ledger = await stack.admin.ledger();
    for (const row of rows.filter((entry) => entry.status === 'APPROVED')) {
      expect(ledger.transfers.find((transfer) => transfer.transferId === row.transferId)?.executions).toBe(1);
    }
    expect(
      await stack.database.walletCall.count({ where: { startedAt: { gte: since }, operation: 'transfers.execute' } }),
    ).toBe(5);
    // Every final item announced once (funding.approved / funding.rejected).
    const events = await stack.database.webhookEvent.findMany({
      where: { fundingId: { in: rows.map((row) => row.id) } },
    });
    expect(events.map((event) => event.type).sort()).toEqual([
      ...Array(5).fill('funding.approved'),
      'funding.rejected',
    ]);
  });

  it('leaves an item a cancel took alone, and never executes an item whose claim another run took meanwhile', async () => {
    const activities = activitiesOf();
    const batchId = await runningBatch(3);
    const items = await itemsOf(batchId);
    // The first item: cancelled before the chunk runs (FAILED, its hold released).
    expect(await fundings.cancel(items[0]!)).toBe(true);
    // The second: taken over by another run while the chunk's creates are under way (its fence
    // raised under it), so the chunk's stored intent and move to EXECUTING are refused.
    await stack.admin.setFaults([{ endpoint: 'transfers.create', mode: 'latency', rate: 1, delayMs: 1500 }]);
    const running = runItems(
      activities,
      batchId,
      items.map((item) => item.id),
      1,
    );
    await waitUntil(
      async () => (await stack.database.funding.findUniqueOrThrow({ where: { id: items[1]!.id } })).status,
      (status) => status === 'CREATING',
      10_000,
    );
    await fundings.claim(items[1]!.id);
    expect(await running).toEqual({ finished: 2, handedOver: 1, notStarted: 0, slowDownMs: null });
    await stack.admin.clearFaults();

    const second = await stack.database.funding.findUniqueOrThrow({ where: { id: items[1]!.id } });
    await stack.temporal.workflow.getHandle(second.workflowId).result();
    const rows = await itemsOf(batchId);
    expect(rows.map((row) => [row.status, row.errorCode])).toEqual([
      ['FAILED', 'CANCELLED'],
      ['APPROVED', null],
      ['APPROVED', null],
    ]);
    // The chunk's intent for the second item is kept on record and never executed; the one its
    // own workflow created is executed once.
    const ledger = new Map((await stack.admin.ledger()).transfers.map((transfer) => [transfer.transferId, transfer]));
    const overtaken = rows[1]!;
    expect(overtaken.abandonedTransferIds).toHaveLength(1);
    expect(ledger.get(overtaken.abandonedTransferIds[0]!)?.executions ?? 0).toBe(0);
    expect(ledger.get(overtaken.transferId!)?.executions).toBe(1);
    expect(ledger.get(rows[2]!.transferId!)?.executions).toBe(1);
    expect(rows[0]!.transferId).toBeNull();
    // The ledger's books still hold: every hold settled as its item's state says.
    expect((await checkLedgerInvariants(stack.database)).violations).toEqual([]);
  });

  it('starts no item of a batch that is not RUNNING: a paused batch’s chunk leaves its items PENDING, no call, no workflow', async () => {
    const activities = activitiesOf();
    const batchId = await runningBatch(2);
    const items = await itemsOf(batchId);
    expect(await batches.move(batchId, 'PAUSED', { field: 'pausedBy', name: 'ops' })).toBe(true);
    const since = new Date();
    expect(
      await runItems(
        activities,
        batchId,
        items.map((item) => item.id),
        1,
      ),
    ).toEqual({ finished: 0, handedOver: 0, notStarted: 2, slowDownMs: null });
    expect((await itemsOf(batchId)).map((row) => row.status)).toEqual(['PENDING', 'PENDING']);
    expect(await stack.database.walletCall.count({ where: { startedAt: { gte: since } } })).toBe(0);
    for (const item of items)
      await expect(stack.temporal.workflow.getHandle(item.workflowId).describe()).rejects.toThrow();
    // Resumed, the same chunk runs them.
    expect(await batches.move(batchId, 'RUNNING', undefined, ['PAUSED'])).toBe(true);
    expect(
      await runItems(
        activities,
        batchId,
        items.map((item) => item.id),
        1,
      ),
    ).toEqual({ finished: 2, handedOver: 0, notStarted: 0, slowDownMs: null });
    await expectSettled(batchId);
  });

  it('a batch stored RUNNING whose runner never started (Temporal was away) gets one from the sweep, and completes', async () => {
    const activities = activitiesOf();
    const batchId = await runningBatch(3);
    await expect(stack.temporal.workflow.getHandle(batchWorkflowId(batchId)).describe()).rejects.toThrow();
    const report: SweepReport = await new MockActivityEnvironment().run(activities.sweepStuckFundings, {
      olderThanSeconds: 3600,
    });
    expect(report.batchRunners).toContainEqual({ batchId, state: 'RUNNING', detail: 'no runner: started' });
    expect(await resultOf(stack.temporal.workflow.getHandle(batchWorkflowId(batchId)))).toEqual({ state: 'COMPLETED' });
    await expectSettled(batchId);
    // A second sweep finds the batch ended: nothing to start.
    const again: SweepReport = await new MockActivityEnvironment().run(activities.sweepStuckFundings, {
      olderThanSeconds: 3600,
    });
    expect(again.batchRunners?.map((entry) => entry.batchId)).not.toContain(batchId);
  });

  it('keeps a PENDING item its pass did not get to (no time left) the runner’s: not handed to a workflow of its own, which would be its second owner', async () => {
    const activities = activitiesOf();
    const batchId = await runningBatch(2);
    const items = await itemsOf(batchId);
    // An attempt with less time than one wallet call: the pass starts nothing.
    const short = new MockActivityEnvironment({ attempt: 1, startToCloseTimeoutMs: 1000 });
    expect(
      await short.run(
        activities.runBatchItems,
        batchId,
        items.map((item) => item.id),
      ),
    ).toEqual({ finished: 0, handedOver: 0, notStarted: 2, slowDownMs: null });
    expect((await itemsOf(batchId)).map((row) => row.status)).toEqual(['PENDING', 'PENDING']);
    for (const item of items)
      await expect(stack.temporal.workflow.getHandle(item.workflowId).describe()).rejects.toThrow();
    // The runner dispatches them again and the batch completes.
    const handle = await startRunner(batchId, { itemsPerRun: 50 });
    expect(await resultOf(handle)).toEqual({ state: 'COMPLETED' });
    await expectSettled(batchId);
  });

  it('runs the items the chunk does not claim (a row a cancel holds) on the activity’s own clock: no call starts that could outlive the attempt', async () => {
    const activities = activitiesOf();
    const batchId = randomUUID();
    const codeUser = await stack.admin.createUser({ kycLevel: 'KYC1', balance: '0.00' });
    const codes = await Promise.all([0, 1].map(async () => (await stack.admin.cashInCode(codeUser.userId)).code));
    const { linkId } = await createEmbeddedLink(stack, { kycLevel: 'KYC1', balance: '0.00' });
    const item = (reference: string, recipient: NewBatchItem['recipient']): NewBatchItem => {
      const idempotencyKey = `batch:${batchId}:${reference}`;
      return {
        id: randomUUID(),
        idempotencyKey,
        workflowId: fundingWorkflowId(idempotencyKey, sha256Hex),
        reference,
        recipient,
        amount: 1000n,
      };
    };
    const items = [
      item('by-code', { type: 'CODE', code: codes[0]! }),
      item('by-token', { type: 'TOKEN', linkId }),
      item('held', { type: 'CODE', code: codes[1]! }),
    ];
    expect(
      await batches.insert({
        id: batchId,
        idempotencyKey: `clock-${batchId}`,
        requestFingerprint: sha256Hex(batchId),
        workflowId: batchWorkflowId(batchId),
        name: 'clock',
        currency: 'PHP',
        items: batchItemRows(items),
        createdBy: 'ops',
        approvalThreshold: null,
      }),
    ).toEqual({ stored: true, needsApproval: false });
    // Every create takes 4 s; the attempt has 1.5 s more than one wallet call needs (10 s + 2 s margin).
    await stack.admin.setFaults([{ endpoint: 'transfers.create', mode: 'latency', rate: 1, delayMs: 4000 }]);
    // Another transaction (a cancel, say) holds the third item's row for 2.5 s: the chunk skips
    // it, and its own pass takes it on once the row is free, past the last safe moment.
    let locked!: () => void;
    const lockTaken = new Promise<void>((resolve) => (locked = resolve));
    const holder = stack.database.$transaction(
      async (tx) => {
        await tx.$queryRaw`SELECT 1 FROM funding WHERE id = ${items[2]!.id}::uuid FOR UPDATE`;
        locked();
        await new Promise((resolve) => setTimeout(resolve, 2500));
      },
      { timeout: 20_000 },
    );
    await lockTaken;
    const startToCloseTimeoutMs = 13_500;
    const started = Date.now();
    await new MockActivityEnvironment({ attempt: 1, startToCloseTimeoutMs }).run(
      activities.runBatchItems,
      batchId,
      items.map((entry) => entry.id),
    );
    await holder;
    await stack.admin.clearFaults();
    const calls = await stack.database.walletCall.findMany({
      where: { startedAt: { gte: new Date(started - 1000) }, operation: { startsWith: 'transfers.' } },
    });
    expect(calls.length).toBeGreaterThanOrEqual(2);
    // Each call started while it could still end before the attempt's deadline (an item the chunk
    // did not claim, run after the chunk on a clock of its own, sent its create 4 s in: past that
    // point; so did a TOKEN item, when the chunk claimed CODE items only).
    for (const call of calls)
      expect(call.startedAt.getTime() + 10_000 + 2_000, call.operation).toBeLessThanOrEqual(
        started + startToCloseTimeoutMs + 250,
      );
  });
});

describe('the sweep beside a running batch', () => {
  it('never takes over what a live chunk owns: items older than the sweep’s age, slow executes, the sweep every second: every item APPROVED, none in review, one create each', async () => {
    const activities = createActivities({
      database: stack.database,
      refreshPool: stack.refreshPool,
      wallet: stack.wallet,
      cipher: createTokenCipher(stack.encryptionKey),
      logger: createLogger({ level: 'silent' }),
      temporal: stack.temporal,
      taskQueue: stack.taskQueue,
    });
    // Well above a chunk's beat for its items (every 2 s), as RECONCILE_AFTER_SECONDS (at least 60) is.
    const olderThanSeconds = 6;
    let userId = '';
    const batchId = await runningBatch(12, { needsApproval: true, recipient: (id) => (userId = id) });
    const items = await itemsOf(batchId);
    // The approval comes after the sweep's age: every item is "old" by the time it runs.
    await sleep(olderThanSeconds * 1000 + 500);
    // Half the executes take 4 s to be carried out (the transfer shows CREATED meanwhile; the test
    // stack's wallet time-out is 5 s).
    await stack.admin.setFaults([{ endpoint: 'transfers.execute', mode: 'latency', rate: 0.5, delayMs: 4000 }], 7);
    expect(
      await batches.move(batchId, 'RUNNING', { field: 'approvedBy', name: 'checker' }, ['AWAITING_APPROVAL']),
    ).toBe(true);
    const handle = await startRunner(batchId, { itemsPerRun: 100, maxInFlight: 4 });
    const ids = new Set(items.map((item) => item.id));
    const swept: SweepReport['items'] = [];
    let done = false;
    const result = resultOf(handle).finally(() => (done = true));
    while (!done) {
      const report: SweepReport = await new MockActivityEnvironment().run(activities.sweepStuckFundings, {
        olderThanSeconds,
      });
      swept.push(...report.items.filter((item) => ids.has(item.fundingId)));
      await sleep(1000);
    }
    expect(await result).toEqual({ state: 'COMPLETED' });
    // Not one of the batch's items was swept while its chunk ran it (one handed to its own workflow is left to it).
    expect(swept.filter((item) => item.action !== 'workflow-running' && item.action !== 'owner-active')).toEqual([]);
    const rows = await expectSettled(batchId);
    expect(rows.map((row) => row.status)).toEqual(items.map(() => 'APPROVED'));
    // One create per item: the wallet holds one transfer per item's amount, each executed once.
    const transfers = (await stack.admin.ledger()).transfers.filter((transfer) => transfer.recipientUserId === userId);
    expect(transfers).toHaveLength(items.length);
    expect(new Set(transfers.map((transfer) => transfer.amount.value)).size).toBe(items.length);
    expect(transfers.every((transfer) => transfer.executions === 1)).toBe(true);
  }, 120_000);
});

describe('a chunk whose worker froze', () => {
  it('stops once resumed after another attempt was due: the wallet receives no call from the replaced attempt', async () => {
    await stack.stopWorker();
    // The frozen worker's wallet calls pass through a recorder, and its Temporal connection through a link the test can
    // cut.
    const walletRecorder = await startHttpRecorder(new URL(stack.sandbox.url).origin);
    const temporalLink = await startTcpLink(inject('temporalAddress'));
    const env = stack.workerEnv();
    const viaRecorder = (url: string | undefined) => `${walletRecorder.origin}${new URL(url!).pathname}`;
    // Its wallet calls may take up to 18 s (the longest WALLET_TIMEOUT_MS there is): none of them times out while it is
    // frozen.
    const child = startWorkerProcess({
      ...env,
      LOG_LEVEL: 'info',
      WALLET_TIMEOUT_MS: '18000',
      TEMPORAL_ADDRESS: temporalLink.address,
      TRANSFER_URL: viaRecorder(env.TRANSFER_URL),
      CONNECT_URL: viaRecorder(env.CONNECT_URL),
      OP_URL: viaRecorder(env.OP_URL),
    });
    try {
      await waitFor(
        'the worker process polling',
        () => (child.output().includes('worker polling') ? true : undefined),
        90_000,
        () => child.output().slice(-3000),
      );
      // Its creates take 12 s: the worker is frozen while the chunk waits on them, and their
      // answers come as it resumes (from here on, a replaced chunk would store and execute them).
      await stack.admin.setFaults([{ endpoint: 'transfers.create', mode: 'latency', rate: 1, delayMs: 12_000 }]);
      const batchId = await runningBatch(3);
      const handle = await startRunner(batchId, { itemsPerRun: 100, maxInFlight: 4 });
      // Frozen once the wallet has every create (a request still on its way out of the process when
      // it stops arrives when it resumes: it was sent while the attempt was current).
      const creates = () =>
        walletRecorder.calls().filter((call) => call.method === 'POST' && call.path === '/v1/transfers').length;
      await waitFor(
        'the chunk’s three creates at the wallet',
        () => (creates() === 3 ? true : undefined),
        60_000,
        () => JSON.stringify(walletRecorder.calls()),
      );
      child.freeze();
      // Frozen past the heartbeat time-out: Temporal gives the chunk to another attempt.
      await waitFor(
        'the chunk’s next attempt due',
        async () =>
          ((await handle.describe()).raw.pendingActivities ?? []).some((activity) => (activity.attempt ?? 1) > 1) ||
          undefined,
        60_000,
      );
      await stack.admin.clearFaults();
      // Cut off from Temporal, the frozen process can only go on with what it was doing: the replaced attempt.
      await temporalLink.sever();
      const resumedAt = Date.now();
      child.resume();
      await sleep(8000);
      expect(walletRecorder.calls().filter((call) => call.at >= resumedAt)).toEqual([]);

      // Another worker takes the chunk over; each item ends once, by its one owner at a time.
      await stack.startWorker();
      expect(await resultOf(handle)).toEqual({ state: 'COMPLETED' });
      expect(walletRecorder.calls().filter((call) => call.at >= resumedAt)).toEqual([]);
      const rows = await itemsOf(batchId);
      const wallet = new Map((await stack.admin.ledger()).transfers.map((transfer) => [transfer.transferId, transfer]));
      for (const row of rows) {
        expect(row.status).toBe('APPROVED');
        expect(wallet.get(row.transferId!)?.executions).toBe(1);
        // What the replaced attempt created is kept on record, never executed.
        for (const abandoned of row.abandonedTransferIds) expect(wallet.get(abandoned)?.executions ?? 0).toBe(0);
      }
    } finally {
      await child.stop('SIGKILL');
      await walletRecorder.close();
    }
  }, 240_000);
});

describe('a chunk whose worker died', () => {
  it('is tried again after its heartbeat time-out, not its start-to-close: the items end on another worker, each executed once', async () => {
    // The chunk runs on a worker process of its own, the only one polling.
    await stack.stopWorker();
    const child = startWorkerProcess({ ...stack.workerEnv(), LOG_LEVEL: 'info' });
    try {
      await waitFor(
        'the worker process polling',
        () => (child.output().includes('worker polling') ? true : undefined),
        90_000,
        () => child.output().slice(-3000),
      );
      // Its creates take 5 s: the worker dies while the chunk waits on them.
      await stack.admin.setFaults([{ endpoint: 'transfers.create', mode: 'latency', rate: 1, delayMs: 5000 }]);
      const batchId = await runningBatch(3);
      const handle = await startRunner(batchId, { itemsPerRun: 100, maxInFlight: 4 });
      await waitUntil(
        () => tally(batchId),
        (counts) => (counts.CREATING ?? 0) > 0,
        60_000,
      );
      await child.stop('SIGKILL');
      await stack.admin.clearFaults();
      await stack.startWorker();

      expect(await resultOf(handle)).toEqual({ state: 'COMPLETED' });
      // The attempt that finished the chunk came once the dead one's heartbeat stopped, not after
      // the attempt's whole start-to-close (150 s of items waiting on a dead worker).
      const history = await handle.fetchHistory();
      // The chunks' attempts (a read the dead worker had polled times out on its start-to-close, 30 s, as it should).
      const events = history.events ?? [];
      const chunkActivities = new Set(
        events
          .filter((event) => event.activityTaskScheduledEventAttributes?.activityType?.name === 'runBatchItems')
          .map((event) => String(event.eventId)),
      );
      const retried = events.flatMap((event) => {
        const started = event.activityTaskStartedEventAttributes;
        return started && (started.attempt ?? 1) > 1 && chunkActivities.has(String(started.scheduledEventId))
          ? [{ timeout: started.lastFailure?.timeoutFailureInfo?.timeoutType, failure: started.lastFailure?.message }]
          : [];
      });
      expect(retried.length).toBeGreaterThan(0);
      expect(
        retried.every((entry) => entry.timeout === temporalEnums.TimeoutType.TIMEOUT_TYPE_HEARTBEAT),
        JSON.stringify(retried),
      ).toBe(true);
      // Each item ended once, by its one owner at a time (the creates the dead worker sent are intents, never
      // executed).
      const rows = await expectSettled(batchId);
      expect(rows.map((row) => row.status)).toEqual(['APPROVED', 'APPROVED', 'APPROVED']);
      for (const row of rows) {
        const events = (await fundings.findWithEvents(row.id))!.events;
        const fences = events.map((event) => event.fence).filter((fence): fence is number => fence !== null);
        expect(fences, `fences of ${row.id}`).toEqual([...fences].sort((a, b) => a - b));
      }
    } finally {
      await child.stop('SIGKILL');
    }
  }, 240_000);
});
