// What a review keeps of the calls behind it (reviews/execute-evidence.ts): each call once, in time order, and past
// the cap the oldest retrieves and refused calls go before an execute whose outcome no one knows.
import { describe, expect, it } from 'vitest';
import type { WalletCallEvidence } from '../../domain/review.ts';
import { withRecordedExecutes } from '../../reviews/execute-evidence.ts';

const at = (second: number) => new Date(Date.UTC(2026, 11, 5, 12, 0, second)).toISOString();
const call = (
  second: number,
  operation: string,
  httpStatus: number | null,
  reference = `ref-${operation}-${second}`,
): WalletCallEvidence => ({
  at: at(second),
  operation,
  requestReferenceNo: reference,
  httpStatus,
  code: httpStatus === null ? 'NO_ANSWER' : String(httpStatus),
  outcome: httpStatus === null || httpStatus >= 500 ? 'unknown' : httpStatus === 429 ? 'retryable' : 'rejected',
});

describe('a review’s evidence', () => {
  it('keeps an execute whose outcome is unknown past the cap: the oldest retrieves and rate-limited executes go first', () => {
    // The first execute timed out; then retrieves refused and executes answered 429, more than the cap holds.
    const first = call(0, 'transfers.execute', null);
    const later = Array.from({ length: 40 }, (_, index) =>
      call(index + 1, index % 2 === 0 ? 'transfers.retrieve' : 'transfers.execute', index % 2 === 0 ? 404 : 429),
    );
    const kept = withRecordedExecutes(later, [first]);
    expect(kept).toHaveLength(30);
    // Before: the 30 latest by time, so the one execute that may have landed was cut.
    expect(kept[0]).toEqual(first);
    expect(kept.at(-1)).toEqual(later.at(-1));
  });

  it('keeps it behind calls refused before they were sent, and an execute activity that died (no operation named)', () => {
    const first = call(0, 'transfers.execute', null);
    const died = {
      ...call(1, 'op.payments.execute', null, 'ref-died'),
      operation: undefined,
      requestReferenceNo: null,
    };
    // A connection refused (nothing sent) has no status either: the audit's `retryable`.
    const refused = Array.from({ length: 40 }, (_, index) => ({
      ...call(index + 2, 'transfers.execute', null),
      outcome: 'retryable',
    }));
    const kept = withRecordedExecutes(refused, [first, died]);
    expect(kept).toHaveLength(30);
    expect(kept.slice(0, 2)).toEqual([first, died]);
  });

  it('lists each call once, the parker’s and the audit’s, in time order', () => {
    const mine = call(2, 'transfers.execute', 504, 'ref-a');
    const audited = [call(1, 'transfers.execute', null, 'ref-b'), { ...mine, at: at(3) }];
    expect(withRecordedExecutes([mine], audited).map((entry) => entry.requestReferenceNo)).toEqual(['ref-b', 'ref-a']);
  });
});
