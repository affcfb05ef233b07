// What the ops console's home shows of payments: those taken on a day (SETTLEMENT_TZ) counted and
// summed by state, and how many wait in review. Reads of the payment table, offered to the API.
import { dayWindow, type SettlementDay } from '../ledger/settlement.ts';
import type { Database } from '../lib/database.ts';
import type { PaymentStatus } from '../domain/payment.ts';
import { fromNumeric, type StatusTotal } from '../domain/money.ts';

/** Payments requested on `day`, by state and currency. */
export async function paymentTotalsOn(
  database: Database,
  day: SettlementDay,
): Promise<Array<StatusTotal<PaymentStatus>>> {
  const { start, end } = dayWindow(day);
  const rows = await database.$queryRaw<
    Array<{ status: PaymentStatus; currency: string; count: bigint; amount: string }>
  >`
    SELECT status::text AS status, currency, COUNT(*)::bigint AS count, COALESCE(SUM(amount), 0)::text AS amount FROM payment
    WHERE created_at >= ${start} AND created_at < ${end}
    GROUP BY status, currency ORDER BY status, currency`;
  return rows.map((row) => ({
    status: row.status,
    currency: row.currency,
    count: Number(row.count),
    amount: fromNumeric(row.amount),
  }));
}

/** Payments waiting for a person's resolve (NEEDS_REVIEW). */
export const paymentsInReview = (database: Database): Promise<number> =>
  database.payment.count({ where: { status: 'NEEDS_REVIEW' } });
