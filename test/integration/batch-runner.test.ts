// The batch runner (workflows/fund-batch.ts, activities/batch.ts) on the real stack: a Temporal
// worker, PostgreSQL and the sandbox wallet. Every batch must end with each item final (or in
// review), each created transfer executed exactly once, and each item's ledger hold settled as its
// state says: posted when APPROVED, released otherwise. The runner continues as new every few
// items (its history stays bounded), pauses, resumes and cancels on the stored state, and slows
// the whole batch down when the wallet answers 429. Who owns a chunk when a worker dies or freezes,
// or while the sweep runs beside it: batch-chunk-owners.test.ts and batch-chunk-frozen-worker.test.ts (stacks of
// their own, beside this one).
import { randomUUID } from 'node:crypto';
import { MockActivityEnvironment } from '@temporalio/testing';
import { describe, expect, it } from 'vitest';
import type { temporal } from '@temporalio/proto';
import { batchItemRows, type NewBatchItem } from '../../fundings/batch-items-record.ts';
import { cashInCodeContext } from '../../fundings/funding-record.ts';
import { sha256Hex } from '../../lib/idempotency.ts';
import { createTokenCipher } from '../../lib/token-cipher.ts';
import { checkLedgerInvariants } from '../../harness/ledger-invariants.ts';
import {
  batchWorkflowId,
  fundBatchActivityTimeouts,
  type BatchItemsOutcome,
} from '../../workflows/fund-batch.contract.ts';
import { fundingWorkflowId } from '../../workflows/fund-wallet.contract.ts';
import type { SweepReport } from '../../workflows/sweep.contract.ts';
import { sleep, useBatchRunnerStack } from '../support/batch-runner-kit.ts';
import { createEmbeddedLink } from '../support/embedded-link.ts';
import { stackActivities } from '../support/stack-activities.ts';
import { waitUntil } from '../support/wait-for.ts';

const {
  stack,
  fundings,
  batches,
  runningBatch,
  startRunner,
  resultOf,
  progressOf,
  signal,
  itemsOf,
  tally,
  expectSettled,
} = useBatchRunnerStack();

/** The runs of a workflow, newest first: each one's event count, walking back through continue-as-new. */
async function runsOf(
  workflowId: string,
): Promise<Array<{ runId: string; events: number; lastEvent: 'completed' | 'continued-as-new' | 'other' }>> {
  const runs: Array<{ runId: string; events: number; lastEvent: 'completed' | 'continued-as-new' | 'other' }> = [];
  let runId: string | undefined = (await stack().temporal.workflow.getHandle(workflowId).describe()).runId;
  while (runId) {
    const history: temporal.api.history.v1.IHistory = await stack()
      .temporal.workflow.getHandle(workflowId, runId)
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

describe('the batch runner', () => {
  it('runs every item once, continuing as new every few items with a short history per run', async () => {
    const batchId = await runningBatch(20);
    const handle = await startRunner(batchId, { itemsPerRun: 5 });
    expect(await resultOf(handle)).toEqual({ state: 'COMPLETED' });

    const rows = await expectSettled(batchId);
    expect(rows.map((row) => row.status)).toEqual(Array(20).fill('APPROVED'));
    expect(new Set(rows.map((row) => row.transferId)).size).toBe(20);
    const batch = (await batches().find(batchId))!;
    expect(batch.state).toBe('COMPLETED');
    expect(batch.completedAt).toBeInstanceOf(Date);
    expect((await batches().view(batch)).counts).toEqual({ APPROVED: 20 });

    // 20 items at 5 a run: at least 4 runs, each but the last continued as new; none grows with
    // the batch (a run holds its 5 items, a few reads and its workflow tasks).
    const runs = await runsOf(batchWorkflowId(batchId));
    expect(runs.length).toBeGreaterThanOrEqual(4);
    expect(runs[0]!.lastEvent).toBe('completed');
    for (const run of runs.slice(1)) expect(run.lastEvent).toBe('continued-as-new');
    for (const run of runs) expect(run.events, `run ${run.runId}`).toBeLessThan(120);
    // The pass finished every item itself: no item needed its own workflow.
    for (const row of rows)
      await expect(stack().temporal.workflow.getHandle(row.workflowId).describe()).rejects.toThrow();
  });

  it('runs a batch of TOKEN and CODE items whose first item is TOKEN: every cash-in code stored readable, every item APPROVED', async () => {
    const batchId = randomUUID();
    const codeUser = await stack().admin.createUser({ kycLevel: 'KYC1', balance: '0.00' });
    const items: NewBatchItem[] = [];
    for (let index = 1; index <= 6; index += 1) {
      const reference = `mixed-${index}`;
      const idempotencyKey = `batch:${batchId}:${reference}`;
      // TOKEN, CODE, TOKEN, CODE, …: the first item has no cash-in code.
      const recipient: NewBatchItem['recipient'] =
        index % 2 === 1
          ? { type: 'TOKEN', linkId: (await createEmbeddedLink(stack(), { kycLevel: 'KYC1', balance: '0.00' })).linkId }
          : { type: 'CODE', code: (await stack().admin.cashInCode(codeUser.userId)).code };
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
      await batches().insert({
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
      expect(fundings().cashInCodeOf(await fundings().get(item.id)), item.reference).toBe(item.recipient.code);
    }
    const handle = await startRunner(batchId, { itemsPerRun: 100, maxInFlight: 8 });
    expect(await resultOf(handle)).toEqual({ state: 'COMPLETED' });
    const rows = await expectSettled(batchId);
    expect(rows.map((row) => row.status)).toEqual(Array(6).fill('APPROVED'));
  });

  it('pauses (no new item starts) and resumes to completion', async () => {
    const batchId = await runningBatch(12);
    // Each item takes a while: the pause lands with items left.
    await stack().admin.setFaults([{ endpoint: 'transfers.execute', mode: 'latency', rate: 1, delayMs: 400 }]);
    const handle = await startRunner(batchId, { itemsPerRun: 50, maxInFlight: 2 });
    await waitUntil(
      () => tally(batchId),
      (counts) => (counts.APPROVED ?? 0) >= 2,
      30_000,
    );

    expect(await batches().move(batchId, 'PAUSED', { field: 'pausedBy', name: 'ops' })).toBe(true);
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
    expect((await batches().find(batchId))!.pausedBy).toBe('ops');

    expect(await batches().move(batchId, 'RUNNING')).toBe(true);
    await signal(handle);
    expect(await resultOf(handle)).toEqual({ state: 'COMPLETED' });
    const rows = await expectSettled(batchId);
    expect(rows.map((row) => row.status)).toEqual(Array(12).fill('APPROVED'));
  });

  it('cancelled midway: started items finish, the others are cancelled with their holds released', async () => {
    const batchId = await runningBatch(14);
    await stack().admin.setFaults([{ endpoint: 'transfers.execute', mode: 'latency', rate: 1, delayMs: 400 }]);
    const handle = await startRunner(batchId, { itemsPerRun: 50, maxInFlight: 2 });
    await waitUntil(
      () => tally(batchId),
      (counts) => (counts.APPROVED ?? 0) >= 2,
      30_000,
    );

    // The batch and its items not started end together (one transaction).
    expect(await batches().move(batchId, 'CANCELLED', { field: 'cancelledBy', name: 'ops' })).toBe(true);
    await signal(handle);
    expect(await resultOf(handle)).toEqual({ state: 'CANCELLED' });
    expect((await tally(batchId)).CANCELLED).toBeGreaterThan(0);

    const rows = await expectSettled(batchId);
    const approved = rows.filter((row) => row.status === 'APPROVED');
    const notStarted = rows.filter((row) => row.status === 'FAILED' && row.errorCode === 'CANCELLED');
    expect(approved.length).toBeGreaterThanOrEqual(2);
    expect(notStarted.length).toBeGreaterThan(0);
    expect(approved.length + notStarted.length).toBe(14);
    const batch = (await batches().find(batchId))!;
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
    await stack().admin.setFaults(
      [{ endpoint: 'transfers.create', mode: 'rate-limited', rate: 0.4, retryAfterSeconds: 1 }],
      7,
    );
    const handle = await startRunner(batchId, { itemsPerRun: 100, maxInFlight: 4 });
    expect(await resultOf(handle)).toEqual({ state: 'COMPLETED' });

    const rows = await expectSettled(batchId);
    expect(rows.map((row) => row.status)).toEqual(Array(16).fill('APPROVED'));
    const refused = await stack().database.walletCall.count({
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
      const description = await stack()
        .temporal.workflow.getHandle(row.workflowId)
        .describe()
        .catch(() => null);
      if (description) handedOver.push(description.status.name);
    }
    expect(handedOver.length).toBeGreaterThanOrEqual(1);
    expect(new Set(handedOver)).toEqual(new Set(['COMPLETED']));
  });

  it('keeps waiting out the wallet’s Retry-After across a continue-as-new: the next run starts nothing inside it', async () => {
    const batchId = await runningBatch(8);
    // Every create refused with a Retry-After of 6 s while the first run's two chunks (4 items, all it dispatches
    // before it continues as new) are under way.
    await stack().admin.setFaults([
      { endpoint: 'transfers.create', mode: 'rate-limited', rate: 1, retryAfterSeconds: 6 },
    ]);
    const handle = await startRunner(batchId, { itemsPerRun: 4, maxInFlight: 4 });
    const firstRun = (await handle.describe()).runId;
    const next = await waitUntil(
      async () => ({ runId: (await handle.describe()).runId, progress: await progressOf(handle) }),
      (seen) => seen.runId !== firstRun,
      60_000,
    );
    await stack().admin.clearFaults();
    // Before: the next run began with no wait, and dispatched its items inside the wallet's Retry-After.
    expect(next.progress.waitingUntil).not.toBeNull();
    const waitingUntil = new Date(next.progress.waitingUntil!);
    expect(await resultOf(handle)).toEqual({ state: 'COMPLETED' });
    const rows = await expectSettled(batchId);
    expect(rows.map((row) => row.status)).toEqual(Array(8).fill('APPROVED'));
    // The next run's items (the last four, in id order) were claimed by its chunks once the wait was over.
    const claims = await stack().database.fundingEvent.findMany({
      where: { fundingId: { in: rows.slice(4).map((row) => row.id) }, status: 'CREATING' },
      select: { at: true },
    });
    expect(claims.length).toBeGreaterThanOrEqual(4);
    for (const claim of claims) expect(claim.at.getTime()).toBeGreaterThanOrEqual(waitingUntil.getTime() - 50);
  });

  it('does not slow down for a create that failed otherwise (503 before any effect): those items alone go to their workflows', async () => {
    const batchId = await runningBatch(16);
    const since = new Date();
    await stack().admin.setFaults([{ endpoint: 'transfers.create', mode: 'error-before-effect', rate: 0.4 }], 7);
    const handle = await startRunner(batchId, { itemsPerRun: 100, maxInFlight: 4 });
    // Every item dispatched and every chunk's pass over (the run waits on the items handed to their
    // own workflows): what the passes decided is done. Their workflows then create without faults,
    // instead of retrying the 503s with backoff (the funding workflow's retries are its own tests').
    await waitUntil(
      () => progressOf(handle),
      (progress) => progress.draining && progress.running === 0,
      60_000,
    );
    await stack().admin.clearFaults();
    expect(await resultOf(handle)).toEqual({ state: 'COMPLETED' });
    const rows = await expectSettled(batchId);
    expect(rows.map((row) => row.status)).toEqual(Array(16).fill('APPROVED'));
    expect(
      await stack().database.walletCall.count({
        where: { startedAt: { gte: since }, operation: 'transfers.create', httpStatus: 503 },
      }),
    ).toBeGreaterThan(0);
    // Full speed throughout: no halving, nothing waited for.
    expect(await progressOf(handle)).toMatchObject({ slowDowns: 0, inFlight: 4 });
  });

  it('hands an item whose execute outcome is unknown to its own workflow, and completes once that one finished it', async () => {
    const batchId = await runningBatch(3);
    await stack().admin.setFaults([{ endpoint: 'transfers.execute', mode: 'error-after-effect', rate: 1 }]);
    const handle = await startRunner(batchId, { itemsPerRun: 50 });
    expect(await resultOf(handle)).toEqual({ state: 'COMPLETED' });

    // Each item's own workflow retrieved the transfer (executed once, by the pass) and approved it.
    const rows = await expectSettled(batchId);
    expect(rows.map((row) => row.status)).toEqual(Array(3).fill('APPROVED'));
    for (const row of rows)
      expect((await stack().temporal.workflow.getHandle(row.workflowId).describe()).status.name).toBe('COMPLETED');
  });
});

describe('a chunk run again (a retried runBatchItems)', () => {
  const activitiesOf = () => stackActivities(stack());
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
      await stack().database.walletCall.count({
        where: { startedAt: { gte: since }, operation: { in: ['transfers.create', 'transfers.execute'] } },
      }),
    ).toBe(0);
    await expect(stack().temporal.workflow.getHandle(first!.workflowId).describe()).rejects.toThrow();

    // Left RECONCILING by its pass (the execute's answer was lost): a run again hands it over,
    // and the item's workflow learns its outcome by retrieve.
    await stack().admin.setFaults([{ endpoint: 'transfers.execute', mode: 'error-after-effect', rate: 1 }]);
    expect(await runItems(activities, batchId, [second!.id], 1)).toEqual({
      finished: 0,
      handedOver: 1,
      notStarted: 0,
      slowDownMs: null,
    });
    await stack().admin.clearFaults();
    const itsWorkflow = stack().temporal.workflow.getHandle(second!.workflowId);
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
    expect(await batches().unfinishedItems(batchId)).toBe(0);
    const rows = await expectSettled(batchId);
    expect(rows.map((row) => row.status)).toEqual(['APPROVED', 'APPROVED']);
  });

  it('runs a chunk in one pass: each item created, stored before its execute, executed once, settled and announced; a refused create ends REJECTED', async () => {
    const activities = activitiesOf();
    const batchId = await runningBatch(6);
    const items = await itemsOf(batchId);
    // The third item's wallet is not upgraded: its create is refused (M133), before any execute.
    const kyc0 = await stack().admin.createUser({ kycLevel: 'KYC0', balance: '0.00' });
    const { code } = await stack().admin.cashInCode(kyc0.userId);
    await stack().database.funding.update({
      where: { id: items[2]!.id },
      data: {
        cashInCodeEncrypted: Buffer.from(
          createTokenCipher(stack().encryptionKey).encrypt(code, cashInCodeContext(items[2]!.id)),
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
      const events = await stack().database.fundingEvent.findMany({
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
    const ledger = await stack().admin.ledger();
    for (const row of rows.filter((entry) => entry.status === 'APPROVED')) {
      expect(ledger.transfers.find((transfer) => transfer.transferId === row.transferId)?.executions).toBe(1);
    }
    expect(
      await stack().database.walletCall.count({ where: { startedAt: { gte: since }, operation: 'transfers.execute' } }),
    ).toBe(5);
    // Every final item announced once (funding.approved / funding.rejected).
    const events = await stack().database.webhookEvent.findMany({
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
    expect(await fundings().cancel(items[0]!)).toBe(true);
    // The second: taken over by another run while the chunk's creates are under way (its fence
    // raised under it), so the chunk's stored intent and move to EXECUTING are refused.
    await stack().admin.setFaults([{ endpoint: 'transfers.create', mode: 'latency', rate: 1, delayMs: 1500 }]);
    const running = runItems(
      activities,
      batchId,
      items.map((item) => item.id),
      1,
    );
    await waitUntil(
      async () => (await stack().database.funding.findUniqueOrThrow({ where: { id: items[1]!.id } })).status,
      (status) => status === 'CREATING',
      10_000,
    );
    await fundings().claim(items[1]!.id);
    expect(await running).toEqual({ finished: 2, handedOver: 1, notStarted: 0, slowDownMs: null });
    await stack().admin.clearFaults();

    const second = await stack().database.funding.findUniqueOrThrow({ where: { id: items[1]!.id } });
    await stack().temporal.workflow.getHandle(second.workflowId).result();
    const rows = await itemsOf(batchId);
    expect(rows.map((row) => [row.status, row.errorCode])).toEqual([
      ['FAILED', 'CANCELLED'],
      ['APPROVED', null],
      ['APPROVED', null],
    ]);
    // The chunk's intent for the second item is kept on record and never executed; the one its
    // own workflow created is executed once.
    const ledger = new Map((await stack().admin.ledger()).transfers.map((transfer) => [transfer.transferId, transfer]));
    const overtaken = rows[1]!;
    expect(overtaken.abandonedTransferIds).toHaveLength(1);
    expect(ledger.get(overtaken.abandonedTransferIds[0]!)?.executions ?? 0).toBe(0);
    expect(ledger.get(overtaken.transferId!)?.executions).toBe(1);
    expect(ledger.get(rows[2]!.transferId!)?.executions).toBe(1);
    expect(rows[0]!.transferId).toBeNull();
    // The ledger's books still hold: every hold settled as its item's state says.
    expect((await checkLedgerInvariants(stack().database)).violations).toEqual([]);
  });

  it('starts no item of a batch that is not RUNNING: a paused batch’s chunk leaves its items PENDING, no call, no workflow', async () => {
    const activities = activitiesOf();
    const batchId = await runningBatch(2);
    const items = await itemsOf(batchId);
    expect(await batches().move(batchId, 'PAUSED', { field: 'pausedBy', name: 'ops' })).toBe(true);
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
    expect(await stack().database.walletCall.count({ where: { startedAt: { gte: since } } })).toBe(0);
    for (const item of items)
      await expect(stack().temporal.workflow.getHandle(item.workflowId).describe()).rejects.toThrow();
    // Resumed, the same chunk runs them.
    expect(await batches().move(batchId, 'RUNNING', undefined, ['PAUSED'])).toBe(true);
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
    await expect(stack().temporal.workflow.getHandle(batchWorkflowId(batchId)).describe()).rejects.toThrow();
    const report: SweepReport = await new MockActivityEnvironment().run(activities.sweepStuckFundings, {
      olderThanSeconds: 3600,
    });
    expect(report.batchRunners).toContainEqual({ batchId, state: 'RUNNING', detail: 'no runner: started' });
    expect(await resultOf(stack().temporal.workflow.getHandle(batchWorkflowId(batchId)))).toEqual({
      state: 'COMPLETED',
    });
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
      await expect(stack().temporal.workflow.getHandle(item.workflowId).describe()).rejects.toThrow();
    // The runner dispatches them again and the batch completes.
    const handle = await startRunner(batchId, { itemsPerRun: 50 });
    expect(await resultOf(handle)).toEqual({ state: 'COMPLETED' });
    await expectSettled(batchId);
  });

  it('runs the items the chunk does not claim (a row a cancel holds) on the activity’s own clock: no call starts that could outlive the attempt', async () => {
    const activities = activitiesOf();
    const batchId = randomUUID();
    const codeUser = await stack().admin.createUser({ kycLevel: 'KYC1', balance: '0.00' });
    const codes = await Promise.all([0, 1].map(async () => (await stack().admin.cashInCode(codeUser.userId)).code));
    const { linkId } = await createEmbeddedLink(stack(), { kycLevel: 'KYC1', balance: '0.00' });
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
      await batches().insert({
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
    await stack().admin.setFaults([{ endpoint: 'transfers.create', mode: 'latency', rate: 1, delayMs: 4000 }]);
    // Another transaction (a cancel, say) holds the third item's row for 2.5 s: the chunk skips
    // it, and its own pass takes it on once the row is free, past the last safe moment.
    let locked!: () => void;
    const lockTaken = new Promise<void>((resolve) => (locked = resolve));
    const holder = stack().database.$transaction(
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
    await stack().admin.clearFaults();
    const calls = await stack().database.walletCall.findMany({
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
