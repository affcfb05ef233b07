// Merchant payments from a user's wallet: the ops API's shapes (contract-decisions section 8),
// states, the legal moves between them, and which are final. A payment whose execute outcome
// stays unknown is parked in NEEDS_REVIEW for a person to resolve: never a guessed state.
import { z } from 'zod';
import { paymentPurposes } from './ledger.ts';
import { amountSchema } from './money.ts';
import { resolutionNoteSchema, reviewSchema, walletCallEvidenceSchema, type WalletCallEvidence } from './review.ts';
import { finalStatusesOf, type FinalStatusOf, type TransitionTable } from './transitions.ts';

export const paymentStatuses = ['PENDING', 'CREATING', 'EXECUTING', 'SUCCEEDED', 'FAILED', 'NEEDS_REVIEW'] as const;
export type PaymentStatus = (typeof paymentStatuses)[number];

/**
 * The legal moves of a payment. SUCCEEDED only once an execute was sent; NEEDS_REVIEW from
 * EXECUTING (an outcome that stayed unknown) or CREATING (a create answer that does not match the
 * request: nothing is executed), and it is left only by a person's resolution
 * (`reviewStatus`). The payment record guards every write with it (payments/payment-record.ts).
 */
export const paymentTransitions = {
  PENDING: ['CREATING'],
  CREATING: ['EXECUTING', 'FAILED', 'NEEDS_REVIEW'],
  EXECUTING: ['SUCCEEDED', 'FAILED', 'NEEDS_REVIEW'],
  SUCCEEDED: [],
  FAILED: [],
  NEEDS_REVIEW: ['SUCCEEDED', 'FAILED'],
} as const satisfies TransitionTable<PaymentStatus>;

/** Where a payment whose outcome no one can know waits for a person; only a resolution moves it on. */
export const reviewStatus = 'NEEDS_REVIEW' satisfies PaymentStatus;

export type FinalPaymentStatus = FinalStatusOf<typeof paymentTransitions>;
export const finalPaymentStatuses: readonly FinalPaymentStatus[] = finalStatusesOf(paymentTransitions);

export function isFinalPaymentStatus(status: string): status is FinalPaymentStatus {
  return (finalPaymentStatuses as readonly string[]).includes(status);
}

export const createPaymentSchema = z
  .object({
    linkId: z.uuid('linkId must be a link id (UUID)'),
    amount: amountSchema,
    /** Where it lands once SUCCEEDED (contract-decisions section 10); absent: PURCHASE. */
    purpose: z.enum(paymentPurposes, { error: 'purpose must be PURCHASE or DEPOSIT' }).optional(),
  })
  .strict();
export type CreatePaymentRequest = z.infer<typeof createPaymentSchema>;

export const resolvePaymentSchema = z
  .object({
    outcome: z.enum(['SUCCEEDED', 'FAILED'], { error: 'outcome must be SUCCEEDED or FAILED' }),
    note: resolutionNoteSchema,
  })
  .strict();
export type ResolvePaymentRequest = z.infer<typeof resolvePaymentSchema>;

/**
 * The outcomes a payment in review may be resolved with. An execute names the wallet payment stored as the payment's:
 * with none stored (a create answer that did not match the request), nothing was executed, and SUCCEEDED would land
 * money that never moved.
 */
export function paymentResolutions(payment: { paymentId: string | null }): readonly ResolvePaymentRequest['outcome'][] {
  return payment.paymentId === null ? ['FAILED'] : ['SUCCEEDED', 'FAILED'];
}

/** One execute attempt as evidence for a review: what was sent and what came back. */
export const executeAttemptSchema = walletCallEvidenceSchema;
export type ExecuteAttempt = WalletCallEvidence;

export const paymentEventSchema = z.object({
  at: z.string(),
  status: z.enum(paymentStatuses),
  requestReferenceNo: z.string().nullable(),
  detail: z.string().nullable(),
});

export const paymentSchema = z.object({
  /** walletflow's id of the payment (used in the ops routes). */
  id: z.string(),
  /** The wallet service's payment id, once created. */
  paymentId: z.string().nullable(),
  status: z.enum(paymentStatuses),
  linkId: z.string(),
  purpose: z.enum(paymentPurposes),
  amount: z.object({ currency: z.string(), value: z.string() }),
  fee: z.object({ currency: z.string(), value: z.string() }).nullable(),
  error: z.object({ code: z.string(), message: z.string() }).nullable(),
  review: reviewSchema(['SUCCEEDED', 'FAILED']),
  createdAt: z.string(),
  updatedAt: z.string(),
  events: z.array(paymentEventSchema),
});
export type PaymentView = z.infer<typeof paymentSchema>;

export interface PaymentResult {
  id: string;
  status: FinalPaymentStatus;
  /** The wallet service's id of the payment (walletflow's is `id`). */
  walletPaymentId: string | null;
  errorCode: string | null;
}

export const paymentErrorMessages: Record<string, string> = {
  INSUFFICIENT_BALANCE:
    'Your wallet balance is not enough for this payment and its fee. Top up your wallet and try again.',
  REAUTH_REQUIRED: 'Your wallet session has ended. Please reopen the app from your wallet.',
  LINK_NOT_USABLE: 'The linked wallet account is no longer usable.',
  USER_TOKEN_INVALID: 'The wallet refused the authorization. Please reopen the app from your wallet.',
  CREATE_FAILED: 'The payment could not be started; nothing was charged.',
  VALIDATION_ERROR: 'The wallet service refused the payment request; nothing was charged.',
  RESOLVED_FAILED: 'The payment was reviewed and did not go through.',
};

export function paymentErrorMessage(code: string): string {
  return paymentErrorMessages[code] ?? `The payment failed (${code}).`;
}
