// Where fundWallet's step path starts, from the state its claim saw (activities/funding.ts
// loadFunding takes the funding on and answers where it stands). A run that takes over trusts
// nothing it did not write itself (docs/architecture.md, who owns a funding): a transfer someone
// else stored is read back before any execute, and a funding whose execute may have been sent ends
// only from the wallet's final state or through review. Pure decisions, shared by the workflow and
// the tests that orchestrate a takeover; part of the workflow bundle (type imports only).
import type { FundingStatus } from '../domain/funding.ts';

/** What the claim saw. */
export interface ClaimedState {
  status: FundingStatus;
  transferId: string | null;
}

export type StepPathStart =
  /** Final: the run ends with the record's state. */
  | { kind: 'final' }
  /** In review: the run waits for the resolution. */
  | { kind: 'review' }
  /** EXECUTING or RECONCILING: an execute may have been sent; only retrieve can tell. */
  | { kind: 'retrieve'; transferId: string }
  /** No transfer stored: create one (the claim fenced out whoever else was creating). */
  | { kind: 'create' }
  /**
   * CREATING with a transfer another run stored: never executed (only a run that moved the
   * funding to EXECUTING sends an execute), but not this run's own: EXECUTING, then retrieve.
   */
  | { kind: 'take-over-transfer'; transferId: string };

const finalStatuses: Record<FundingStatus, boolean> = {
  PENDING: false,
  CREATING: false,
  EXECUTING: false,
  RECONCILING: false,
  NEEDS_REVIEW: false,
  APPROVED: true,
  DECLINED: true,
  REJECTED: true,
  FAILED: true,
};

export function stepPathStart(claimed: ClaimedState): StepPathStart {
  if (finalStatuses[claimed.status]) return { kind: 'final' };
  if (claimed.status === 'NEEDS_REVIEW') return { kind: 'review' };
  if (claimed.transferId && (claimed.status === 'EXECUTING' || claimed.status === 'RECONCILING'))
    return { kind: 'retrieve', transferId: claimed.transferId };
  if (!claimed.transferId) return { kind: 'create' };
  return { kind: 'take-over-transfer', transferId: claimed.transferId };
}

/**
 * The first wallet call after the run moved the funding to EXECUTING: the execute, only for the
 * intent this run's own create call just made (its Request-Reference-No says so); any other
 * transfer (stored by an earlier attempt or another run) is retrieved first.
 */
export function firstCallAfterBeginExecute(created: { requestReferenceNo: string | null }): 'execute' | 'retrieve' {
  return created.requestReferenceNo === null ? 'retrieve' : 'execute';
}
