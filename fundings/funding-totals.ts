// What the ops console's home shows of fundings: those requested on a day (SETTLEMENT_TZ) counted
// and summed by state, and how many wait in review. Reads of the funding table and the batches'
// tallies, offered to the API.
import { dayWindow, type SettlementDay } from '../ledger/settlement.ts';
import { withoutParallelWorkers, type Database } from '../lib/database.ts';
import type { FundingStatus } from '../domain/funding.ts';
import { fromNumeric, type StatusTotal } from '../domain/money.ts';

/**
 * Fundings requested on `day`, by state and currency: those requested one by one from the
 * (created_at) index of fundings outside a batch, and a batch's items from its tally
 * (funding_batch_tally) for each batch stored that day (its items are stored with it, in its
 * transaction: they share its created_at), a cancelled item counted as FAILED. A 100,000-item batch
 * stored today is a few rows here, not 100,000 index entries.
 */
export async function fundingTotalsOn(
  database: Database,
  day: SettlementDay,
): Promise<Array<StatusTotal<FundingStatus>>> {
  // The partial index of fundings outside a batch and the tallies of the day's batches, without parallel workers
  // (lib/database.ts).
  const { start, end } = dayWindow(day);
  const rows = await withoutParallelWorkers(
    database,
    (read) => read.$queryRaw<Array<{ status: FundingStatus; currency: string; count: bigint; amount: string }>>`
      WITH day AS (SELECT ${start} AS start, ${end} AS "end"),
      counted AS (
        SELECT f.status::text AS status, f.currency, COUNT(*)::bigint AS count, COALESCE(SUM(f.amount), 0) AS amount
        FROM funding f, day WHERE f.batch_id IS NULL AND f.created_at >= day.start AND f.created_at < day."end"
        GROUP BY 1, 2
        UNION ALL
        SELECT CASE WHEN t.status = 'CANCELLED' THEN 'FAILED' ELSE t.status END, b.currency, t.count, t.amount
        FROM funding_batch b JOIN funding_batch_tally t ON t.batch_id = b.id, day
        WHERE b.created_at >= day.start AND b.created_at < day."end")
      SELECT status, currency, SUM(count)::bigint AS count, SUM(amount)::text AS amount FROM counted
      GROUP BY status, currency HAVING SUM(count) > 0 ORDER BY status, currency`,
  );
  return rows.map((row) => ({
    status: row.status,
    currency: row.currency,
    count: Number(row.count),
    amount: fromNumeric(row.amount),
  }));
}

/** Fundings waiting for a person's resolve (NEEDS_REVIEW). */
export const fundingsInReview = (database: Database): Promise<number> =>
  database.funding.count({ where: { status: 'NEEDS_REVIEW' } });
