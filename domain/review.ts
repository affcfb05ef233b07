// Review: where a funding or a payment whose outcome no one can know waits for a person (contract
// sections 8 and 11). The evidence is every wallet call behind the doubt; the resolution says who
// resolved it, how and why. Shared by both aggregates so ops read one shape.
import { z } from 'zod';
import { plainTextSchema } from './plain-text.ts';

/** One wallet call as evidence for a review: what was sent and what came back. */
export const walletCallEvidenceSchema = z.object({
  at: z.string(),
  /**
   * The wallet operation (transfers.execute, transfers.retrieve, op.payments.execute); absent on payments stored before
   * it was recorded.
   */
  operation: z.string().optional(),
  requestReferenceNo: z.string().nullable(),
  httpStatus: z.number().nullable(),
  code: z.string(),
  outcome: z.string(),
});
export type WalletCallEvidence = z.infer<typeof walletCallEvidenceSchema>;

/** A person's (or the sweep's) resolution of a review. */
export const resolutionSchema = <Outcome extends readonly [string, ...string[]]>(outcomes: Outcome) =>
  z.object({ outcome: z.enum(outcomes), note: z.string(), by: z.string(), at: z.string() });

/** The `review` member of a funding or payment view: null when it never needed one. */
export const reviewSchema = <Outcome extends readonly [string, ...string[]]>(outcomes: Outcome) =>
  z
    .object({
      reason: z.string(),
      attempts: z.array(walletCallEvidenceSchema),
      resolution: resolutionSchema(outcomes).nullable(),
    })
    .nullable();

/** The note every resolution carries: why. It is stored, audited and shown to people: well-formed text only. */
export const resolutionNoteSchema = plainTextSchema('note', { empty: 'say why', max: 500 });

/** The review columns a funding or payment row stores (review_reason, review_evidence, resolved_*). */
export interface StoredReview {
  reviewReason: string | null;
  reviewEvidence: unknown;
  resolvedOutcome: string | null;
  resolvedBy: string | null;
  resolvedNote: string | null;
  resolvedAt: Date | null;
}

/** The `review` member of a view from a row's review columns; null when the row never needed one. */
export function reviewView<Outcome extends string>(row: StoredReview, outcomes: readonly Outcome[]) {
  if (!row.reviewReason) return null;
  const attempts = walletCallEvidenceSchema.array().safeParse(row.reviewEvidence ?? []);
  const outcome = outcomes.find((known) => known === row.resolvedOutcome);
  return {
    reason: row.reviewReason,
    attempts: attempts.success ? attempts.data : [],
    resolution:
      outcome && row.resolvedAt
        ? { outcome, note: row.resolvedNote ?? '', by: row.resolvedBy ?? 'unknown', at: row.resolvedAt.toISOString() }
        : null,
  };
}
