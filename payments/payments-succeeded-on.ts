// The payments that became SUCCEEDED on a day (in SETTLEMENT_TZ), for the day's settlement
// (ledger/settlement.ts): read from the payment table and its timeline, which this folder owns.
import type { Prisma } from '../generated/prisma/client.ts';
import { fromNumeric } from '../domain/money.ts';
import type { Database } from '../lib/database.ts';
import type { SettlementDay, SucceededPayment } from '../ledger/settlement.ts';

export async function paymentsSucceededOn(database: Database, day: SettlementDay): Promise<SucceededPayment[]> {
  const rows = await database.$queryRaw<Array<{ id: string; wallet_payment_id: string | null; amount: Prisma.Decimal; currency: string; resolved_by: string | null }>>`
    SELECT p.id::text AS id, p.wallet_payment_id, p.amount, p.currency, p.resolved_by
    FROM payment p
    WHERE p.status = 'SUCCEEDED' AND EXISTS (
      SELECT 1 FROM payment_event ev WHERE ev.payment_id = p.id AND ev.status = 'SUCCEEDED'
        AND ev.at >= (${day.start}::timestamp AT TIME ZONE ${day.timeZone}) AND ev.at < (${day.end}::timestamp AT TIME ZONE ${day.timeZone}))
    ORDER BY p.id`;
  return rows.map((row) => ({ id: row.id, walletPaymentId: row.wallet_payment_id, amount: fromNumeric(row.amount), currency: row.currency, resolvedBy: row.resolved_by }));
}
