// The review policy shared by fundings and payments (contract-decisions section 11): a person's or
// the sweep's resolution of a record parked in NEEDS_REVIEW goes through the workflow that waits
// for it, so the workflow ends with it; only when no workflow runs under its id any more is the
// record resolved directly, audited the same way. A workflow that cannot take the resolution now
// (Temporal unreachable or busy, its task failing, or refusing the resolution for seconds while the record waits:
// not-ready; lib/workflow-unavailable.ts) leaves the
// record as it was, and the caller is told so: never resolved around a workflow that still runs.
// Nor does one whose run no worker takes up (workers stopped, or none left for the run's pinned
// build): Temporal holds such an update admitted, and the client asks again for ever, so the
// resolution is given up after RESOLVE_DEADLINE_MS and answered as a time-out (it may still be
// taken once a worker runs the workflow).
import {
  WorkflowNotFoundError,
  WorkflowUpdateFailedError,
  WorkflowUpdateRPCTimeoutOrCancelledError,
  type Client,
} from '@temporalio/client';
import type { UpdateDefinition } from '@temporalio/common';
import { RETRY_AFTER_SECONDS, workflowRefusalOf, type WorkflowRefusal } from '../lib/workflow-unavailable.ts';

/**
 * How long a resolution waits for its workflow to take the update, retries included. Long enough for Temporal to say
 * a run's task is failing (FAILED_PRECONDITION comes only once the worker failed the task the update asked for: 10 to
 * 20 s here), whose answer says more than a time-out's.
 */
export const RESOLVE_DEADLINE_MS = 25_000;

const notReady: WorkflowRefusal = {
  reason: 'not-ready',
  retryAfterSeconds: RETRY_AFTER_SECONDS['not-ready'],
  mayHaveBeenTaken: false,
};

const timedOut: WorkflowRefusal = {
  reason: 'timed-out',
  retryAfterSeconds: RETRY_AFTER_SECONDS['timed-out'],
  mayHaveBeenTaken: true,
};

/** A review's record, as resolving it needs it. */
export interface WaitingRecord {
  /** Whether the record still waits for its resolution (NEEDS_REVIEW). */
  stillWaiting(): Promise<boolean>;
  /** Resolves it in the database alone; true when this call moved it. */
  resolveWithoutWorkflow(): Promise<boolean>;
}

/**
 * What a resolution came to: `resolved` (this call moved the record), `not-waiting` (the record no
 * longer waits: another resolution, or the wallet's word, moved it first), or
 * `workflow-unavailable` (its workflow could not take the update now, and the record still waits;
 * with a time-out, the update may still be taken).
 */
export type ReviewResult =
  | { kind: 'resolved'; through: 'workflow' | 'database' }
  | { kind: 'not-waiting' }
  | { kind: 'workflow-unavailable'; refusal: WorkflowRefusal };

/**
 * Resolves a review (a resolve update) through the workflow waiting for it, or, when no running
 * workflow has this id any more, through the record itself, audited the same way. The record says
 * it waits a moment before the workflow does (it parks, then waits): a refusal while the record
 * still waits is retried briefly.
 */
export async function resolveReview<Ret, Args extends [unknown, ...unknown[]]>(
  client: Client,
  workflowId: string,
  update: UpdateDefinition<Ret, Args>,
  args: Args,
  record: WaitingRecord,
  deadlineMs = RESOLVE_DEADLINE_MS,
): Promise<ReviewResult> {
  // One deadline for every attempt: a call past it fails at once as DEADLINE_EXCEEDED, a time-out.
  const deadline = Date.now() + deadlineMs;
  for (let attempt = 0; ; attempt += 1) {
    try {
      await client.connection.withDeadline(deadline, () =>
        client.workflow.getHandle(workflowId).executeUpdate(update, { args }),
      );
      return { kind: 'resolved', through: 'workflow' };
    } catch (error) {
      if (error instanceof WorkflowNotFoundError)
        return (await record.resolveWithoutWorkflow())
          ? { kind: 'resolved', through: 'database' }
          : { kind: 'not-waiting' };
      // An update call that timed out or was cancelled is a time-out, read first: past the deadline the worker's native
      // connection answers CANCELLED, not DEADLINE_EXCEEDED, which alone would read as a call broken off.
      const refusal =
        error instanceof WorkflowUpdateRPCTimeoutOrCancelledError
          ? timedOut
          : workflowRefusalOf(error, { update: true });
      // Refused for now: the record is as it was, unless another writer moved it meanwhile.
      if (refusal)
        return (await record.stillWaiting()) ? { kind: 'workflow-unavailable', refusal } : { kind: 'not-waiting' };
      if (!(error instanceof WorkflowUpdateFailedError)) throw error;
      if (!(await record.stillWaiting())) return { kind: 'not-waiting' };
      // Refused for seconds while the record waits (its workflow has not reached the review: a backlog, a restarted
      // run; or another resolution holds it): not now, nothing changed. Never "not in review" for a record that is.
      // (Within the caller's deadline too, with a second left for the next try's call: the sweep's deadline is 3 s, and
      // a refusal there is not a time-out.)
      if (attempt >= 20 || Date.now() + 250 + 1_000 >= deadline)
        return { kind: 'workflow-unavailable', refusal: notReady };
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }
}
