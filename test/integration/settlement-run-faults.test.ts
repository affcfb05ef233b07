// A day's settlement run (contract-decisions section 10) under faults, on the real stack: the
// settleDay workflow on a Temporal worker, PostgreSQL and the sandbox wallet over HTTP. The
// wallet's 429s slow the run down as a whole and it still finishes; a worker process killed
// mid-run is replaced and the run goes on where it stopped, retrieving no stored line again. The
// run's other cases are settlement-runs.test.ts's; these run in a file of their own beside it.
import { randomUUID } from 'node:crypto';
import { MockActivityEnvironment } from '@temporalio/testing';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createSettlementRuns } from '../../ledger/settlement-runs.ts';
import { WalletError, type WalletClient } from '../../wallet/index.ts';
import { settlementWorkflowId, type SettleDayResult } from '../../workflows/settle-day.contract.ts';
import { startPartnerStack, type PartnerStack } from '../support/partner-stack.ts';
import { expectProgress, settlementRunKit, timeZone, tuning } from '../support/settlement-run-kit.ts';
import { stackActivities } from '../support/stack-activities.ts';
import { waitUntil } from '../support/wait-for.ts';
import { startWorkerProcess } from '../support/worker-process.ts';

let stack: PartnerStack;
beforeAll(async () => {
  stack = await startPartnerStack({ settlements: tuning });
  await stack.startWorker();
});
afterEach(async () => {
  await stack.admin.clearFaults();
});
afterAll(() => stack.close());

const { call, settled, freshDay, plant, runsOf, retrievesByTransfer } = settlementRunKit(() => stack);

describe('a day settled by a durable run', () => {
  it('slows down as a whole on the wallet’s 429s and still finishes, each transfer retrieved once', async () => {
    const day = await freshDay();
    await plant(day, 40);
    const before = await retrievesByTransfer();
    await stack.admin.setFaults([
      { endpoint: 'transfers.retrieve', mode: 'rate-limited', rate: 0.3, retryAfterSeconds: 1 },
    ]);
    const report = await settled(day);
    expect(report.body).toMatchObject({ fundings: { matched: 40, missing: 0, mismatched: 0 } });
    const [run] = await runsOf(day);
    const result = (await stack.temporal.workflow
      .getHandle(settlementWorkflowId(day, run!.id))
      .result()) as SettleDayResult;
    expect(result.rateLimited).toBeGreaterThan(0);
    const after = await retrievesByTransfer();
    const items = report.body.items as Array<{ walletId: string }>;
    for (const item of items)
      expect((after.get(item.walletId) ?? 0) - (before.get(item.walletId) ?? 0), item.walletId).toBe(1);
  });

  it('finishes the day when the wallet refuses, each time, to say what became of a transfer: that line is not matched, and says why', async () => {
    // A lasting 400 for every retrieve, then answers that are no record: each transfer's own answer, tried three
    // times. The run was retried for ever (RUNNING, 202 to every GET, and a fresh run hit the same item).
    // And a record that is another transfer's (altered on the way): no record of this one, each time.
    for (const fault of [
      { endpoint: 'transfers.retrieve' as const, mode: 'error-before-effect' as const, rate: 1, status: 400 },
      { endpoint: 'transfers.retrieve' as const, mode: 'garbage-body' as const, rate: 1 },
      { endpoint: 'transfers.retrieve' as const, mode: 'altered-answer' as const, rate: 1 },
    ]) {
      const day = await freshDay();
      await plant(day, 3);
      await stack.admin.setFaults([fault]);
      const report = await settled(day);
      expect(report.body, fault.mode).toMatchObject({ fundings: { matched: 0, missing: 0, mismatched: 3 } });
      for (const item of report.body.items as Array<Record<string, unknown>>)
        expect(item, fault.mode).toMatchObject({
          result: 'mismatched',
          walletStatus: null,
          walletAmount: null,
          detail: expect.stringContaining("the wallet's record could not be read"),
        });
      await stack.admin.clearFaults();
    }
  });

  it('asks again in later attempts for transfers whose answers were no record of them for a while (a proxy’s burst): every line matched', async () => {
    // Before: three tries within about a second and a half, then the line said the record could not be read, for good.
    const day = await freshDay();
    await plant(day, 3);
    const since = new Date();
    const garbled = async () =>
      Number(
        (
          await stack.database.$queryRaw<Array<{ n: bigint }>>`
            SELECT count(*) AS n FROM wallet_call
            WHERE operation = 'transfers.retrieve' AND outcome <> 'ok' AND started_at >= ${since}`
        )[0]!.n,
      );
    await stack.admin.setFaults([{ endpoint: 'transfers.retrieve', mode: 'garbage-body', rate: 1 }]);
    expectProgress(await call(`/ops/settlements/${day}`), day);
    // Every try of the first attempt answered with garbage; the next attempt comes 2 s after it failed.
    await waitUntil(garbled, (failed) => failed >= 9, 60_000, 50);
    await stack.admin.clearFaults();
    const report = await settled(day);
    expect(report.body).toMatchObject({ fundings: { matched: 3, missing: 0, mismatched: 0 } });
  });

  it('waits out the wallet’s temporary failure (7011, a 400 that passes), and then matches every line', async () => {
    const day = await freshDay();
    await plant(day, 3);
    const since = new Date();
    const failedRetrieves = async () =>
      Number(
        (
          await stack.database.$queryRaw<Array<{ n: bigint }>>`
            SELECT count(*) AS n FROM wallet_call
            WHERE operation = 'transfers.retrieve' AND outcome <> 'ok' AND started_at >= ${since}`
        )[0]!.n,
      );
    await stack.admin.setFaults([{ endpoint: 'transfers.retrieve', mode: 'temporary-failure', rate: 1 }]);
    expectProgress(await call(`/ops/settlements/${day}`), day);
    // Every transfer asked more than three times (a lasting refusal's count) while the failure lasts: the run holds.
    await waitUntil(failedRetrieves, (failed) => failed >= 12, 60_000, 100);
    expect(await runsOf(day)).toEqual([expect.objectContaining({ state: 'RUNNING' })]);
    await stack.admin.clearFaults();
    const report = await settled(day);
    expect(report.body).toMatchObject({ fundings: { matched: 3, missing: 0, mismatched: 0 } });
  });

  it('keeps what a page read when one of its transfers fails for good: the attempt tried again retrieves only that one', async () => {
    const day = await freshDay();
    await plant(day, 20);
    const { run } = await createSettlementRuns(stack.database).start({
      date: day,
      timeZone,
      wholeDay: true,
      requestedBy: 'settlement-run-faults',
    });
    // The wallet fails every try of the page's first transfer (a 503: the attempt fails, and Temporal tries it again),
    // until it is told not to; every other retrieve is the wallet's own answer.
    const asked = new Map<string, number>();
    let victim: string | undefined;
    let failing = true;
    const wallet: WalletClient = {
      ...stack.wallet,
      retrieveTransfer: async (transferId) => {
        asked.set(transferId, (asked.get(transferId) ?? 0) + 1);
        victim ??= transferId;
        if (failing && transferId === victim)
          throw new WalletError({
            operation: 'transfers.retrieve',
            httpStatus: 503,
            code: 'SERVICE_UNAVAILABLE',
            outcome: 'retryable',
            requestReferenceNo: randomUUID(),
          });
        return stack.wallet.retrieveTransfer(transferId);
      },
    };
    const { settleItems } = stackActivities(stack, { wallet });
    const input = {
      runId: run.id,
      side: 'fundings' as const,
      after: null,
      pageSize: 20,
      maxItems: 100,
      maxInFlight: 4,
      inFlight: 4,
    };
    const lines = async () =>
      Number(
        (
          await stack.database.$queryRaw<Array<{ n: bigint }>>`
            SELECT count(*) AS n FROM settlement_line WHERE run_id = ${run.id}::uuid`
        )[0]!.n,
      );

    await expect(new MockActivityEnvironment({ attempt: 1 }).run(settleItems, input)).rejects.toThrow(
      /SERVICE_UNAVAILABLE/,
    );
    // Before: nothing of the page was stored, and the attempt tried again retrieved all twenty again.
    expect(await lines()).toBe(19);
    failing = false;
    const outcome = await new MockActivityEnvironment({ attempt: 2 }).run(settleItems, input);
    expect(outcome).toMatchObject({ done: true, stored: 1 });
    expect(await lines()).toBe(20);
    expect(asked.size).toBe(20);
    for (const [transferId, times] of asked) expect(times, transferId).toBe(transferId === victim ? 4 : 1);
  });

  it('counts a transfer’s garbled answers toward its line only when the page went through: garbling at large is waited out, one transfer’s own is said', async () => {
    const day = await freshDay();
    await plant(day, 20);
    const { run } = await createSettlementRuns(stack.database).start({
      date: day,
      timeZone,
      wholeDay: true,
      requestedBy: 'settlement-run-faults',
    });
    // Every answer garbled (a proxy at large), then only the page's first transfer's (its own), then none.
    let garbling: 'all' | 'one' | 'none' = 'all';
    let victim: string | undefined;
    const wallet: WalletClient = {
      ...stack.wallet,
      retrieveTransfer: async (transferId) => {
        victim ??= transferId;
        if (garbling === 'all' || (garbling === 'one' && transferId === victim))
          throw new WalletError({
            operation: 'transfers.retrieve',
            httpStatus: 200,
            code: 'UNPARSABLE_RESPONSE',
            outcome: 'unknown',
            requestReferenceNo: randomUUID(),
          });
        return stack.wallet.retrieveTransfer(transferId);
      },
    };
    const { settleItems } = stackActivities(stack, { wallet });
    const input = {
      runId: run.id,
      side: 'fundings' as const,
      after: null,
      pageSize: 20,
      maxItems: 100,
      maxInFlight: 4,
      inFlight: 4,
    };
    const lines = () =>
      stack.database.$queryRaw<Array<{ result: string; n: bigint }>>`
        SELECT result::text AS result, count(*) AS n FROM settlement_line WHERE run_id = ${run.id}::uuid GROUP BY result`;
    /** An attempt as Temporal would make it: its number, and the last heartbeat of the attempt before. */
    let details: unknown;
    const attempt = async (number: number) => {
      const environment = new MockActivityEnvironment({ attempt: number, heartbeatDetails: details });
      environment.on('heartbeat', (beat: unknown) => {
        details = beat;
      });
      return environment.run(settleItems, input);
    };
    // Three attempts with every answer garbled: each page stops on its failures, and nothing is stored (before: the
    // third stored its first transfers' lines as `mismatched`, and so on, group by group).
    for (let number = 1; number <= 3; number += 1)
      await expect(attempt(number), `attempt ${number}`).rejects.toThrow(/UNPARSABLE_RESPONSE/);
    expect(await lines()).toEqual([]);
    // Then one transfer's own, every time: the page goes through, and its line says so after three attempts.
    garbling = 'one';
    for (let number = 4; number <= 5; number += 1)
      await expect(attempt(number), `attempt ${number}`).rejects.toThrow(/UNPARSABLE_RESPONSE/);
    expect(await attempt(6)).toMatchObject({ done: true });
    expect(Object.fromEntries((await lines()).map((row) => [row.result, Number(row.n)]))).toEqual({
      matched: 19,
      mismatched: 1,
    });
  });

  it('goes on where it stopped after its worker is killed, retrieving no stored line again', async () => {
    const day = await freshDay();
    await plant(day, 200);
    const before = await retrievesByTransfer();
    await stack.stopWorker();
    await stack.admin.setFaults([{ endpoint: 'transfers.retrieve', mode: 'latency', rate: 1, delayMs: 200 }]);
    const worker = startWorkerProcess(stack.workerEnv());
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
      const storedBefore = await stack.database.$queryRaw<
        Array<{ wallet_id: string }>
      >`SELECT wallet_id FROM settlement_line WHERE run_id = ${run!.id}::uuid`;
      expect(storedBefore.length).toBeGreaterThanOrEqual(60);
      expect(storedBefore.length).toBeLessThan(200);
      // Another worker takes the run on: the stack's own, in this process (a second worker process
      // would prove nothing more, and costs a start of its own).
      await stack.startWorker();
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
      await stack.startWorker();
    }
  }, 120_000);
});
