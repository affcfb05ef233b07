// The partner's ledger as the ops API shows it (contract-decisions section 10): funding sources,
// payment purposes, account names, accounts, adjustments, entries, limits' codes, settlement.
// Plain data and zod only.
import { z } from 'zod';
import { amountSchema, parseSignedAmount, requestedCurrencySchema } from './money.ts';
import { plainTextSchema } from './plain-text.ts';

/**
 * The accounts that are not a user's. CAPITAL: the partner's own money, the other leg of the treasury's adjustments.
 */
export const systemAccounts = ['TREASURY', 'IN_FLIGHT', 'WALLET_CLEARING', 'MERCHANT_REVENUE', 'CAPITAL'] as const;
export type SystemAccount = (typeof systemAccounts)[number];

/**
 * A partner user id as the ops API takes it (in a path or a body): printable, at most 128, and no system account's
 * name: /ops/accounts/{account} reads such a name as the system account, so that user's money could be neither read
 * nor adjusted there, and an adjustment meant for them would move the treasury's.
 */
export const partnerUserIdSchema = z
  .string({ error: 'partnerUserId must be a string' })
  .regex(/^[\x21-\x7e]{1,128}$/, 'partnerUserId must be 1 to 128 printable characters without spaces')
  .refine(
    (partnerUserId) => !(systemAccounts as readonly string[]).includes(partnerUserId),
    `partnerUserId must not be a ledger account's name (${systemAccounts.join(', ')})`,
  );

/** Whose money a funding moves: absent means TREASURY. */
export const fundingSourceSchema = z.discriminatedUnion(
  'type',
  [
    z.object({ type: z.literal('TREASURY') }).strict(),
    z.object({ type: z.literal('USER_BALANCE'), partnerUserId: partnerUserIdSchema }).strict(),
  ],
  { error: 'source.type must be TREASURY or USER_BALANCE' },
);
export type FundingSource = z.infer<typeof fundingSourceSchema>;
export const treasurySource: FundingSource = { type: 'TREASURY' };

export const paymentPurposes = ['PURCHASE', 'DEPOSIT'] as const;
export type PaymentPurpose = (typeof paymentPurposes)[number];

export const userAccount = (partnerUserId: string) => `USER:${partnerUserId}`;
/** An account's name as the ledger stores it: a system account, or `USER:` and a partner user id. */
export const accountNameSchema = z.union([z.enum(systemAccounts), z.string().regex(/^USER:[\x21-\x7e]{1,128}$/)], {
  error: 'account must be a system account (TREASURY, …) or USER: and a partner user id',
});
export const sourceAccount = (source: FundingSource) =>
  source.type === 'TREASURY' ? 'TREASURY' : userAccount(source.partnerUserId);

/** The path segment of /ops/accounts/{account}: a system account's name, else a partner user id. */
export function accountOfPathSegment(segment: string): string {
  return (systemAccounts as readonly string[]).includes(segment) ? segment : userAccount(segment);
}

const moneySchema = z.object({ currency: z.string(), value: z.string() });

export const accountViewSchema = z.object({
  account: z.string(),
  balance: moneySchema,
  held: moneySchema,
  available: moneySchema,
});
export type AccountView = z.infer<typeof accountViewSchema>;

export const signedAmountSchema = z
  .object({
    currency: requestedCurrencySchema,
    value: z.string().meta({
      description: 'a signed decimal string: "-25.00" debits the account, "25.00" credits it',
      examples: ['-25.00'],
    }),
  })
  .strict()
  .superRefine((amount, ctx) => {
    const thousandths = parseSignedAmount(amount.value);
    if (thousandths === null || thousandths === 0n) {
      ctx.addIssue({
        code: 'custom',
        path: ['value'],
        message: 'amount.value must be a non-zero signed decimal string such as "-25.00"',
      });
      return;
    }
    const magnitude = amountSchema.safeParse({ currency: amount.currency, value: amount.value.replace(/^-/, '') });
    if (!magnitude.success)
      ctx.addIssue({ code: 'custom', path: ['value'], message: magnitude.error.issues[0]?.message ?? 'bad amount' });
  });

export const createAdjustmentSchema = z
  .object({
    amount: signedAmountSchema,
    reason: plainTextSchema('reason', { empty: 'say why', max: 500 }),
  })
  .strict();
export type CreateAdjustmentRequest = z.infer<typeof createAdjustmentSchema>;

export const adjustmentViewSchema = z.object({
  adjustmentId: z.string(),
  account: z.string(),
  /** The other leg: TREASURY for a user's adjustment, CAPITAL for the treasury's. */
  counterAccount: z.string(),
  amount: moneySchema,
  reason: z.string(),
  reference: z.string(),
  createdAt: z.string(),
});
export type AdjustmentView = z.infer<typeof adjustmentViewSchema>;

export const ledgerEntryViewSchema = z.object({
  entryId: z.string(),
  transactionId: z.string(),
  account: z.string(),
  amount: moneySchema,
  /** true: a hold (or its reversal), counted in `held`, not in `balance`. */
  pending: z.boolean(),
  reference: z.string(),
  at: z.string(),
});
export type LedgerEntryView = z.infer<typeof ledgerEntryViewSchema>;

/** The codes of section 10's refusals (422, nothing stored). */
export const fundingRefusalCodes = [
  'INSUFFICIENT_FUNDS',
  'AMOUNT_TOO_SMALL',
  'AMOUNT_TOO_LARGE',
  'DAILY_LIMIT_EXCEEDED',
  'VELOCITY_LIMIT_EXCEEDED',
  'CURRENCY_NOT_ACCEPTED',
] as const;
export type FundingRefusalCode = (typeof fundingRefusalCodes)[number];

/** The settlement of a day: section 10. */
export const settlementCountsSchema = z.object({
  matched: z.number().int(),
  missing: z.number().int(),
  mismatched: z.number().int(),
  total: z.object({ count: z.number().int(), amount: moneySchema }),
});
export const settlementItemSchema = z.object({
  kind: z.enum(['funding', 'payment']),
  id: z.string(),
  /** The wallet service's transfer id or payment id. */
  walletId: z.string().nullable(),
  result: z.enum(['matched', 'missing', 'mismatched']),
  amount: moneySchema,
  walletAmount: moneySchema.nullable(),
  walletStatus: z.string().nullable(),
  ledgerAmount: moneySchema.nullable(),
  detail: z.string().nullable(),
});
export type SettlementCounts = z.infer<typeof settlementCountsSchema>;
/** A finished run's counts, by side: what the report's head shows (stored with the run). */
export const settlementSummarySchema = z.object({ fundings: settlementCountsSchema, payments: settlementCountsSchema });
export type SettlementSummary = z.infer<typeof settlementSummarySchema>;
/** The stored report of a day, a page of its items at a time (`nextCursor`: the next page, null on the last). */
export const settlementSchema = z.object({
  date: z.string(),
  timeZone: z.string(),
  /** The run that settled the day. */
  runId: z.uuid(),
  /** When the run finished (ISO 8601). */
  settledAt: z.string(),
  /** Whether the day had ended when the run began; false: today's report so far. */
  complete: z.boolean(),
  readUntil: z.string().nullable().meta({
    description:
      'a report of the day so far (`complete: false`) covers the fundings and payments whose approval or success was stamped before this instant (ISO 8601): the database’s time when its run began less SETTLEMENT_GRACE_MS (2 minutes: an approval stamped later may still be committing), never before the day began; null for the whole day (and for runs begun before it was kept)',
  }),
  fundings: settlementCountsSchema,
  payments: settlementCountsSchema,
  items: z.array(settlementItemSchema),
  nextCursor: z.string().nullable(),
});
export type Settlement = z.infer<typeof settlementSchema>;
export type SettlementItem = z.infer<typeof settlementItemSchema>;
/** A run under way: how many of the day's fundings and payments it has checked, of how many. */
export const settlementProgressSchema = z.object({
  date: z.string(),
  state: z.literal('RUNNING'),
  checked: z.number().int(),
  total: z.number().int(),
  runId: z.uuid(),
  /** When the run began (ISO 8601). */
  startedAt: z.string(),
});
export type SettlementProgress = z.infer<typeof settlementProgressSchema>;
/**
 * A settlement day: a real calendar date, YYYY-MM-DD, years 1970 to 9998 (the day after it must be
 * a YYYY-MM-DD date too: 9999-12-31's next day has five digits and is no date PostgreSQL reads).
 */
export const settlementDateSchema = z.iso
  .date('the date must be YYYY-MM-DD')
  .refine(
    (date) => date >= '1970-01-01' && date <= '9998-12-31',
    'the date must lie between 1970-01-01 and 9998-12-31',
  );

/** What a settlement CSV's totals say of a report of the day so far (the CLI's exit code reads it there). */
export const DAY_SO_FAR_WORDS = 'the day so far, not the whole day';

/** What a report of the day so far covers: up to its read-until instant (older runs: when they were settled). */
export const upTo = (scope: { settledAt: string; readUntil?: string | null }): string =>
  scope.readUntil == null
    ? `settled at ${scope.settledAt}`
    : `events up to ${scope.readUntil}, settled at ${scope.settledAt}`;
