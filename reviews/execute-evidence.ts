// What a review shows of the executes behind it (contract section 11): the parker's own calls, with every execute the
// wallet call audit has for the record that the parker did not see (a retried activity's first try, cut off; a batch
// chunk that lost its lease after its executes went out; an earlier run's). A person who resolves FAILED on the
// operator's word about the calls shown must be shown each execute that may have landed.
import type { WalletCallEvidence } from '../domain/review.ts';

/** Evidence entries a review keeps (the latest): as the workflow keeps them. */
const MAX_REVIEW_EVIDENCE = 30;

/** An execute call as the wallet call audit (wallet_call) has it. */
export interface ExecuteCallRow {
  at: Date;
  reference: string;
  http_status: number | null;
  outcome: string;
  error_code: string | null;
}

/** An audited call as a review's evidence. */
export function evidenceOfCall(row: ExecuteCallRow, operation: string): WalletCallEvidence {
  return {
    at: row.at.toISOString(),
    operation,
    requestReferenceNo: row.reference,
    httpStatus: row.http_status,
    code: row.error_code ?? (row.http_status === null ? 'NO_ANSWER' : String(row.http_status)),
    outcome: row.outcome,
  };
}

/**
 * A parker's evidence with the recorded executes it lacks (by Request-Reference-No), in time order, the latest kept.
 */
export function withRecordedExecutes(
  evidence: readonly WalletCallEvidence[],
  recorded: readonly WalletCallEvidence[],
): WalletCallEvidence[] {
  const known = new Set(
    evidence.flatMap((entry) => (entry.requestReferenceNo === null ? [] : [entry.requestReferenceNo])),
  );
  const all = [
    ...evidence,
    ...recorded.filter((entry) => entry.requestReferenceNo === null || !known.has(entry.requestReferenceNo)),
  ].sort((a, b) => a.at.localeCompare(b.at));
  return all.slice(-MAX_REVIEW_EVIDENCE);
}
