// Fundings: the ops API's request and answer shapes (contract-decisions section 8), the states a
// funding moves through, the legal moves between them, and which are final. Plain data and zod
// only: the workflow, activities, API and CLI all read it.
import { z } from 'zod';
import { fundingSourceSchema } from './ledger.ts';
import { amountSchema } from './money.ts';
import { resolutionNoteSchema, reviewSchema } from './review.ts';
import { finalStatusesOf, type FinalStatusOf, type TransitionTable } from './transitions.ts';

export const fundingStatuses = [
  'PENDING',
  'CREATING',
  'EXECUTING',
  'RECONCILING',
  'APPROVED',
  'DECLINED',
  'REJECTED',
  'FAILED',
  'NEEDS_REVIEW',
] as const;
export type FundingStatus = (typeof fundingStatuses)[number];

/**
 * The legal moves of a funding (docs/fundings.md). FAILED is reachable before any execute (cancel,
 * refused or failed creates) and after one only from a final wallet state (an EXPIRED intent) or a
 * person's resolution; REJECTED only from a refused create; APPROVED and DECLINED only once an
 * execute was sent. NEEDS_REVIEW (contract section 11) holds a funding whose execute outcome the
 * wallet could not decide, or whose create answer did not match the request; it is left only by a
 * resolution or a final wallet state. The funding record guards every write with it
 * (fundings/funding-record.ts).
 */
export const fundingTransitions = {
  PENDING: ['CREATING', 'FAILED'],
  CREATING: ['EXECUTING', 'REJECTED', 'FAILED', 'NEEDS_REVIEW'],
  EXECUTING: ['RECONCILING', 'APPROVED', 'DECLINED', 'FAILED', 'NEEDS_REVIEW'],
  RECONCILING: ['APPROVED', 'DECLINED', 'FAILED', 'NEEDS_REVIEW'],
  APPROVED: [],
  DECLINED: [],
  REJECTED: [],
  FAILED: [],
  NEEDS_REVIEW: ['APPROVED', 'DECLINED', 'FAILED'],
} as const satisfies TransitionTable<FundingStatus>;

/** Where a funding whose outcome no one can know waits; only a resolution or the wallet's final word moves it on. */
export const fundingReviewStatus = 'NEEDS_REVIEW' satisfies FundingStatus;

/** How ops resolve a funding in review (POST /ops/fundings/{id}/resolve, contract section 11). */
export const resolveFundingSchema = z
  .object({
    outcome: z.enum(['APPROVED', 'FAILED'], { error: 'outcome must be APPROVED or FAILED' }),
    note: resolutionNoteSchema,
  })
  .strict();
export type ResolveFundingRequest = z.infer<typeof resolveFundingSchema>;

/**
 * The outcomes a funding in review may be resolved with. An execute is sent only for the transfer stored as the
 * funding's, in its move to EXECUTING: with none stored (a create answer that did not match the request, its intent
 * abandoned), nothing was executed, and APPROVED would post money that never moved.
 */
export function fundingResolutions(funding: {
  transferId: string | null;
}): readonly ResolveFundingRequest['outcome'][] {
  return funding.transferId === null ? ['FAILED'] : ['APPROVED', 'FAILED'];
}

/** How a review ends: ops (APPROVED or FAILED), or the wallet's own final state read back by the sweep. */
export const fundingResolutionOutcomes = ['APPROVED', 'DECLINED', 'FAILED'] as const;
export type FundingResolutionOutcome = (typeof fundingResolutionOutcomes)[number];

export type FinalFundingStatus = FinalStatusOf<typeof fundingTransitions>;
export const finalFundingStatuses: readonly FinalFundingStatus[] = finalStatusesOf(fundingTransitions);
export const unfinishedFundingStatuses: readonly FundingStatus[] = fundingStatuses.filter(
  (status) => !isFinalFundingStatus(status),
);

export function isFinalFundingStatus(status: string): status is FinalFundingStatus {
  return (finalFundingStatuses as readonly string[]).includes(status);
}

/** Statuses from which a funding can still be cancelled: no execute has been sent. */
export const cancellableFundingStatuses = ['PENDING', 'CREATING'] as const satisfies readonly FundingStatus[];

export const cashInCodeSchema = z.string().regex(/^\d{7}$/, 'recipient.code must be the 7-digit cash-in code');

export const fundingRecipientSchema = z.discriminatedUnion(
  'type',
  [
    z.object({ type: z.literal('CODE'), code: cashInCodeSchema }).strict(),
    z.object({ type: z.literal('TOKEN'), linkId: z.uuid('recipient.linkId must be a link id (UUID)') }).strict(),
  ],
  { error: 'recipient.type must be CODE or TOKEN' },
);

export const createFundingSchema = z
  .object({
    recipient: fundingRecipientSchema,
    amount: amountSchema,
    /** Whose money (contract-decisions section 10); absent: the TREASURY. */
    source: fundingSourceSchema.optional(),
  })
  .strict();
export type CreateFundingRequest = z.infer<typeof createFundingSchema>;

/** The Idempotency-Key header: 1 to 255 printable ASCII characters. */
export const idempotencyKeySchema = z
  .string({ error: 'the Idempotency-Key header is required' })
  .regex(/^[\x20-\x7e]{1,255}$/, 'the Idempotency-Key header must be 1 to 255 printable characters');

/** Masks a cash-in code to its last 2 digits (contract-decisions section 3). */
export function maskCashInCode(code: string): string {
  return `${'*'.repeat(Math.max(code.length - 2, 0))}${code.slice(-2)}`;
}

export const fundingEventSchema = z.object({
  at: z.string(),
  status: z.enum(fundingStatuses),
  requestReferenceNo: z.string().nullable(),
  detail: z.string().nullable(),
});

export const fundingSchema = z.object({
  fundingId: z.string(),
  status: z.enum(fundingStatuses),
  recipient: z.discriminatedUnion('type', [
    z.object({ type: z.literal('CODE'), masked: z.string() }),
    z.object({ type: z.literal('TOKEN'), linkId: z.string() }),
  ]),
  amount: z.object({ currency: z.string(), value: z.string() }),
  source: fundingSourceSchema,
  transferId: z.string().nullable(),
  error: z.object({ code: z.string(), message: z.string() }).nullable(),
  /** Why the funding needed a person, the wallet calls behind it, and how it was resolved (contract section 11). */
  review: reviewSchema(fundingResolutionOutcomes),
  /**
   * The Temporal run that carried the funding's one pass when it was not the funding's own
   * workflow: a lane's (single fundings accepted under load) or a batch's runner; null: its own.
   */
  carriedBy: z.object({ workflowId: z.string(), runId: z.string() }).nullable(),
  /** The batch a batch item belongs to, and its reference there (contract section 14); null: a single funding. */
  batchId: z.string().nullable(),
  reference: z.string().nullable(),
  createdAt: z.string(),
  updatedAt: z.string(),
  events: z.array(fundingEventSchema),
});
export type FundingView = z.infer<typeof fundingSchema>;

/** What the workflow returns: ids and states only, never a token or a code. */
export interface FundingResult {
  fundingId: string;
  status: FinalFundingStatus;
  transferId: string | null;
  errorCode: string | null;
}

/** Messages fit for the user, by outcome code (60xx are safe to show, contract section 2). */
export const fundingErrorMessages: Record<string, string> = {
  M133: 'The wallet account is not upgraded. Ask the user to upgrade their account (KYC) in the wallet app, then try again.',
  '1096': 'The sender and the recipient are the same wallet account.',
  CODE_INVALID: 'The cash-in code is unknown, used or expired. Ask the user to generate a new code in the wallet app.',
  '6001': 'The recipient wallet has reached its limit.',
  '6002': 'The recipient wallet account is blocked.',
  '6051': 'The partner funding wallet has insufficient balance.',
  '6003': 'The cash-in code was used by another transfer. Ask the user to generate a new code in the wallet app.',
  REAUTH_REQUIRED: 'The user must link their wallet again before they can be funded.',
  USER_TOKEN_INVALID: 'The wallet refused the user’s authorization. Ask the user to link their wallet again.',
  LINK_NOT_USABLE: 'The linked wallet account is no longer usable.',
  CANCELLED: 'The funding was cancelled before any transfer was executed.',
  TRANSFER_EXPIRED: 'The transfer intent expired before it could be executed; nothing was moved.',
  CREATE_FAILED: 'The wallet service could not create the transfer; nothing was moved.',
  RESOLVED_FAILED: 'The funding was reviewed: nothing was credited.',
  VALIDATION_ERROR: 'The wallet service refused the transfer request.',
};

export function fundingErrorMessage(code: string, fallback?: string): string {
  return fundingErrorMessages[code] ?? fallback ?? `The funding failed (${code}).`;
}

/**
 * FUNDING_LANES: which run carries a single funding (fundings/funding-paths.ts). `auto`: its own
 * workflow, or a lane's shared run once many are in flight; `always`: a lane's; `off`: its own.
 */
export const fundingLanesModes = ['auto', 'always', 'off'] as const;
export type FundingLanesMode = (typeof fundingLanesModes)[number];
