// Funding limits (contract-decisions section 10): per funding (FUNDING_MIN, FUNDING_MAX) and per
// partner user drawing on their own balance (USER_DAILY_AMOUNT, USER_DAILY_COUNT per day in
// SETTLEMENT_TZ, USER_PER_MINUTE). The policy only: what a user has drawn is read by the funding
// record (fundings/funding-usage.ts), inside the transaction that would store the funding and
// after a per-user advisory lock, so concurrent requests of one user are counted one after the
// other: a refusal stores nothing. Treasury fundings (ops) are bounded per funding and by
// TREASURY_LIMIT, not per user.
import type { Prisma } from '../generated/prisma/client.ts';
import type { FundingRefusalCode } from '../domain/ledger.ts';
import { formatAmount } from '../domain/money.ts';

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

/** What a partner user has drawn on their balance: today (SETTLEMENT_TZ) and in the last minute. */
export interface UserUsage {
  dayCount: number;
  /** Thousandths. */
  dayAmount: bigint;
  minuteCount: number;
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

/** What the limits leave a user who has drawn `usage`. */
export function headroomOf(limits: FundingLimits, usage: UserUsage): UserHeadroom {
  return {
    dailyAmountLeft: limits.userDailyAmount - usage.dayAmount > 0n ? limits.userDailyAmount - usage.dayAmount : 0n,
    dailyCountLeft: Math.max(0, limits.userDailyCount - usage.dayCount),
    perMinuteLeft: Math.max(0, limits.userPerMinute - usage.minuteCount),
  };
}

/** Per funding: refuses an amount outside FUNDING_MIN..FUNDING_MAX. */
export function checkFundingAmount(limits: FundingLimits, amount: bigint, currency: string): void {
  if (amount < limits.min)
    throw new LimitRefusal(
      'AMOUNT_TOO_SMALL',
      `FUNDING_MIN: a funding must be at least ${formatAmount(limits.min, currency)} ${currency}`,
    );
  if (amount > limits.max)
    throw new LimitRefusal(
      'AMOUNT_TOO_LARGE',
      `FUNDING_MAX: a funding may be at most ${formatAmount(limits.max, currency)} ${currency}`,
    );
}

/**
 * A batch drawing on a user's balance: its `count` items and their `total` must fit today's count
 * and amount (contract-decisions section 14: the per-minute limit does not apply to a batch).
 */
export function checkBatchUserLimits(
  limits: FundingLimits,
  usage: UserUsage,
  count: number,
  total: bigint,
  currency: string,
): void {
  const left = headroomOf(limits, usage);
  if (count > left.dailyCountLeft) {
    throw new LimitRefusal(
      'DAILY_LIMIT_EXCEEDED',
      `USER_DAILY_COUNT: at most ${limits.userDailyCount} withdrawals a day; ${left.dailyCountLeft} left today, the batch has ${count}`,
    );
  }
  if (total > left.dailyAmountLeft) {
    throw new LimitRefusal(
      'DAILY_LIMIT_EXCEEDED',
      `USER_DAILY_AMOUNT: at most ${formatAmount(limits.userDailyAmount, currency)} ${currency} a day; ${formatAmount(left.dailyAmountLeft, currency)} ${currency} left today`,
    );
  }
}

/**
 * Per user, inside the storing transaction and after lockPartnerUser: the new funding must fit
 * today's count and amount and the minute's count (`usage` does not count it yet).
 */
export function checkUserLimits(limits: FundingLimits, usage: UserUsage, amount: bigint, currency: string): void {
  const left = headroomOf(limits, usage);
  if (left.perMinuteLeft < 1) {
    throw new LimitRefusal(
      'VELOCITY_LIMIT_EXCEEDED',
      `USER_PER_MINUTE: at most ${limits.userPerMinute} withdrawals a minute; try again in a minute`,
    );
  }
  if (left.dailyCountLeft < 1) {
    throw new LimitRefusal(
      'DAILY_LIMIT_EXCEEDED',
      `USER_DAILY_COUNT: at most ${limits.userDailyCount} withdrawals a day; none left today`,
    );
  }
  if (amount > left.dailyAmountLeft) {
    throw new LimitRefusal(
      'DAILY_LIMIT_EXCEEDED',
      `USER_DAILY_AMOUNT: at most ${formatAmount(limits.userDailyAmount, currency)} ${currency} a day; ${formatAmount(left.dailyAmountLeft, currency)} ${currency} left today`,
    );
  }
}
