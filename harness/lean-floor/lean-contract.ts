// The lean floor's contract: the minimal Temporal workflow the bench measures beside walletflow
// (harness/bench-lean.ts). Its names live here, as walletflow's live in workflows/*.contract.ts.

/** The workflow type, the task queue it runs on, and the table its activities write. */
export const leanFundingWorkflowType = 'leanFunding';
export const leanTaskQueue = 'walletflow-bench-lean-floor';
export const leanTable = 'lean_floor_transfer';

/**
 * Ids only, as walletflow's inputs: the cash-in code waits in the item's row (written by the bench
 * before the start), never in the workflow's history.
 */
export interface LeanFundingInput {
  /** The item's row, which holds its cash-in code and gets what the activities learn. */
  id: string;
  amount: { currency: 'PHP'; value: string };
}

export type LeanFundingWorkflow = (input: LeanFundingInput) => Promise<string>;
