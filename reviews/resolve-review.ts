// The review policy shared by fundings and payments (contract-decisions section 11): a person's or
// the sweep's resolution of a record parked in NEEDS_REVIEW goes through the workflow that waits
// for it, so the workflow ends with it; only when no workflow runs under its id any more is the
// record resolved directly, audited the same way.
import { WorkflowNotFoundError, WorkflowUpdateFailedError, type Client } from '@temporalio/client';
import type { UpdateDefinition } from '@temporalio/common';

/** A review's record, as resolving it needs it. */
export interface WaitingRecord {
  /** Whether the record still waits for its resolution (NEEDS_REVIEW). */
  stillWaiting(): Promise<boolean>;
  /** Resolves it in the database alone; true when this call moved it. */
  resolveWithoutWorkflow(): Promise<boolean>;
}

/**
 * Resolves a review (a resolve update) through the workflow waiting for it, or, when no running
 * workflow has this id any more, through the record itself, audited the same way. `resolved`:
 * this call moved the record. The record says it waits a moment before the workflow does (it
 * parks, then waits): a refusal while the record still waits is retried briefly.
 */
export async function resolveReview<Ret, Args extends [unknown, ...unknown[]]>(
  client: Client,
  workflowId: string,
  update: UpdateDefinition<Ret, Args>,
  args: Args,
  record: WaitingRecord,
): Promise<{ resolved: boolean; through: 'workflow' | 'database' }> {
  for (let attempt = 0; ; attempt += 1) {
    try {
      await client.workflow.getHandle(workflowId).executeUpdate(update, { args });
      return { resolved: true, through: 'workflow' };
    } catch (error) {
      if (error instanceof WorkflowNotFoundError) return { resolved: await record.resolveWithoutWorkflow(), through: 'database' };
      if (!(error instanceof WorkflowUpdateFailedError)) throw error;
      if (!(await record.stillWaiting()) || attempt >= 20) return { resolved: false, through: 'workflow' };
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }
}
