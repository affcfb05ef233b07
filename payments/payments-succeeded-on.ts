// The payments that became SUCCEEDED on a day (in SETTLEMENT_TZ), for the day's settlement
// (ledger/settlement.ts): read from the payment table and its timeline, which this folder owns, a
// page at a time by keyset on the event that made each SUCCEEDED (the partial index of SUCCEEDED
// events by time, payment_event_succeeded_at_id_idx).
import type { Prisma } from '../generated/prisma/client.ts';
import { fromNumeric } from '../domain/money.ts';
import type { Database } from '../lib/database.ts';
import { dayEventsAfter, type DayCursor, type SettlementDay, type SucceededPayment } from '../ledger/settlement.ts';

/**
 * The day's payments that are SUCCEEDED, each once (by the first event of the day that made it
 * so), after `after` in the order of those events, at most `limit`; and where the next page starts.
 */
export async function paymentsSucceededOn(
  database: Database,
  day: SettlementDay,
  after: DayCursor | null,
  limit: number,
): Promise<{ items: SucceededPayment[]; next: DayCursor | null }> {
  const { start, end, cursor } = dayEventsAfter(day, after);
  // The earlier event of the same payment is looked up among the payment's own events: its status compared as text,
  // which the partial index of the day's events by time cannot serve (an equality, with the page's own status, would
  // be carried over to it). Through that index, when the planner chose it, each row of a page walked the day's events
  // before it: a page at the end of a day of 100,000, some 50 million entries.
  const rows = await database.$queryRaw<
    Array<{
      event_id: bigint;
      at: Date;
      id: string;
      wallet_payment_id: string | null;
      amount: Prisma.Decimal;
      currency: string;
      resolved_by: string | null;
      request_reference_no: string | null;
    }>
  >`
    SELECT ev.id AS event_id, ev.at, p.id::text AS id, p.wallet_payment_id, p.amount, p.currency, p.resolved_by,
      ev.request_reference_no
    FROM payment_event ev JOIN payment p ON p.id = ev.payment_id
    WHERE ev.status = 'SUCCEEDED' AND ev.at >= ${start} AND ev.at < ${end} AND (ev.at, ev.id) > (${cursor.at}::timestamptz, ${cursor.eventId}::bigint)
      AND p.status = 'SUCCEEDED'
      AND NOT EXISTS (
        SELECT 1 FROM payment_event earlier WHERE earlier.payment_id = ev.payment_id AND earlier.status::text = 'SUCCEEDED'
          AND earlier.at >= ${start} AND (earlier.at, earlier.id) < (ev.at, ev.id))
    ORDER BY ev.at, ev.id
    LIMIT ${limit}`;
  const last = rows.at(-1);
  return {
    items: rows.map((row) => ({
      id: row.id,
      walletPaymentId: row.wallet_payment_id,
      amount: fromNumeric(row.amount),
      currency: row.currency,
      resolvedBy: row.resolved_by,
      succeededBy: row.request_reference_no,
    })),
    next: rows.length === limit && last ? { at: last.at.toISOString(), eventId: last.event_id.toString() } : null,
  };
}

/** How many payments paymentsSucceededOn pages through for the day. */
export async function countPaymentsSucceededOn(database: Database, day: SettlementDay): Promise<number> {
  const { start, end } = dayEventsAfter(day, null);
  const rows = await database.$queryRaw<Array<{ n: bigint }>>`
    SELECT count(DISTINCT ev.payment_id) AS n
    FROM payment_event ev JOIN payment p ON p.id = ev.payment_id
    WHERE ev.status = 'SUCCEEDED' AND ev.at >= ${start} AND ev.at < ${end} AND p.status = 'SUCCEEDED'`;
  return Number(rows[0]?.n ?? 0n);
}
