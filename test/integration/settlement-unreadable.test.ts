// A day's settlement run (contract-decisions section 10) when the wallet will not say what became of a transfer, on the
// real stack: the settleDay workflow on a Temporal worker, PostgreSQL and the sandbox wallet over HTTP, and a page's
// attempts made here as Temporal would make them. A transfer the wallet refuses each time, or answers with no record of
// it through three attempts, gets a line saying so and the day goes on; garbled answers for a while, or at large, are
// asked again and waited out, never stored as a false line; a page keeps what it read when one transfer fails. The
// run's other faults are settlement-run-faults.test.ts's, its cases settlement-runs.test.ts's: files of their own.
import { randomUUID } from 'node:crypto';
import { MockActivityEnvironment } from '@temporalio/testing';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createSettlementRuns } from '../../ledger/settlement-runs.ts';
import { WalletError, type WalletClient } from '../../wallet/index.ts';
import { startPartnerStack, type PartnerStack } from '../support/partner-stack.ts';
import { expectProgress, settlementRunKit, timeZone, tuning } from '../support/settlement-run-kit.ts';
import { stackActivities } from '../support/stack-activities.ts';
import { waitUntil } from '../support/wait-for.ts';

let stack: PartnerStack;
beforeAll(async () => {
  stack = await startPartnerStack({ settlements: tuning });
  await stack.startWorker();
});
afterEach(async () => {
  await stack.admin.clearFaults();
});
afterAll(() => stack.close());

const { call, settled, freshDay, plant, failedRetrievesFrom } = settlementRunKit(() => stack);
/** A retrieve's failure as the wallet client throws it. */
const retrieveError = (httpStatus: number, code: string, outcome: 'retryable' | 'unknown' | 'rejected') =>
  new WalletError({ operation: 'transfers.retrieve', httpStatus, code, outcome, requestReferenceNo: randomUUID() });

/**
 * A run of a day of 20 fundings, and its settleItems as this process runs it (the test makes each attempt, as Temporal
 * would), one page of 20: `failure` answers a retrieve with an error, or null for the wallet's own answer; `database`,
 * the activities' own (the stack's by default).
 */
async function pageSettledHere(
  failure: (transferId: string) => WalletError | null | Promise<WalletError | null>,
  database: PartnerStack['database'] = stack.database,
  fundings = 20,
) {
  const day = await freshDay();
  await plant(day, fundings);
  const { run } = await createSettlementRuns(stack.database).start({
    date: day,
    timeZone,
    wholeDay: true,
    requestedBy: 'settlement-run-faults',
  });
  const wallet: WalletClient = {
    ...stack.wallet,
    retrieveTransfer: async (transferId) => {
      const error = await failure(transferId);
      if (error) throw error;
      return stack.wallet.retrieveTransfer(transferId);
    },
  };
  const { settleItems } = stackActivities(stack, { wallet, database });
  const input = {
    runId: run.id,
    side: 'fundings' as const,
    after: null,
    pageSize: 20,
    maxItems: 100,
    maxInFlight: 4,
    inFlight: 4,
  };
  /** An attempt as Temporal would make it: its number, and the last heartbeat of the attempt before it. */
  let details: unknown;
  const attempt = (number: number) => {
    const environment = new MockActivityEnvironment({ attempt: number, heartbeatDetails: details });
    environment.on('heartbeat', (beat: unknown) => {
      details = beat;
    });
    return environment.run(settleItems, input);
  };
  return { run, settleItems, input, attempt };
}

describe('a day settled by a durable run, when the wallet will not say what became of a transfer', () => {
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
    const garbled = failedRetrievesFrom(new Date());
    await stack.admin.setFaults([{ endpoint: 'transfers.retrieve', mode: 'garbage-body', rate: 1 }]);
    expectProgress(await call(`/ops/settlements/${day}`), day);
    // Every try of the first attempt answered with garbage; the next attempt comes 2 s after it failed.
    await waitUntil(garbled, (failed) => failed >= 9, 60_000, 50);
    await stack.admin.clearFaults();
    const report = await settled(day);
    expect(report.body).toMatchObject({ fundings: { matched: 3, missing: 0, mismatched: 0 } });
  });

  it('keeps what a page read when one of its transfers fails for good: the attempt tried again retrieves only that one', async () => {
    // The wallet fails every try of the page's first transfer (a 503: the attempt fails, and Temporal tries it again),
    // until it is told not to; every other retrieve is the wallet's own answer.
    const asked = new Map<string, number>();
    let victim: string | undefined;
    let failing = true;
    const { run, settleItems, input } = await pageSettledHere((transferId) => {
      asked.set(transferId, (asked.get(transferId) ?? 0) + 1);
      victim ??= transferId;
      return failing && transferId === victim ? retrieveError(503, 'SERVICE_UNAVAILABLE', 'retryable') : null;
    });
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

  it('starts no wallet call once its attempt has failed: a page whose ledger read fails leaves no retrieve running', async () => {
    // Found by a read: a page's retrieves ran beside its ledger read, and when that read failed (a pool time-out, a
    // reset connection) the attempt failed while its retrieves went on, every one of the page's, answers thrown away;
    // the attempt tried again retrieved them again beside them: the wallet saw twice the run's places.
    let readFails = true;
    const database = new Proxy(stack.database, {
      get(target, property, receiver) {
        const value: unknown = Reflect.get(target, property, receiver);
        if (property !== '$queryRaw' || typeof value !== 'function') return value;
        return async (strings: TemplateStringsArray, ...values: unknown[]) => {
          if (readFails && strings.join('?').includes('DISTINCT ON (t.reference)')) {
            readFails = false;
            await new Promise((resolve) => setTimeout(resolve, 150));
            throw new Error('the ledger read failed (a connection reset, as the test makes it)');
          }
          return (value as (...args: unknown[]) => unknown).call(target, strings, ...values);
        };
      },
    });
    const started: number[] = [];
    const { settleItems, input } = await pageSettledHere(async () => {
      started.push(Date.now());
      await new Promise((resolve) => setTimeout(resolve, 100));
      return null;
    }, database);
    const slowInput = { ...input, maxInFlight: 2, inFlight: 2 };
    await expect(new MockActivityEnvironment({ attempt: 1 }).run(settleItems, slowInput)).rejects.toThrow(
      /the ledger read failed/,
    );
    const failedAt = Date.now();
    const startedByThen = started.length;
    // Every retrieve of the page, 20 of them two at a time for 100 ms each, would have started within this wait.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect({ startedByThen, startedAfter: started.filter((at) => at > failedAt).length }).toEqual({
      startedByThen: expect.any(Number),
      startedAfter: 0,
    });
    expect(startedByThen).toBeLessThan(20);
    // The attempt tried again settles the whole page.
    expect(await new MockActivityEnvironment({ attempt: 2 }).run(settleItems, slowInput)).toMatchObject({
      done: true,
      stored: 20,
    });
  });

  it('counts a transfer’s garbled answers toward its line only when the page went through: garbling at large is waited out, one transfer’s own is said', async () => {
    // Every answer garbled (a proxy at large), then only the page's first transfer's (its own), then none.
    let garbling: 'all' | 'one' | 'none' = 'all';
    let victim: string | undefined;
    const { run, attempt } = await pageSettledHere((transferId) => {
      victim ??= transferId;
      return garbling === 'all' || (garbling === 'one' && transferId === victim)
        ? retrieveError(200, 'UNPARSABLE_RESPONSE', 'unknown')
        : null;
    });
    const lines = () =>
      stack.database.$queryRaw<Array<{ result: string; n: bigint }>>`
        SELECT result::text AS result, count(*) AS n FROM settlement_line WHERE run_id = ${run.id}::uuid GROUP BY result`;
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

  it('writes a line for one transfer the wallet answers 5xx every time, once the rest of the day was read for about five minutes of attempts: the day is not held up for good', async () => {
    let victim: string | undefined;
    const { run, attempt } = await pageSettledHere((transferId) => {
      victim ??= transferId;
      return transferId === victim ? retrieveError(500, 'HTTP_500', 'retryable') : null;
    });
    // Before: every attempt failed on it, for ever (a fresh run stopped on the same transfer): no report of the day.
    for (let number = 1; number <= 9; number += 1)
      await expect(attempt(number), `attempt ${number}`).rejects.toThrow(/HTTP_500/);
    expect(await attempt(10)).toMatchObject({ done: true });
    const lines = await stack.database.$queryRaw<Array<{ result: string; detail: string | null }>>`
      SELECT result::text AS result, detail FROM settlement_line WHERE run_id = ${run.id}::uuid ORDER BY result`;
    expect(lines.filter((line) => line.result === 'matched')).toHaveLength(19);
    expect(lines.filter((line) => line.result !== 'matched')).toEqual([
      {
        result: 'mismatched',
        detail: expect.stringMatching(/the wallet's record could not be read: HTTP_500 \(500\)/),
      },
    ]);
  });

  it('waits out a refusal of every transfer alike (a gateway’s 400 page at large): no line stored, where each was stored as mismatched', async () => {
    const { run, attempt } = await pageSettledHere(() => retrieveError(400, 'HTTP_400', 'rejected'));
    for (let number = 1; number <= 4; number += 1)
      await expect(attempt(number), `attempt ${number}`).rejects.toThrow(/HTTP_400/);
    expect(await stack.database.settlementLine.count({ where: { runId: run.id } })).toBe(0);
  });

  it('counts an attempt against the one transfer left of a page only while the wallet describes the others: the wallet away meanwhile is waited out, never that transfer’s line', async () => {
    let victim: string | undefined;
    let walletAway = false;
    const { run, attempt } = await pageSettledHere((transferId) => {
      victim ??= transferId;
      if (walletAway) return retrieveError(503, 'HTTP_503', 'retryable');
      return transferId === victim ? retrieveError(400, 'HTTP_400', 'rejected') : null;
    });
    const lines = async () =>
      Object.fromEntries(
        (
          await stack.database.$queryRaw<Array<{ result: string; n: bigint }>>`
            SELECT result::text AS result, count(*) AS n FROM settlement_line WHERE run_id = ${run.id}::uuid
            GROUP BY result`
        ).map((row) => [row.result, Number(row.n)]),
      );
    // The first attempt reads the other 19, and counts one against it; then the wallet is away for 4 attempts, past
    // the 3 its line needs.
    await expect(attempt(1)).rejects.toThrow(/HTTP_400/);
    walletAway = true;
    for (let number = 2; number <= 5; number += 1)
      await expect(attempt(number), `attempt ${number}`).rejects.toThrow(/HTTP_503/);
    // Before: those attempts counted against it (its page's others stored, the wallet's silence taken for its own), and
    // the third stored its line as `mismatched`.
    expect(await lines()).toEqual({ matched: 19 });
    // Back, and still refusing it alone: its own, counted from where it was, its line at the third such attempt.
    walletAway = false;
    await expect(attempt(6)).rejects.toThrow(/HTTP_400/);
    expect(await attempt(7)).toMatchObject({ done: true });
    expect(await lines()).toEqual({ matched: 19, mismatched: 1 });
  });

  it('stores no line for a transfer whose line is due in an attempt the wallet was away for: the outage is waited out, and the record read once it is back', async () => {
    let victim: string | undefined;
    let mode: 'victim' | 'away' | 'well' = 'victim';
    const { run, attempt } = await pageSettledHere((transferId) => {
      victim ??= transferId;
      if (mode === 'away') return retrieveError(400, 'HTTP_400', 'rejected');
      return mode === 'victim' && transferId === victim ? retrieveError(400, 'HTTP_400', 'rejected') : null;
    });
    const lines = async () =>
      Object.fromEntries(
        (
          await stack.database.$queryRaw<Array<{ result: string; n: bigint }>>`
            SELECT result::text AS result, count(*) AS n FROM settlement_line WHERE run_id = ${run.id}::uuid
            GROUP BY result`
        ).map((row) => [row.result, Number(row.n)]),
      );
    // Two attempts in which the wallet refuses it alone (the others read and stored in the first): two of the three.
    await expect(attempt(1)).rejects.toThrow(/HTTP_400/);
    await expect(attempt(2)).rejects.toThrow(/HTTP_400/);
    expect(await lines()).toEqual({ matched: 19 });
    // The third, its line's, meets a gateway's 400 page at large (the probe of a transfer read before refused too).
    // Before: its line was due before the page knew, stored `mismatched`, and the attempt passed.
    mode = 'away';
    await expect(attempt(3)).rejects.toThrow(/HTTP_400/);
    expect(await lines()).toEqual({ matched: 19 });
    // Back, and answering for it too: its record read, every line matched.
    mode = 'well';
    expect(await attempt(4)).toMatchObject({ done: true });
    expect(await lines()).toEqual({ matched: 20 });
  });

  it('asks the wallet about a transfer of an earlier page when the day’s last page holds one transfer alone: the wallet away meanwhile is waited out there too', async () => {
    // 21 fundings, pages of 20: the second page is the 21st alone, and none of its own was ever described.
    const seen = new Set<string>();
    let victim: string | undefined;
    let walletAway = false;
    let noRecordOfEarlier = false;
    const { run, attempt } = await pageSettledHere(
      (transferId) => {
        if (!seen.has(transferId)) {
          seen.add(transferId);
          if (seen.size === 21) victim = transferId;
        }
        if (walletAway) return retrieveError(400, 'HTTP_400', 'rejected');
        if (noRecordOfEarlier && transferId !== victim) return retrieveError(404, 'TRANSFER_NOT_FOUND', 'rejected');
        return transferId === victim ? retrieveError(400, 'HTTP_400', 'rejected') : null;
      },
      stack.database,
      21,
    );
    const lines = () => stack.database.settlementLine.count({ where: { runId: run.id } });
    await expect(attempt(1)).rejects.toThrow(/HTTP_400/);
    expect(victim).toBeDefined();
    expect(await lines()).toBe(20);
    // A gateway's 400 page at large for 4 attempts, past the 3 a line needs. Before: nothing of that page to ask, the
    // attempts counted against the 21st, and its line was stored `mismatched` while the wallet was away.
    walletAway = true;
    for (let number = 2; number <= 5; number += 1)
      await expect(attempt(number), `attempt ${number}`).rejects.toThrow(/HTTP_400/);
    expect(await lines()).toBe(20);
    // Back, still refusing the 21st alone, and saying it has no record of the transfers read before (asked about to
    // tell it is there): that is its own word, so the 21st's attempts count, and its line comes at the third. Found
    // by a second read: a probe's every failure was the wallet away, so a probe transfer failing for its own reasons
    // held the day for good.
    walletAway = false;
    noRecordOfEarlier = true;
    await expect(attempt(6)).rejects.toThrow(/HTTP_400/);
    expect(await attempt(7)).toMatchObject({ done: true });
    expect(await lines()).toBe(21);
  });
});
