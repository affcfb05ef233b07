// Who owns a batch chunk (workflows/fund-batch.ts, activities/batch.ts) when its worker dies, or
// while the sweep runs beside it, on the real stack: Temporal, PostgreSQL and the sandbox wallet,
// with a worker process of its own that the test kills (SIGKILL). Each item ends once, by its one
// owner at a time. The runner's other cases are batch-runner.test.ts's, a frozen worker's
// batch-chunk-frozen-worker.test.ts's: each file on a stack of its own, so that they run side by side.
import { MockActivityEnvironment } from '@temporalio/testing';
import { describe, expect, it } from 'vitest';
import { temporal as temporalProto } from '@temporalio/proto';
import type { SweepReport } from '../../workflows/sweep.contract.ts';
import { sleep, useBatchRunnerStack } from '../support/batch-runner-kit.ts';
import { stackActivities } from '../support/stack-activities.ts';
import { waitUntil } from '../support/wait-for.ts';
import { startWorkerProcess } from '../support/worker-process.ts';

const temporalEnums = temporalProto.api.enums.v1;
const { stack, fundings, batches, runningBatch, startRunner, resultOf, itemsOf, tally, expectSettled } =
  useBatchRunnerStack();

describe('the sweep beside a running batch', () => {
  it('never takes over what a live chunk owns: items older than the sweep’s age, slow executes, the sweep every second: every item APPROVED, none in review, one create each', async () => {
    const activities = stackActivities(stack());
    // Well above a chunk's beat for its items (every 2 s), as RECONCILE_AFTER_SECONDS (at least 60) is.
    const olderThanSeconds = 6;
    let userId = '';
    const batchId = await runningBatch(12, { needsApproval: true, recipient: (id) => (userId = id) });
    const items = await itemsOf(batchId);
    // The approval comes after the sweep's age: every item is "old" by the time it runs. Its owner
    // last seen (and the item made) longer ago than that, on the database's clock, as a wait of the
    // sweep's age would leave it (the sweep reads owner_seen_at: a funding's age does not count).
    await stack().database.$executeRaw`
      UPDATE funding SET owner_seen_at = owner_seen_at - ${olderThanSeconds + 1} * interval '1 second',
        created_at = created_at - ${olderThanSeconds + 1} * interval '1 second', updated_at = updated_at - ${olderThanSeconds + 1} * interval '1 second'
      WHERE batch_id = ${batchId}::uuid`;
    // Half the executes take 4 s to be carried out (the transfer shows CREATED meanwhile; the test
    // stack's wallet time-out is 5 s).
    await stack().admin.setFaults([{ endpoint: 'transfers.execute', mode: 'latency', rate: 0.5, delayMs: 4000 }], 7);
    expect(
      await batches().move(batchId, 'RUNNING', { field: 'approvedBy', name: 'checker' }, ['AWAITING_APPROVAL']),
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
    const transfers = (await stack().admin.ledger()).transfers.filter(
      (transfer) => transfer.recipientUserId === userId,
    );
    expect(transfers).toHaveLength(items.length);
    expect(new Set(transfers.map((transfer) => transfer.amount.value)).size).toBe(items.length);
    expect(transfers.every((transfer) => transfer.executions === 1)).toBe(true);
  }, 120_000);
});

describe('a chunk whose worker died', () => {
  it('is tried again after its heartbeat time-out, not its start-to-close: the items end on another worker, each executed once', async () => {
    // The chunk runs on a worker process of its own, the only one polling.
    await stack().stopWorker();
    const child = startWorkerProcess({ ...stack().workerEnv(), LOG_LEVEL: 'info' });
    try {
      await child.polling();
      // Its creates take 5 s: the worker dies while the chunk waits on them.
      await stack().admin.setFaults([{ endpoint: 'transfers.create', mode: 'latency', rate: 1, delayMs: 5000 }]);
      const batchId = await runningBatch(3);
      const handle = await startRunner(batchId, { itemsPerRun: 100, maxInFlight: 4 });
      await waitUntil(
        () => tally(batchId),
        (counts) => (counts.CREATING ?? 0) > 0,
        60_000,
      );
      await child.stop('SIGKILL');
      await stack().admin.clearFaults();
      await stack().startWorker();

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
        const events = (await fundings().findWithEvents(row.id))!.events;
        const fences = events.map((event) => event.fence).filter((fence): fence is number => fence !== null);
        expect(fences, `fences of ${row.id}`).toEqual([...fences].sort((a, b) => a - b));
      }
    } finally {
      await child.stop('SIGKILL');
    }
  }, 240_000);
});
