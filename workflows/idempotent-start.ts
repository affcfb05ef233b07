// What the contracts of workflows started once per business request share: a workflow id derived
// from an Idempotency-Key (fundWallet, payWallet), and the id policies of a start that finds the
// running workflow and leaves a closed one alone (those two, and onboardEmbeddedSession).
// Imported by workflow code through the contracts: runtime imports from @temporalio/common only.
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';

/**
 * SHA-256 of a UTF-8 string as lowercase hex. Passed in by the caller (lib/idempotency.ts):
 * node:crypto cannot be loaded in the workflow bundle these contracts belong to.
 */
export type Sha256Hex = (text: string) => string;

/**
 * `<prefix>-` and the first 40 hex digits of the key's SHA-256: one key can only ever name one
 * workflow. Stored on the funding or payment row, so every later start uses the stored id.
 */
export function idempotentWorkflowId(
  prefix: 'funding' | 'payment',
  idempotencyKey: string,
  sha256Hex: Sha256Hex,
): string {
  return `${prefix}-${sha256Hex(idempotencyKey).slice(0, 40)}`;
}

/**
 * A second start with the same id finds the running workflow (USE_EXISTING); a closed one is not
 * started again (REJECT_DUPLICATE): that request already ran.
 */
export const startOncePolicies = {
  workflowIdConflictPolicy: 'USE_EXISTING',
  workflowIdReusePolicy: 'REJECT_DUPLICATE',
} as const;

/** Awaits a start made with `startOncePolicies`; the refusal a closed run causes means there is nothing to start. */
export async function ignoringClosedRun(start: Promise<unknown>): Promise<void> {
  try {
    await start;
  } catch (error) {
    if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
  }
}
