// What a review shows of the executes behind it (contract section 11): the parker's own calls, with every execute the
// wallet call audit has for the record that the parker did not see (a retried activity's first try, cut off after its
// call ended; a batch chunk that lost its lease after its executes went out; an earlier run's). A person who resolves
// FAILED on the operator's word about the calls shown must be shown each execute that may have landed. The audit row
// is written when a call ends: a call whose worker died mid-call left none.
import type { WalletCallEvidence } from '../domain/review.ts';
import type { Database } from '../lib/database.ts';

/** Evidence entries a review keeps: as the workflow keeps them. */
const MAX_REVIEW_EVIDENCE = 30;

/** The wallet operations that move money, whose calls a review lists. */
export type ExecuteOperation = 'transfers.execute' | 'op.payments.execute';

/** An execute call as the wallet call audit (wallet_call) has it. */
export interface ExecuteCallRow {
  at: Date;
  reference: string;
  http_status: number | null;
  outcome: string;
  error_code: string | null;
}

/** An audited call as a review's evidence. */
export function evidenceOfCall(row: ExecuteCallRow, operation: ExecuteOperation): WalletCallEvidence {
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
 * The id an execute's path names (`…/transfers/{id}/execute`, `…/merchant/payments/{id}/execute`, as the wallet client
 * encodes it, after the base URL's own path): the expression of the audit's partial index of executes (migration
 * 20261205180000_wallet_call_execute_target), which a statement must repeat to the letter to be read through it.
 */
const executeTargetSql = `substring(path from '/(?:transfers|merchant/payments)/([^/]+)/execute$')`;

/** Every execute call of `operation` the audit has for the transfer or wallet payment `target`, oldest first. */
export async function executesOfTarget(
  database: Database,
  operation: ExecuteOperation,
  target: string,
): Promise<WalletCallEvidence[]> {
  // The text is constant (the index's expression); the values are parameters.
  const rows = await database.$queryRawUnsafe<ExecuteCallRow[]>(
    `SELECT started_at AS at, request_reference_no AS reference, http_status, outcome, error_code FROM wallet_call
     WHERE ${executeTargetSql} = $1 AND operation = $2 ORDER BY started_at, id`,
    encodeURIComponent(target),
    operation,
  );
  return rows.map((row) => evidenceOfCall(row, operation));
}

/**
 * Whether an entry is an execute whose outcome no one knows (the audit's and the workflows' `unknown`: a time-out, a
 * 5xx, a 409 that it was executed, an unreadable answer; an execute activity that died, which names no operation):
 * one a review keeps past the cap. A call refused before it was sent (`retryable`) is not one.
 */
const isUnknownExecute = (entry: WalletCallEvidence) =>
  entry.outcome === 'unknown' && (entry.operation === undefined || entry.operation.endsWith('.execute'));

/**
 * A parker's evidence with the recorded executes it lacks (by Request-Reference-No), in time order. Past
 * MAX_REVIEW_EVIDENCE, the oldest of the other entries (retrieves, refused or rate-limited calls) go first: an execute
 * whose outcome is unknown, the one most likely to have landed, is kept.
 */
export function withRecordedExecutes(
  evidence: readonly WalletCallEvidence[],
  recorded: readonly WalletCallEvidence[],
): WalletCallEvidence[] {
  const known = new Set<string>();
  const all: WalletCallEvidence[] = [];
  for (const entry of [...evidence, ...recorded]) {
    if (entry.requestReferenceNo !== null && known.has(entry.requestReferenceNo)) continue;
    if (entry.requestReferenceNo !== null) known.add(entry.requestReferenceNo);
    all.push(entry);
  }
  all.sort((a, b) => a.at.localeCompare(b.at));
  let over = all.length - MAX_REVIEW_EVIDENCE;
  const kept = all.filter((entry) => {
    if (over > 0 && !isUnknownExecute(entry)) {
      over -= 1;
      return false;
    }
    return true;
  });
  return kept.slice(-MAX_REVIEW_EVIDENCE);
}
