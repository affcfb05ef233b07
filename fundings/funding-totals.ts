// What the ops console's home shows of fundings: those requested on a day (SETTLEMENT_TZ) counted
// and summed by state, and how many wait in review. Reads of the funding table, offered to the API.
import type { SettlementDay } from '../ledger/settlement.ts';
import { withoutParallelWorkers, type Database } from '../lib/database.ts';
import type { FundingStatus } from '../domain/funding.ts';
import { fromNumeric, type StatusTotal } from '../domain/money.ts';

/** Fundings requested on `day`, by state and currency. */
export async function fundingTotalsOn(database: Database, day: SettlementDay): Promise<Array<StatusTotal<FundingStatus>>> {
  // The (created_at, id, status, currency, amount) index alone, without parallel workers (lib/database.ts).
  const rows = await withoutParallelWorkers(
    database,
    (read) => read.$queryRaw<Array<{ status: FundingStatus; currency: string; count: bigint; amount: string }>>`
      SELECT status::text AS status, currency, COUNT(*)::bigint AS count, COALESCE(SUM(amount), 0)::text AS amount FROM funding
      WHERE created_at >= (${day.start}::timestamp AT TIME ZONE ${day.timeZone}) AND created_at < (${day.end}::timestamp AT TIME ZONE ${day.timeZone})
      GROUP BY status, currency ORDER BY status, currency`,
  );
  return rows.map((row) => ({ status: row.status, currency: row.currency, count: Number(row.count), amount: fromNumeric(row.amount) }));
}

/** Fundings waiting for a person's resolve (NEEDS_REVIEW). */
export const fundingsInReview = (database: Database): Promise<number> => database.funding.count({ where: { status: 'NEEDS_REVIEW' } });
