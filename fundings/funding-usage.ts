// What a partner user has drawn on their own balance, read from the funding table for the limits'
// policy (ledger/limits.ts): today's count and amount in SETTLEMENT_TZ and the last minute's count
// (a batch is one request: its items count toward the day, not the minute).
// Refused fundings do not count toward the day.
import type { Prisma } from '../generated/prisma/client.ts';
import type { UserUsage } from '../ledger/limits.ts';
import { fromNumeric } from '../domain/money.ts';
import type { Database } from '../lib/database.ts';
import { settlementDayOf } from '../ledger/settlement.ts';

/** `excludeFundingId`: the funding being stored, counted as "this one", not twice. */
export async function userUsage(
  db: Prisma.TransactionClient | Database,
  partnerUserId: string,
  timeZone: string,
  excludeFundingId?: string,
): Promise<UserUsage> {
  // Which day it is, the database's clock says (it stamps created_at, and the minute below is by it too); where each
  // day begins, Node's time zone data (ledger/settlement.ts, as every read of a day): the days around this process's
  // today, the latest begun by now(). A process whose clock is ahead by a moment at midnight counts today all the same.
  const today = settlementDayOf(new Date(), timeZone);
  const yesterday = settlementDayOf(new Date(today.startsAt.getTime() - 1), timeZone);
  const [a, b, c] = [yesterday.startsAt, today.startsAt, today.endsAt].map((at) => at.toISOString());
  const rows = await db.$queryRaw<
    Array<{ day_count: bigint; day_amount: Prisma.Decimal | null; minute_count: bigint }>
  >`
    WITH day AS (
      SELECT COALESCE(max(s), now() - interval '1 day') AS start
      FROM (VALUES (${a}::timestamptz), (${b}::timestamptz), (${c}::timestamptz)) v (s) WHERE s <= now())
    SELECT COUNT(*) FILTER (WHERE status NOT IN ('DECLINED', 'REJECTED', 'FAILED') AND created_at >= day.start) AS day_count,
           SUM(amount) FILTER (WHERE status NOT IN ('DECLINED', 'REJECTED', 'FAILED') AND created_at >= day.start) AS day_amount,
           COUNT(*) FILTER (WHERE created_at >= now() - interval '1 minute' AND batch_id IS NULL) AS minute_count
    FROM funding, day WHERE source_partner_user_id = ${partnerUserId} AND created_at >= now() - interval '2 days'
      AND id <> ${excludeFundingId ?? '00000000-0000-0000-0000-000000000000'}::uuid`;
  const row = rows[0];
  return {
    dayCount: Number(row?.day_count ?? 0n),
    dayAmount: row?.day_amount ? fromNumeric(row.day_amount) : 0n,
    minuteCount: Number(row?.minute_count ?? 0n),
  };
}
