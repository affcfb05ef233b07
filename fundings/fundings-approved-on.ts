// The fundings that became APPROVED on a day (in SETTLEMENT_TZ), for the day's settlement
// (ledger/settlement.ts): read from the funding table and its timeline, which this folder owns, a
// page at a time by keyset on the event that approved each (the partial index of APPROVED events by
// time, funding_event_approved_at_id_idx), so a day of any size is read in bounded pages.
import type { Prisma } from '../generated/prisma/client.ts';
import { fromNumeric } from '../domain/money.ts';
import type { Database } from '../lib/database.ts';
import { dayEventsAfter, type ApprovedFunding, type DayCursor, type SettlementDay } from '../ledger/settlement.ts';

/**
 * The day's fundings that are APPROVED, each once (by the first event of the day that approved it),
 * after `after` in the order of those events, at most `limit`; and where the next page starts.
 */
export async function fundingsApprovedOn(
  database: Database,
  day: SettlementDay,
  after: DayCursor | null,
  limit: number,
): Promise<{ items: ApprovedFunding[]; next: DayCursor | null }> {
  const { start, end, cursor } = dayEventsAfter(day, after);
  // The earlier event of the same funding is looked up among the funding's own events: its status compared as text,
  // which the partial index of the day's events by time cannot serve (an equality, with the page's own status, would
  // be carried over to it). Through that index, when the planner chose it, each row of a page walked the day's events
  // before it: a page at the end of a day of 100,000, some 50 million entries.
  const rows = await database.$queryRaw<
    Array<{
      event_id: bigint;
      at: Date;
      id: string;
      transfer_id: string | null;
      amount: Prisma.Decimal;
      currency: string;
    }>
  >`
    SELECT ev.id AS event_id, ev.at, f.id::text AS id, f.transfer_id, f.amount, f.currency
    FROM funding_event ev JOIN funding f ON f.id = ev.funding_id
    WHERE ev.status = 'APPROVED' AND ev.at >= ${start} AND ev.at < ${end} AND (ev.at, ev.id) > (${cursor.at}::timestamptz, ${cursor.eventId}::bigint)
      AND f.status = 'APPROVED'
      AND NOT EXISTS (
        SELECT 1 FROM funding_event earlier WHERE earlier.funding_id = ev.funding_id AND earlier.status::text = 'APPROVED'
          AND earlier.at >= ${start} AND (earlier.at, earlier.id) < (ev.at, ev.id))
    ORDER BY ev.at, ev.id
    LIMIT ${limit}`;
  const last = rows.at(-1);
  return {
    items: rows.map((row) => ({
      id: row.id,
      transferId: row.transfer_id,
      amount: fromNumeric(row.amount),
      currency: row.currency,
    })),
    next: rows.length === limit && last ? { at: last.at.toISOString(), eventId: last.event_id.toString() } : null,
  };
}

/** How many fundings fundingsApprovedOn pages through for the day. */
export async function countFundingsApprovedOn(database: Database, day: SettlementDay): Promise<number> {
  const { start, end } = dayEventsAfter(day, null);
  const rows = await database.$queryRaw<Array<{ n: bigint }>>`
    SELECT count(DISTINCT ev.funding_id) AS n
    FROM funding_event ev JOIN funding f ON f.id = ev.funding_id
    WHERE ev.status = 'APPROVED' AND ev.at >= ${start} AND ev.at < ${end} AND f.status = 'APPROVED'`;
  return Number(rows[0]?.n ?? 0n);
}
