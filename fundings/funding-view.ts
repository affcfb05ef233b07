// The funding as the ops API shows it (contract-decisions section 8): the masked code, never the
// code; amounts as decimal strings; the timeline with each wallet call's Request-Reference-No; the
// review's evidence and resolution when it needed one (contract section 11).
import type { Funding, FundingEvent } from '../generated/prisma/client.ts';
import { storedAmount } from '../domain/money.ts';
import { fundingResolutionOutcomes, type FundingView } from '../domain/funding.ts';
import { reviewView } from '../domain/review.ts';

/** Kept for the landing page's modules until they import domain/money.ts's storedAmount. */
export const amountOf = storedAmount;

export function fundingView(funding: Funding & { events: FundingEvent[] }): FundingView {
  return {
    fundingId: funding.id,
    status: funding.status,
    recipient:
      funding.recipientType === 'CODE'
        ? { type: 'CODE', masked: funding.cashInCodeMasked ?? '*******' }
        : { type: 'TOKEN', linkId: funding.linkId ?? '' },
    amount: storedAmount(funding),
    source:
      funding.sourcePartnerUserId === null
        ? { type: 'TREASURY' }
        : { type: 'USER_BALANCE', partnerUserId: funding.sourcePartnerUserId },
    transferId: funding.transferId,
    error: funding.errorCode ? { code: funding.errorCode, message: funding.errorMessage ?? funding.errorCode } : null,
    review: reviewView(funding, fundingResolutionOutcomes),
    carriedBy:
      funding.carriedBy === null ? null : { workflowId: funding.carriedBy, runId: funding.carriedByRunId ?? '' },
    batchId: funding.batchId,
    reference: funding.batchReference,
    createdAt: funding.createdAt.toISOString(),
    updatedAt: funding.updatedAt.toISOString(),
    events: funding.events.map((event) => ({
      at: event.at.toISOString(),
      status: event.status,
      requestReferenceNo: event.requestReferenceNo,
      detail: event.detail,
    })),
  };
}
