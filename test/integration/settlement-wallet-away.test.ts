// A day's settlement run (contract-decisions section 10) when the wallet, or a proxy before it, fails at large for a
// while, on the real stack (as settlement-unreadable.test.ts): garbled answers for a while or at large, a gateway's 400
// page, the wallet away while one transfer of a page is left: asked again and waited out, never stored as a false
// line; a transfer's own failure is told from the wallet's by asking about another it described.
import { describe, expect, it } from 'vitest';
import { expectProgress, settlementRunKit, useSettlementStack } from '../support/settlement-run-kit.ts';
import { waitUntil } from '../support/wait-for.ts';
import { retrieveError, settledPageKit } from '../support/settled-page-kit.ts';

const stack = useSettlementStack();

const { call, settled, freshDay, plant, failedRetrievesFrom } = settlementRunKit(stack);
const { pageSettledHere } = settledPageKit(stack);

/** A run's stored lines, counted by result. */
const linesByResult = async (runId: string) =>
  Object.fromEntries(
    (
      await stack().database.$queryRaw<Array<{ result: string; n: bigint }>>`
        SELECT result::text AS result, count(*) AS n FROM settlement_line WHERE run_id = ${runId}::uuid GROUP BY result`
    ).map((row) => [row.result, Number(row.n)]),
  );

describe('a day settled by a durable run, when the wallet fails at large for a while', () => {
  it('asks again in later attempts for transfers whose answers were no record of them for a while (a proxy’s burst): every line matched', async () => {
    // Before: three tries within about a second and a half, then the line said the record could not be read, for good.
    const day = await freshDay();
    await plant(day, 3);
    const garbled = failedRetrievesFrom(new Date());
    await stack().admin.setFaults([{ endpoint: 'transfers.retrieve', mode: 'garbage-body', rate: 1 }]);
    expectProgress(await call(`/ops/settlements/${day}`), day);
    // Every try of the first attempt answered with garbage; the next attempt comes 2 s after it failed.
    await waitUntil(garbled, (failed) => failed >= 9, 60_000, 50);
    await stack().admin.clearFaults();
    const report = await settled(day);
    expect(report.body).toMatchObject({ fundings: { matched: 3, missing: 0, mismatched: 0 } });
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
    const lines = () => linesByResult(run.id);
    // Three attempts with every answer garbled: each page stops on its failures, and nothing is stored (before: the
    // third stored its first transfers' lines as `mismatched`, and so on, group by group).
    for (let number = 1; number <= 3; number += 1)
      await expect(attempt(number), `attempt ${number}`).rejects.toThrow(/UNPARSABLE_RESPONSE/);
    expect(await lines()).toEqual({});
    // Then one transfer's own, every time: the page goes through, and its line says so after three attempts.
    garbling = 'one';
    for (let number = 4; number <= 5; number += 1)
      await expect(attempt(number), `attempt ${number}`).rejects.toThrow(/UNPARSABLE_RESPONSE/);
    expect(await attempt(6)).toMatchObject({ done: true });
    expect(await lines()).toEqual({ matched: 19, mismatched: 1 });
  });

  it('waits out a refusal of every transfer alike (a gateway’s 400 page at large): no line stored, where each was stored as mismatched', async () => {
    const { run, attempt } = await pageSettledHere(() => retrieveError(400, 'HTTP_400', 'rejected'));
    // Seven attempts: past those that mark every transfer of the page as failed before (four or more an attempt), after
    // which their failures are no longer taken for the wallet's at large by their number alone.
    for (let number = 1; number <= 7; number += 1)
      await expect(attempt(number), `attempt ${number}`).rejects.toThrow(/HTTP_400/);
    expect(await stack().database.settlementLine.count({ where: { runId: run.id } })).toBe(0);
  });

  it('counts an attempt against the one transfer left of a page only while the wallet describes the others: the wallet away meanwhile is waited out, never that transfer’s line', async () => {
    let victim: string | undefined;
    let walletAway = false;
    const { run, attempt } = await pageSettledHere((transferId) => {
      victim ??= transferId;
      if (walletAway) return retrieveError(503, 'HTTP_503', 'retryable');
      return transferId === victim ? retrieveError(400, 'HTTP_400', 'rejected') : null;
    });
    const lines = () => linesByResult(run.id);
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
    const lines = () => linesByResult(run.id);
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
      stack().database,
      21,
    );
    const lines = () => stack().database.settlementLine.count({ where: { runId: run.id } });
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
