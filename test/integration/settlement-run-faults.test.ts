// A day's settlement run (contract-decisions section 10) under faults, on the real stack: the
// settleDay workflow on a Temporal worker, PostgreSQL and the sandbox wallet over HTTP. The
// wallet's 429s slow the run down as a whole and it still finishes; its temporary failure (7011) is waited out; a
// worker process killed mid-run is replaced and the run goes on where it stopped, retrieving no stored line again.
// A transfer the wallet will not describe: settlement-unreadable.test.ts; the run's cases: settlement-runs.test.ts.
import { describe, expect, it } from 'vitest';
import { settlementWorkflowId, type SettleDayResult } from '../../workflows/settle-day.contract.ts';
import { expectProgress, settlementRunKit, tuning, useSettlementStack } from '../support/settlement-run-kit.ts';
import { waitUntil } from '../support/wait-for.ts';
import { startWorkerProcess } from '../support/worker-process.ts';

const stack = useSettlementStack();

const { call, settled, freshDay, plant, runsOf, retrievesByTransfer, failedRetrievesFrom } = settlementRunKit(stack);
describe('a day settled by a durable run', () => {
  it('slows down as a whole on the wallet’s 429s and still finishes, each transfer retrieved once', async () => {
    const day = await freshDay();
    await plant(day, 40);
    const before = await retrievesByTransfer();
    await stack().admin.setFaults([
      { endpoint: 'transfers.retrieve', mode: 'rate-limited', rate: 0.3, retryAfterSeconds: 1 },
    ]);
    const report = await settled(day);
    expect(report.body).toMatchObject({ fundings: { matched: 40, missing: 0, mismatched: 0 } });
    const [run] = await runsOf(day);
    const result = (await stack()
      .temporal.workflow.getHandle(settlementWorkflowId(day, run!.id))
      .result()) as SettleDayResult;
    expect(result.rateLimited).toBeGreaterThan(0);
    const after = await retrievesByTransfer();
    const items = report.body.items as Array<{ walletId: string }>;
    for (const item of items)
      expect((after.get(item.walletId) ?? 0) - (before.get(item.walletId) ?? 0), item.walletId).toBe(1);
  });

  it('waits out the wallet’s temporary failure (7011, a 400 that passes), and then matches every line', async () => {
    const day = await freshDay();
    await plant(day, 3);
    const failedRetrieves = failedRetrievesFrom(new Date());
    await stack().admin.setFaults([{ endpoint: 'transfers.retrieve', mode: 'temporary-failure', rate: 1 }]);
    expectProgress(await call(`/ops/settlements/${day}`), day);
    // Every transfer asked more than three times (a lasting refusal's count) while the failure lasts: the run holds.
    await waitUntil(failedRetrieves, (failed) => failed >= 12, 60_000, 100);
    expect(await runsOf(day)).toEqual([expect.objectContaining({ state: 'RUNNING' })]);
    await stack().admin.clearFaults();
    const report = await settled(day);
    expect(report.body).toMatchObject({ fundings: { matched: 3, missing: 0, mismatched: 0 } });
  });

  it('goes on where it stopped after its worker is killed, retrieving no stored line again', async () => {
    const day = await freshDay();
    await plant(day, 200);
    const before = await retrievesByTransfer();
    await stack().stopWorker();
    await stack().admin.setFaults([{ endpoint: 'transfers.retrieve', mode: 'latency', rate: 1, delayMs: 200 }]);
    const worker = startWorkerProcess(stack().workerEnv());
    try {
      expectProgress(await call(`/ops/settlements/${day}`), day);
      const [run] = await runsOf(day);
      await waitUntil(
        async () => (await runsOf(day))[0]!.checked,
        (checked) => checked >= 60,
        60_000,
        100,
      );
      await worker.stop('SIGKILL');
      const storedBefore = await stack().database.$queryRaw<
        Array<{ wallet_id: string }>
      >`SELECT wallet_id FROM settlement_line WHERE run_id = ${run!.id}::uuid`;
      expect(storedBefore.length).toBeGreaterThanOrEqual(60);
      expect(storedBefore.length).toBeLessThan(200);
      // Another worker takes the run on: the stack's own, in this process (a second worker process
      // would prove nothing more, and costs a start of its own).
      await stack().startWorker();
      const report = await settled(day);
      expect(report.body).toMatchObject({ runId: run!.id, fundings: { matched: 200, missing: 0, mismatched: 0 } });
      expect(await runsOf(day)).toEqual([expect.objectContaining({ state: 'SUCCEEDED', checked: 200, total: 200 })]);
      const after = await retrievesByTransfer();
      const retrieved = (transferId: string) => (after.get(transferId) ?? 0) - (before.get(transferId) ?? 0);
      for (const { wallet_id } of storedBefore) expect(retrieved(wallet_id), wallet_id).toBe(1);
      const items = report.body.items as Array<{ walletId: string }>;
      const again = items.filter((item) => retrieved(item.walletId) > 1);
      // Only the retrieves of the page the killed worker had under way (not stored yet) were sent again.
      expect(again.length).toBeLessThanOrEqual(tuning.pageSize);
    } finally {
      await worker.stop('SIGTERM');
      await stack().startWorker();
    }
  }, 120_000);
});
