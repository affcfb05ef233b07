// When Temporal does not take a call now but may later (docs/architecture.md, "A workflow that
// cannot take a request"): which refusals those are, how long a caller is told to wait, and the
// error a service throws with words that are true for what its request stored. The API answers it
// 503 WORKFLOW_UNAVAILABLE with Retry-After, the console and the landing page with a page in words;
// never 500. Anything else Temporal answers (a bug, a permanent refusal) stays an error.
import { isGrpcServiceError, isRetryableError } from '@temporalio/client';

/** The problem `code` of the answer: the workflow that would carry out the request cannot take it now. */
export const WORKFLOW_UNAVAILABLE = 'WORKFLOW_UNAVAILABLE';

/** gRPC status codes (grpc.status) this module reads. */
const grpcStatus = {
  CANCELLED: 1,
  UNKNOWN: 2,
  DEADLINE_EXCEEDED: 4,
  RESOURCE_EXHAUSTED: 8,
  FAILED_PRECONDITION: 9,
  ABORTED: 10,
  INTERNAL: 13,
  UNAVAILABLE: 14,
  DATA_LOSS: 15,
} as const;

/**
 * Why Temporal did not take the call: `unreachable` (UNAVAILABLE, after the client's own retries),
 * `timed-out` (DEADLINE_EXCEEDED: the call may have been taken all the same), `busy`
 * (RESOURCE_EXHAUSTED: Temporal's own rate limits), `interrupted` (the call broke off on the way:
 * UNKNOWN, ABORTED and DATA_LOSS, and the INTERNAL of a stream reset or a call ended with no status,
 * which the client itself retries as passing; and CANCELLED, a stream a proxy or a draining frontend
 * cancelled, which nothing in the API does itself; it may have been taken all the same; any other
 * INTERNAL, a TLS alert or a message that cannot be read, is a fault and stays an error),
 * `task-failing` (FAILED_PRECONDITION on an update: the workflow's task fails, e.g. a deploy whose
 * build cannot replay the run, so no update is admitted until a build can run it), `not-ready` (a resolution its
 * workflow refused for seconds while the record waited for one: the workflow has not reached its review yet, or
 * another resolution holds it).
 */
export type WorkflowRefusalReason = 'unreachable' | 'timed-out' | 'busy' | 'interrupted' | 'task-failing' | 'not-ready';

export interface WorkflowRefusal {
  reason: WorkflowRefusalReason;
  /** When to try again: Temporal coming back takes seconds; a failing task waits for a fixed build. */
  retryAfterSeconds: number;
  /** The call may have been taken although no answer came (a time-out): the words must not say it was not. */
  mayHaveBeenTaken: boolean;
}

/**
 * Seconds a caller waits before the same request: Temporal's own refusals pass in seconds, a failing task only once a
 * build that runs it is deployed.
 */
export const RETRY_AFTER_SECONDS: Record<WorkflowRefusalReason, number> = {
  unreachable: 5,
  'timed-out': 5,
  busy: 5,
  interrupted: 5,
  'task-failing': 30,
  'not-ready': 5,
};

/** The refusal in a few words, for a detail or a page (never the gRPC message: it may name hosts). */
export const refusalWords: Record<WorkflowRefusalReason, string> = {
  unreachable: 'Temporal cannot be reached',
  'timed-out': 'Temporal did not answer in time',
  busy: 'Temporal is refusing calls for load',
  interrupted: 'the call to Temporal broke off',
  'task-failing': 'its workflow task is failing (a deploy whose build cannot run it yet)',
  'not-ready':
    'its workflow is not taking a resolution yet (it has not reached the review, or another one is under way)',
};

/**
 * The temporary refusal behind a failed Temporal call (the error or any of its causes), or null.
 * `update`: the call was an update, whose FAILED_PRECONDITION means its workflow's task is failing;
 * on any other call FAILED_PRECONDITION is not known to be temporary.
 */
export function workflowRefusalOf(error: unknown, call: { update?: boolean } = {}): WorkflowRefusal | null {
  const seen = new Set<unknown>();
  for (
    let current: unknown = error;
    current instanceof Error && !seen.has(current);
    current = (current as { cause?: unknown }).cause
  ) {
    seen.add(current);
    if (current instanceof WorkflowUnavailableError) return current.refusal;
    if (!isGrpcServiceError(current)) continue;
    const reason = reasonOf(current, call.update === true);
    if (reason)
      return {
        reason,
        retryAfterSeconds: RETRY_AFTER_SECONDS[reason],
        mayHaveBeenTaken: reason === 'timed-out' || reason === 'interrupted',
      };
  }
  return null;
}

function reasonOf(
  status: { code: number; details: string; metadata: unknown },
  update: boolean,
): WorkflowRefusalReason | null {
  switch (status.code) {
    case grpcStatus.UNAVAILABLE:
      return 'unreachable';
    case grpcStatus.DEADLINE_EXCEEDED:
      return 'timed-out';
    case grpcStatus.RESOURCE_EXHAUSTED:
      return 'busy';
    case grpcStatus.FAILED_PRECONDITION:
      return update ? 'task-failing' : null;
    case grpcStatus.INTERNAL:
      // Only the INTERNAL the client reads as passing (its own retry's test): a reset stream, a call with no status.
      return isRetryableError(status as Parameters<typeof isRetryableError>[0]) ? 'interrupted' : null;
    case grpcStatus.CANCELLED:
    case grpcStatus.UNKNOWN:
    case grpcStatus.ABORTED:
    case grpcStatus.DATA_LOSS:
      return 'interrupted';
    default:
      return null;
  }
}

/**
 * What a start refused so is known to have done: `notStarted` when Temporal surely did not take it, else that it may
 * have started all the same (a call timed out or broken off on the way), so the words never say it did not.
 */
export function startedWords(refusal: WorkflowRefusal, notStarted: string): string {
  return refusal.mayHaveBeenTaken
    ? 'it may have started all the same (the call was not answered): read it to see.'
    : notStarted;
}

/**
 * A request its workflow could not take now, with `detail` saying what is true for that request:
 * what it stored, if anything, and that the same request (same Idempotency-Key) is to be sent again
 * after Retry-After. The console and the landing page say the same in their own words.
 */
export class WorkflowUnavailableError extends Error {
  readonly code = WORKFLOW_UNAVAILABLE;
  constructor(
    readonly refusal: WorkflowRefusal,
    readonly detail: string,
  ) {
    super(`${WORKFLOW_UNAVAILABLE}: ${detail}`);
    this.name = 'WorkflowUnavailableError';
  }
}

/**
 * How an error handler answers a refusal that reached it: a WorkflowUnavailableError with its own
 * words, or a bare temporary refusal of a call no service words (a net under every route: a 503,
 * saying only what is true whatever the route stored). Null: not a refusal of this kind.
 */
export function workflowUnavailableOf(
  error: unknown,
): { retryAfterSeconds: number; reason: WorkflowRefusalReason; detail: string } | null {
  if (error instanceof WorkflowUnavailableError)
    return { retryAfterSeconds: error.refusal.retryAfterSeconds, reason: error.refusal.reason, detail: error.detail };
  const refusal = workflowRefusalOf(error);
  if (!refusal) return null;
  return {
    retryAfterSeconds: refusal.retryAfterSeconds,
    reason: refusal.reason,
    detail: `a workflow could not take this request now (${refusalWords[refusal.reason]}): send the same request (same Idempotency-Key) again after Retry-After; read the record to see what, if anything, it changed`,
  };
}
