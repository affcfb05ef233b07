// Funding limits (contract-decisions section 10): per funding (FUNDING_MIN, FUNDING_MAX) and per
// partner user drawing on their own balance (USER_DAILY_AMOUNT, USER_DAILY_COUNT per day in
// SETTLEMENT_TZ, USER_PER_MINUTE). Checked inside the transaction that would store the funding,
// after a per-user advisory lock, so concurrent requests of one user are counted one after the
// other: a refusal stores nothing. Treasury fundings (ops) are bounded per funding and by
// TREASURY_LIMIT, not per user.
import type { Prisma } from '../generated/prisma/client.ts';
import { money, type FundingRefusalCode } from '../domain/ledger.ts';
import { thousandthsOf, type LedgerClient } from './ledger.ts';

export interface FundingLimits {
  /** Thousandths. */
  min: bigint;
  max: bigint;
  userDailyAmount: bigint;
  userDailyCount: number;
  userPerMinute: number;
  /** The day of the daily limits (SETTLEMENT_TZ). */
  timeZone: string;
}

/** What a real partner would start with (PHP): every one configurable. */
export const defaultFundingLimits: FundingLimits = {
  min: 1_000n, // 1.00
  max: 50_000_000n, // 50,000.00
  userDailyAmount: 100_000_000n, // 100,000.00
  userDailyCount: 20,
  userPerMinute: 5,
  timeZone: 'Asia/Manila',
};

/** A refused funding: which limit, and what is left. */
export class LimitRefusal extends Error {
  constructor(
    readonly code: Exclude<FundingRefusalCode, 'INSUFFICIENT_FUNDS'>,
    readonly detail: string,
  ) {
    super(detail);
    this.name = 'LimitRefusal';
  }
}

/** What a partner user may still withdraw today (for the money page and refusals). */
export interface UserHeadroom {
  dailyAmountLeft: bigint;
  dailyCountLeft: number;
  perMinuteLeft: number;
}

/** Serialises one partner user's fundings: held until the caller's transaction ends. */
export async function lockPartnerUser(tx: Prisma.TransactionClient, partnerUserId: string): Promise<void> {
  await tx.$queryRaw`SELECT 1 AS locked FROM pg_advisory_xact_lock(hashtextextended(${`walletflow:funding-limits:${partnerUserId}`}, 0))`;
}

/** Today's (SETTLEMENT_TZ) and the last minute's fundings of a user drawing on their balance; refused ones do not count toward the day. */
export async function userHeadroom(db: LedgerClient, limits: FundingLimits, partnerUserId: string, excludeFundingId?: string): Promise<UserHeadroom> {
  const rows = await db.$queryRaw<Array<{ day_count: bigint; day_amount: Prisma.Decimal | null; minute_count: bigint }>>`
    SELECT COUNT(*) FILTER (WHERE status NOT IN ('DECLINED', 'REJECTED', 'FAILED') AND created_at >= (date_trunc('day', now() AT TIME ZONE ${limits.timeZone}) AT TIME ZONE ${limits.timeZone})) AS day_count,
           SUM(amount) FILTER (WHERE status NOT IN ('DECLINED', 'REJECTED', 'FAILED') AND created_at >= (date_trunc('day', now() AT TIME ZONE ${limits.timeZone}) AT TIME ZONE ${limits.timeZone})) AS day_amount,
           COUNT(*) FILTER (WHERE created_at >= now() - interval '1 minute') AS minute_count
    FROM funding WHERE source_partner_user_id = ${partnerUserId} AND created_at >= now() - interval '2 days'
      AND id <> ${excludeFundingId ?? '00000000-0000-0000-0000-000000000000'}::uuid`;
  const row = rows[0];
  const dayAmount = row?.day_amount ? thousandthsOf(row.day_amount) : 0n;
  return {
    dailyAmountLeft: limits.userDailyAmount - dayAmount > 0n ? limits.userDailyAmount - dayAmount : 0n,
    dailyCountLeft: Math.max(0, limits.userDailyCount - Number(row?.day_count ?? 0n)),
    perMinuteLeft: Math.max(0, limits.userPerMinute - Number(row?.minute_count ?? 0n)),
  };
}

/** Per funding: refuses an amount outside FUNDING_MIN..FUNDING_MAX. */
export function checkFundingAmount(limits: FundingLimits, amount: bigint, currency: string): void {
  if (amount < limits.min) throw new LimitRefusal('AMOUNT_TOO_SMALL', `FUNDING_MIN: a funding must be at least ${money(limits.min, currency).value} ${currency}`);
  if (amount > limits.max) throw new LimitRefusal('AMOUNT_TOO_LARGE', `FUNDING_MAX: a funding may be at most ${money(limits.max, currency).value} ${currency}`);
}

/**
 * Per user, inside the storing transaction and after lockPartnerUser: the new funding must fit
 * today's count and amount and the minute's count (it is not stored yet when this runs).
 */
export async function checkUserLimits(
  tx: Prisma.TransactionClient,
  limits: FundingLimits,
  partnerUserId: string,
  amount: bigint,
  currency: string,
  newFundingId: string,
): Promise<void> {
  const left = await userHeadroom(tx, limits, partnerUserId, newFundingId);
  if (left.perMinuteLeft < 1) {
    throw new LimitRefusal('VELOCITY_LIMIT_EXCEEDED', `USER_PER_MINUTE: at most ${limits.userPerMinute} withdrawals a minute; try again in a minute`);
  }
  if (left.dailyCountLeft < 1) {
    throw new LimitRefusal('DAILY_LIMIT_EXCEEDED', `USER_DAILY_COUNT: at most ${limits.userDailyCount} withdrawals a day; none left today`);
  }
  if (amount > left.dailyAmountLeft) {
    throw new LimitRefusal(
      'DAILY_LIMIT_EXCEEDED',
      `USER_DAILY_AMOUNT: at most ${money(limits.userDailyAmount, currency).value} ${currency} a day; ${money(left.dailyAmountLeft, currency).value} ${currency} left today`,
    );
  }
}
