// domain's transition tables: which moves are legal for a funding and a payment, the final states
// derived from them (no way out), and the guards the records build from them.
import { describe, expect, it } from 'vitest';
import {
  cancellableFundingStatuses,
  finalFundingStatuses,
  fundingStatuses,
  fundingTransitions,
  isFinalFundingStatus,
  unfinishedFundingStatuses,
  type FundingStatus,
} from '../../domain/funding.ts';
import {
  finalPaymentStatuses,
  isFinalPaymentStatus,
  paymentStatuses,
  paymentTransitions,
  reviewStatus,
  type PaymentStatus,
} from '../../domain/payment.ts';
import { canMove, finalStatusesOf, sourcesOf, statusesOf, type TransitionTable } from '../../domain/transitions.ts';
import { batchTransitions } from '../../domain/funding-batch.ts';

/** Every status reachable from `start` by legal moves. */
function reachable<S extends string>(table: TransitionTable<S>, start: S): Set<S> {
  const seen = new Set<S>([start]);
  const queue = [start];
  for (let status = queue.shift(); status !== undefined; status = queue.shift()) {
    for (const next of table[status]) {
      if (!seen.has(next)) {
        seen.add(next);
        queue.push(next);
      }
    }
  }
  return seen;
}

/** Every (from, to) pair, legal or not. */
const pairs = <S extends string>(statuses: readonly S[]) =>
  statuses.flatMap((from) => statuses.map((to) => [from, to] as const));

describe('the funding transition table', () => {
  const legal: Array<[FundingStatus, FundingStatus]> = [
    ['PENDING', 'CREATING'],
    ['PENDING', 'FAILED'],
    ['CREATING', 'EXECUTING'],
    ['CREATING', 'REJECTED'],
    ['CREATING', 'FAILED'],
    ['CREATING', 'NEEDS_REVIEW'],
    ['EXECUTING', 'RECONCILING'],
    ['EXECUTING', 'APPROVED'],
    ['EXECUTING', 'DECLINED'],
    ['EXECUTING', 'FAILED'],
    ['EXECUTING', 'NEEDS_REVIEW'],
    ['RECONCILING', 'APPROVED'],
    ['RECONCILING', 'DECLINED'],
    ['RECONCILING', 'FAILED'],
    ['RECONCILING', 'NEEDS_REVIEW'],
    ['NEEDS_REVIEW', 'APPROVED'],
    ['NEEDS_REVIEW', 'DECLINED'],
    ['NEEDS_REVIEW', 'FAILED'],
  ];

  it('names every status once, in the order of fundingStatuses', () => {
    expect(statusesOf(fundingTransitions)).toEqual([...fundingStatuses]);
  });

  it('allows exactly the documented moves', () => {
    const allowed = pairs(fundingStatuses).filter(([from, to]) => canMove(fundingTransitions, from, to));
    expect(allowed).toEqual(legal);
  });

  it.each([
    ['PENDING', 'EXECUTING', 'an execute needs a created intent'],
    ['PENDING', 'APPROVED', 'nothing was executed'],
    ['CREATING', 'APPROVED', 'no execute was sent yet'],
    ['CREATING', 'DECLINED', 'no execute was sent yet'],
    ['EXECUTING', 'REJECTED', 'REJECTED means refused before any execute'],
    ['EXECUTING', 'CREATING', 'a second intent is never created'],
    ['RECONCILING', 'EXECUTING', "only retrieve learns an unknown execute's outcome"],
    ['NEEDS_REVIEW', 'EXECUTING', 'review is resolved by a person or the wallet, not by another execute'],
    ['NEEDS_REVIEW', 'REJECTED', 'REJECTED means refused before any execute'],
    ['PENDING', 'NEEDS_REVIEW', 'nothing can be in doubt before a create'],
    ['FAILED', 'NEEDS_REVIEW', 'a final state is final'],
    ['APPROVED', 'FAILED', 'a final state is final'],
    ['FAILED', 'PENDING', 'a final state is final'],
  ] as const)('refuses %s → %s (%s)', (from: FundingStatus, to: FundingStatus, _why: string) => {
    expect(canMove(fundingTransitions, from, to)).toBe(false);
  });

  it('derives the final states: those with no way out', () => {
    expect(finalFundingStatuses).toEqual(['APPROVED', 'DECLINED', 'REJECTED', 'FAILED']);
    expect(finalStatusesOf(fundingTransitions)).toEqual(finalFundingStatuses);
    for (const status of finalFundingStatuses) expect(fundingTransitions[status]).toEqual([]);
    expect(fundingStatuses.filter(isFinalFundingStatus)).toEqual(finalFundingStatuses);
    expect(unfinishedFundingStatuses).toEqual(['PENDING', 'CREATING', 'EXECUTING', 'RECONCILING', 'NEEDS_REVIEW']);
  });

  it('reaches every status from PENDING, and a final state from every status', () => {
    expect([...reachable<FundingStatus>(fundingTransitions, 'PENDING')].sort()).toEqual([...fundingStatuses].sort());
    for (const status of fundingStatuses) {
      expect([...reachable<FundingStatus>(fundingTransitions, status)].some(isFinalFundingStatus), status).toBe(true);
    }
  });

  it('gives the records their guards', () => {
    expect(sourcesOf(fundingTransitions, 'CREATING')).toEqual(['PENDING']);
    expect(sourcesOf(fundingTransitions, 'EXECUTING')).toEqual(['CREATING']);
    expect(sourcesOf(fundingTransitions, 'RECONCILING')).toEqual(['EXECUTING']);
    expect(sourcesOf(fundingTransitions, 'APPROVED')).toEqual(['EXECUTING', 'RECONCILING', 'NEEDS_REVIEW']);
    expect(sourcesOf(fundingTransitions, 'DECLINED')).toEqual(['EXECUTING', 'RECONCILING', 'NEEDS_REVIEW']);
    expect(sourcesOf(fundingTransitions, 'REJECTED')).toEqual(['CREATING']);
    expect(sourcesOf(fundingTransitions, 'FAILED')).toEqual([
      'PENDING',
      'CREATING',
      'EXECUTING',
      'RECONCILING',
      'NEEDS_REVIEW',
    ]);
    expect(sourcesOf(fundingTransitions, 'NEEDS_REVIEW')).toEqual(['CREATING', 'EXECUTING', 'RECONCILING']);
    expect(sourcesOf(fundingTransitions, 'PENDING')).toEqual([]);
  });

  it('lets cancel move only statuses before any execute, each of them legally to FAILED', () => {
    for (const status of cancellableFundingStatuses) expect(canMove(fundingTransitions, status, 'FAILED')).toBe(true);
    for (const status of cancellableFundingStatuses)
      expect(reachable<FundingStatus>(fundingTransitions, 'EXECUTING').has(status)).toBe(false);
  });
});

describe('the payment transition table', () => {
  const legal: Array<[PaymentStatus, PaymentStatus]> = [
    ['PENDING', 'CREATING'],
    ['CREATING', 'EXECUTING'],
    ['CREATING', 'FAILED'],
    ['CREATING', 'NEEDS_REVIEW'],
    ['EXECUTING', 'SUCCEEDED'],
    ['EXECUTING', 'FAILED'],
    ['EXECUTING', 'NEEDS_REVIEW'],
    ['NEEDS_REVIEW', 'SUCCEEDED'],
    ['NEEDS_REVIEW', 'FAILED'],
  ];

  it('names every status once, in the order of paymentStatuses', () => {
    expect(statusesOf(paymentTransitions)).toEqual([...paymentStatuses]);
  });

  it('allows exactly the documented moves', () => {
    const allowed = pairs(paymentStatuses).filter(([from, to]) => canMove(paymentTransitions, from, to));
    expect(allowed).toEqual(legal);
  });

  it.each([
    ['PENDING', 'EXECUTING', 'an execute needs a created wallet payment'],
    ['CREATING', 'SUCCEEDED', 'nothing was executed'],
    ['PENDING', 'NEEDS_REVIEW', 'nothing can be in doubt before a create'],
    ['NEEDS_REVIEW', 'EXECUTING', 'review is resolved by a person, not by another execute'],
    ['SUCCEEDED', 'FAILED', 'a final state is final'],
    ['FAILED', 'NEEDS_REVIEW', 'a final state is final'],
  ] as const)('refuses %s → %s (%s)', (from: PaymentStatus, to: PaymentStatus, _why: string) => {
    expect(canMove(paymentTransitions, from, to)).toBe(false);
  });

  it('derives the final states: those with no way out', () => {
    expect(finalPaymentStatuses).toEqual(['SUCCEEDED', 'FAILED']);
    for (const status of finalPaymentStatuses) expect(paymentTransitions[status]).toEqual([]);
    expect(paymentStatuses.filter(isFinalPaymentStatus)).toEqual(['SUCCEEDED', 'FAILED']);
    expect(isFinalPaymentStatus(reviewStatus)).toBe(false);
  });

  it('reaches every status from PENDING, and a final state from every status', () => {
    expect([...reachable<PaymentStatus>(paymentTransitions, 'PENDING')].sort()).toEqual([...paymentStatuses].sort());
    for (const status of paymentStatuses) {
      expect([...reachable<PaymentStatus>(paymentTransitions, status)].some(isFinalPaymentStatus), status).toBe(true);
    }
  });

  it('leads out of review only to a final state, and into it only after a create (a mismatched answer) or an execute', () => {
    expect(paymentTransitions[reviewStatus].every(isFinalPaymentStatus)).toBe(true);
    expect(sourcesOf(paymentTransitions, reviewStatus)).toEqual(['CREATING', 'EXECUTING']);
  });

  it('gives the records their guards', () => {
    expect(sourcesOf(paymentTransitions, 'CREATING')).toEqual(['PENDING']);
    expect(sourcesOf(paymentTransitions, 'EXECUTING')).toEqual(['CREATING']);
    // finish drops NEEDS_REVIEW from these (only a resolution leaves review); resolve keeps only it.
    expect(sourcesOf(paymentTransitions, 'SUCCEEDED')).toEqual(['EXECUTING', 'NEEDS_REVIEW']);
    expect(sourcesOf(paymentTransitions, 'FAILED')).toEqual(['CREATING', 'EXECUTING', 'NEEDS_REVIEW']);
  });
});

describe('a batch’s states', () => {
  it('move as contract section 14 says, the table read from → to as the funding’s and the payment’s are', () => {
    const moves = statusesOf(batchTransitions).flatMap((from) =>
      statusesOf(batchTransitions)
        .filter((to) => canMove(batchTransitions, from, to))
        .map((to) => `${from} → ${to}`),
    );
    expect(moves.sort()).toEqual(
      [
        'AWAITING_APPROVAL → RUNNING', // approve
        'AWAITING_APPROVAL → REJECTED', // reject
        'AWAITING_APPROVAL → CANCELLED',
        'RUNNING → PAUSED',
        'RUNNING → COMPLETED',
        'RUNNING → CANCELLED',
        'PAUSED → RUNNING', // resume
        'PAUSED → CANCELLED',
      ].sort(),
    );
    expect(finalStatusesOf(batchTransitions).sort()).toEqual(['CANCELLED', 'COMPLETED', 'REJECTED']);
    expect(sourcesOf(batchTransitions, 'CANCELLED').sort()).toEqual(['AWAITING_APPROVAL', 'PAUSED', 'RUNNING']);
  });
});
