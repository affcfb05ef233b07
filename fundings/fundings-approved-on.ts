// The fundings that became APPROVED on a day (in SETTLEMENT_TZ), for the day's settlement
// (ledger/settlement.ts): read from the funding table and its timeline, which this folder owns.
import type { Prisma } from '../generated/prisma/client.ts';
import { fromNumeric } from '../domain/money.ts';
import type { Database } from '../lib/database.ts';
import type { ApprovedFunding, SettlementDay } from '../ledger/settlement.ts';

export async function fundingsApprovedOn(database: Database, day: SettlementDay): Promise<ApprovedFunding[]> {
  const rows = await database.$queryRaw<Array<{ id: string; transfer_id: string | null; amount: Prisma.Decimal; currency: string }>>`
    SELECT f.id::text AS id, f.transfer_id, f.amount, f.currency
    FROM funding f
    WHERE f.status = 'APPROVED' AND EXISTS (
      SELECT 1 FROM funding_event ev WHERE ev.funding_id = f.id AND ev.status = 'APPROVED'
        AND ev.at >= (${day.start}::timestamp AT TIME ZONE ${day.timeZone}) AND ev.at < (${day.end}::timestamp AT TIME ZONE ${day.timeZone}))
    ORDER BY f.id`;
  return rows.map((row) => ({ id: row.id, transferId: row.transfer_id, amount: fromNumeric(row.amount), currency: row.currency }));
}
