// What fundings and payments share when a request starts a workflow: the workflow id derived from
// the Idempotency-Key, the request fingerprint, and a start that returns the existing run.
import { createHash, createHmac } from 'node:crypto';
import { WorkflowExecutionAlreadyStartedError, type Client } from '@temporalio/client';

/** The workflow id is derived from the key, so one key can only ever start one workflow. */
export function workflowIdFor(prefix: 'funding' | 'payment', idempotencyKey: string): string {
  return `${prefix}-${createHash('sha256').update(idempotencyKey, 'utf8').digest('hex').slice(0, 40)}`;
}

/** HMAC of the normalised request: a repeated key must come with the same body. */
export function requestFingerprint(key: Buffer, canonical: readonly string[]): string {
  return createHmac('sha256', key).update(JSON.stringify(canonical)).digest('hex');
}

/** Starts the workflow, or finds it running (USE_EXISTING); a closed one is left alone. */
export async function startWorkflowOnce(
  temporal: Client,
  options: { workflowType: string; workflowId: string; taskQueue: string; args: unknown[]; searchAttributes: Record<string, string[]> },
): Promise<void> {
  try {
    await temporal.workflow.start(options.workflowType, {
      taskQueue: options.taskQueue,
      workflowId: options.workflowId,
      args: options.args,
      workflowIdConflictPolicy: 'USE_EXISTING',
      workflowIdReusePolicy: 'REJECT_DUPLICATE',
      searchAttributes: options.searchAttributes,
    });
  } catch (error) {
    // A closed workflow with this id: that request already ran; nothing to start.
    if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
  }
}
