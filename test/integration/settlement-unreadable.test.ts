// A day's settlement run (contract-decisions section 10) when the wallet will not say what became of one transfer, on
// the real stack: the settleDay workflow on a Temporal worker, PostgreSQL and the sandbox wallet over HTTP, and a
// page's attempts made here as Temporal would make them. A transfer the wallet refuses each time, or answers 5xx each
// time, gets a line saying so and the day goes on; a page keeps what it read when one transfer fails, and an attempt
// that failed calls the wallet no more. The wallet failing at large is settlement-wallet-away.test.ts's; the run's
// other faults settlement-run-faults.test.ts's, its cases settlement-runs.test.ts's: files of their own.
import { MockActivityEnvironment } from '@temporalio/testing';
import { describe, expect, it } from 'vitest';
import { settlementRunKit, useSettlementStack } from '../support/settlement-run-kit.ts';
import { retrieveError, settledPageKit } from '../support/settled-page-kit.ts';

const stack = useSettlementStack();

const { settled, freshDay, plant } = settlementRunKit(stack);
const { pageSettledHere } = settledPageKit(stack);

/** How many of a run's lines have each result, as [result, count] sorted by result. */
async function resultsOf(runId: string): Promise<Array<[string, number]>> {
  const lines = await stack().database.settlementLine.groupBy({ by: ['result'], where: { runId }, _count: true });
  return lines.map((line): [string, number] => [line.result, line._count]).sort();
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
      await stack().admin.setFaults([fault]);
      const report = await settled(day);
      expect(report.body, fault.mode).toMatchObject({ fundings: { matched: 0, missing: 0, mismatched: 3 } });
      for (const item of report.body.items as Array<Record<string, unknown>>)
        expect(item, fault.mode).toMatchObject({
          result: 'mismatched',
          walletStatus: null,
          walletAmount: null,
          detail: expect.stringContaining("the wallet's record could not be read"),
        });
      await stack().admin.clearFaults();
    }
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
          await stack().database.$queryRaw<Array<{ n: bigint }>>`
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
    const database = new Proxy(stack().database, {
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
    const lines = await stack().database.$queryRaw<Array<{ result: string; detail: string | null }>>`
      SELECT result::text AS result, detail FROM settlement_line WHERE run_id = ${run.id}::uuid ORDER BY result`;
    expect(lines.filter((line) => line.result === 'matched')).toHaveLength(19);
    expect(lines.filter((line) => line.result !== 'matched')).toEqual([
      {
        result: 'mismatched',
        detail: expect.stringMatching(/the wallet's record could not be read: HTTP_500 \(500\)/),
      },
    ]);
  });

  it('finishes a page holding more transfers that each refuse to be read, every attempt, than an attempt asks for at once: their lines say so, the rest are matched', async () => {
    // Twelve of the page's transfers are refused each time: the first twelve asked for (an attempt asks for four at
    // once, and starts no more once four have failed).
    const victims = new Set<string>();
    const { run, attempt } = await pageSettledHere((transferId) => {
      if (victims.size < 12) victims.add(transferId);
      return victims.has(transferId) ? retrieveError(400, 'HTTP_400', 'rejected') : null;
    });
    // The first two attempts stop on four of them each (as a wallet failing at large); from the third the rest of the
    // page is asked for first, then they: their refusals are their own, and count from there, as many at a time as an
    // attempt asks for before it stops, each one's line at its third counted attempt. Every attempt before the last
    // fails (the page is not done while one of its transfers was not asked for).
    const outcomes: string[] = [];
    for (let number = 1; number <= 12 && outcomes.at(-1) !== 'done'; number += 1)
      outcomes.push(
        await attempt(number).then(
          (outcome) => ((outcome as { done?: boolean }).done ? 'done' : 'more'),
          (error: unknown) => (/HTTP_400/.test(String(error)) ? 'refused' : String(error)),
        ),
      );
    expect(outcomes.at(-1)).toBe('done');
    expect(
      outcomes.slice(0, -1).every((outcome) => outcome === 'refused'),
      outcomes.join(),
    ).toBe(true);
    // Before: each attempt stopped on the same four, taken for the wallet away, and the day was never settled; and
    // then, once the first of them had their lines, the page went on with the others never asked for (a report short
    // of them).
    const lines = await stack().database.$queryRaw<Array<{ result: string; detail: string | null; n: bigint }>>`
      SELECT result::text AS result, left(detail, 60) AS detail, count(*) AS n FROM settlement_line
      WHERE run_id = ${run.id}::uuid GROUP BY 1, 2 ORDER BY 1`;
    expect(lines.map((line) => ({ ...line, n: Number(line.n) }))).toEqual([
      { result: 'matched', detail: null, n: 8 },
      { result: 'mismatched', detail: expect.stringContaining("the wallet's record could not be read"), n: 12 },
    ]);
  });

  it('waits out a 429 to the check that the wallet answers, and asks again: a transfer refused on its own still gets its line while the wallet rate-limits the run', async () => {
    // The page's first transfer is refused each time. From the second attempt, the check that the wallet answers (a
    // transfer of the page it described before) is refused once an attempt with 429: the wallet there, asking the run
    // to wait.
    let victim: string | undefined;
    let current = 1;
    const limitedIn = new Set<number>();
    const { run, attempt } = await pageSettledHere((transferId) => {
      victim ??= transferId;
      if (transferId === victim) return retrieveError(400, 'HTTP_400', 'rejected');
      if (current > 1 && !limitedIn.has(current)) {
        limitedIn.add(current);
        return retrieveError(429, 'RATE_LIMITED', 'retryable');
      }
      return null;
    });
    const outcomes: string[] = [];
    for (current = 1; current <= 6 && outcomes.at(-1) !== 'done'; current += 1)
      outcomes.push(
        await attempt(current).then(
          (outcome) => ((outcome as { done?: boolean }).done ? 'done' : 'more'),
          (error: unknown) => (/HTTP_400/.test(String(error)) ? 'refused' : String(error)),
        ),
      );
    // Before: the check went round the run's gate and took its 429 for the wallet away, so no attempt counted and the
    // day was never settled.
    expect(outcomes).toEqual(['refused', 'refused', 'done']);
    expect([...limitedIn]).toEqual([2, 3]);
    expect(await resultsOf(run.id)).toEqual([
      ['matched', 19],
      ['mismatched', 1],
    ]);
  });

  it('counts no attempt Temporal cancelled toward a transfer’s line: its refusals in it are asked about again', async () => {
    // The page's first transfer is refused each time; its second is answered only once the attempt is cancelled.
    const asked: string[] = [];
    let cancel = () => {};
    const cancelled = new Promise<void>((resolve) => (cancel = resolve));
    let cancelling = true;
    const calls = new Map<string, number>();
    const { run, attempt } = await pageSettledHere(async (transferId) => {
      if (!asked.includes(transferId)) asked.push(transferId);
      const call = (calls.get(transferId) ?? 0) + 1;
      calls.set(transferId, call);
      if (transferId === asked[0]) {
        // Its third try, the last of the attempt: then Temporal cancels the attempt.
        if (cancelling && call === 3) setTimeout(cancel, 50);
        return retrieveError(400, 'HTTP_400', 'rejected');
      }
      if (cancelling && transferId === asked[1]) await cancelled;
      return null;
    });
    await expect(attempt(1, cancelled)).rejects.toThrow();
    cancelling = false;
    // Two attempts more with it refused alone. Before: the cancelled attempt counted, and the third stored its line.
    for (let number = 2; number <= 3; number += 1)
      await expect(attempt(number), `attempt ${number}`).rejects.toThrow(/HTTP_400/);
    expect(await attempt(4)).toMatchObject({ done: true });
    expect(await resultsOf(run.id)).toEqual([
      ['matched', 19],
      ['mismatched', 1],
    ]);
  });
});
