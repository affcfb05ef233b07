// The sweep's contract: what its starters and the workflow itself agree on (type name, input and
// result, workflow ids) and the one start every starter uses, with the action the Temporal Schedule
// starts it by. The sweep is the sweep in walletflow's own names; the names Temporal, a deployed
// cluster or an operator already hold keep their first spelling: the workflow type
// `reconcileFundings`, the Schedule `walletflow-reconcile`, the manual runs' ids, the RECONCILE_*
// settings and the walletflow_reconcile_* metrics. Imported by the workflow bundle: runtime imports from
// @temporalio/* and workflows/ only, and the workflow's signature declared here (the workflow
// imports this file, never the reverse).
import type {
  Client,
  ScheduleOptionsStartWorkflowAction,
  WorkflowHandleWithFirstExecutionRunId,
} from '@temporalio/client';

/**
 * The workflow type: the name Temporal and every stored history know it by (the function's name).
 * It stays `reconcileFundings`: a new name would be a new workflow type, and the runs and Schedule
 * of a deployed cluster start the old one.
 */
export const reconcileFundingsWorkflowType = 'reconcileFundings';

/** The sweep's input and report: the workflow and its one activity take and return the same. */
export interface SweepInput {
  /** Fundings and payments younger than this are left to their workflow. */
  olderThanSeconds: number;
  /** Rows read per page; the sweep pages through every candidate. */
  limit?: number;
  /**
   * How far back FAILED fundings with a transfer are re-checked against the wallet at most (a sweep without a mark, or
   * whose mark is older); absent: 24 h. Each is asked about in the sweeps of the hour after it failed
   * (fundings/sweep-marks.ts).
   */
  recheckFailedSeconds?: number;
}

export type RepairAction =
  | 'workflow-running'
  /** Its owner without a workflow of its own (a batch chunk) showed it is working on it: left alone. */
  | 'owner-active'
  | 'workflow-started'
  | 'finished-from-wallet'
  | 'failed-not-executed'
  | 'sent-to-review'
  | 'resolved-from-wallet'
  | 'failed-but-executed'
  | 'left-for-ops';

/**
 * How many entries each list of a sweep's report holds at most. A sweep may look at every item of
 * a 100,000-item batch, and its report travels as one Temporal payload (2 MB at most): so the
 * lists are a sample, the first ones, and `counts` counts everything; the worker's log has a line
 * for every funding and payment the sweep acted on or left for ops.
 */
export const MAX_SWEEP_LISTED = 100;

/** Everything the sweep looked at, counted (the lists of the report hold at most MAX_SWEEP_LISTED of each). */
export interface SweepCounts {
  /** Fundings looked at, by what was done with each (workflow-running and owner-active: left to their owner). */
  fundings: Partial<Record<RepairAction, number>>;
  /** Payments looked at, by what was done with each. */
  payments: Partial<Record<RepairAction, number>>;
  fundingsNeedingReview: number;
  paymentsNeedingReview: number;
  failedButExecuted: number;
  holdsSettled: number;
  batchRunners: number;
}

export interface SweepReport {
  checked: number;
  repaired: number;
  /**
   * The fundings the sweep repaired or left for ops, the first MAX_SWEEP_LISTED. (A report of a
   * release before `counts` listed every funding it looked at, those left to their owner too.)
   */
  items: Array<{ fundingId: string; status: string; action: RepairAction; detail: string }>;
  /** Payments not final long after they started, restarted when their workflow is gone: the first MAX_SWEEP_LISTED. */
  paymentItems?: Array<{ id: string; status: string; action: RepairAction; detail: string }>;
  /**
   * `paymentId` is the wallet's payment id under the name the release before used (as `walletPaymentId` is today's):
   * the report is read by scripts (`walletflow sweep --json`), whichever build ran the sweep.
   */
  paymentsNeedingReview: Array<{
    id: string;
    walletPaymentId: string | null;
    paymentId: string | null;
    since: string;
    reason: string | null;
  }>;
  /** Fundings in NEEDS_REVIEW the wallet could not decide: for ops (POST /ops/fundings/{id}/resolve). */
  fundingsNeedingReview?: Array<{ fundingId: string; transferId: string | null; since: string; reason: string | null }>;
  /** FAILED fundings whose transfer the wallet shows executed: never expected; ops must look now. */
  failedButExecuted?: Array<{ fundingId: string; transferId: string; walletStatus: string }>;
  /** Final fundings whose hold was still open (a crash between the final state and its settle), now settled. */
  holdsSettled?: Array<{ fundingId: string; status: string; action: 'posted' | 'released' | 'none' }>;
  /** Batches RUNNING or PAUSED with no runner (its start failed, or it closed): started. */
  batchRunners?: Array<{ batchId: string; state: string; detail: string }>;
  /** Everything counted; absent from the reports of releases before it (their lists were whole). */
  counts?: SweepCounts;
}

/** The activity reconcileFundings schedules (activities/sweep.ts implements it, taking its types from here). */
export interface SweepActivities {
  /**
   * One sweep, a page at a time: fundings and payments not final long after they started, recent
   * FAILED fundings with a transfer, final fundings with an open hold; each checked and repaired
   * when no workflow will finish it, with a heartbeat after each.
   */
  sweepStuckFundings(input: SweepInput): Promise<SweepReport>;
}

/** reconcileFundings's signature: what starters and the Schedule type-check against. */
export type SweepWorkflow = (input: SweepInput) => Promise<SweepReport>;

/**
 * The Schedule that runs the sweep; Temporal names each scheduled run after it. Its first spelling stays: a deployed
 * cluster's Schedule has it.
 */
export const sweepScheduleId = 'walletflow-reconcile';

/**
 * A sweep run by hand (`walletflow sweep`): a fresh id each time, so runs never collide (the prefix is the first
 * spelling, as the Schedule's).
 */
export const manualSweepWorkflowId = (uniqueSuffix: string) => `walletflow-reconcile-manual-${uniqueSuffix}`;

/** Starts one sweep; the handle's result() is the sweep's report. No id policies: each id is new. */
export async function startSweep(
  client: Client,
  options: { taskQueue: string; workflowId: string; input: SweepInput },
): Promise<WorkflowHandleWithFirstExecutionRunId<SweepWorkflow>> {
  return client.workflow.start<SweepWorkflow>(reconcileFundingsWorkflowType, {
    taskQueue: options.taskQueue,
    workflowId: options.workflowId,
    args: [options.input],
  });
}

/** What the Schedule starts on every tick: one sweep. */
export function sweepScheduleAction(options: {
  taskQueue: string;
  input: SweepInput;
}): ScheduleOptionsStartWorkflowAction<SweepWorkflow> {
  return {
    type: 'startWorkflow',
    workflowType: reconcileFundingsWorkflowType,
    taskQueue: options.taskQueue,
    args: [options.input],
  };
}
