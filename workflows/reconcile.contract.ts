// reconcileFundings's contract: what its starters and the workflow itself agree on (type name,
// input and result, workflow ids) and the one start every starter uses, with the action the
// Temporal Schedule starts it by. Imported by the workflow bundle: runtime imports from
// @temporalio/* and workflows/ only, and the workflow's signature declared here (the workflow
// imports this file, never the reverse).
import type { Client, ScheduleOptionsStartWorkflowAction, WorkflowHandleWithFirstExecutionRunId } from '@temporalio/client';
import type { SweepInput, SweepReport } from '../activities/reconcile.ts';

/** The workflow type: the name Temporal and every stored history know it by (the function's name). */
export const reconcileFundingsWorkflowType = 'reconcileFundings';

/** Declared with the sweep activity, which takes and returns the same. */
export type ReconcileFundingsInput = SweepInput;
export type ReconcileFundingsResult = SweepReport;

/** reconcileFundings's signature: what starters and the Schedule type-check against. */
export type ReconcileFundingsWorkflow = (input: ReconcileFundingsInput) => Promise<ReconcileFundingsResult>;

/** The Schedule that runs the sweep; Temporal names each scheduled run after it. */
export const reconcileScheduleId = 'walletflow-reconcile';

/** A sweep run by hand (`walletflow reconcile`): a fresh id each time, so runs never collide. */
export const manualReconcileWorkflowId = (uniqueSuffix: string) => `walletflow-reconcile-manual-${uniqueSuffix}`;

/** Starts one sweep; the handle's result() is the sweep's report. No id policies: each id is new. */
export async function startReconcileFundings(
  client: Client,
  options: { taskQueue: string; workflowId: string; input: ReconcileFundingsInput },
): Promise<WorkflowHandleWithFirstExecutionRunId<ReconcileFundingsWorkflow>> {
  return client.workflow.start<ReconcileFundingsWorkflow>(reconcileFundingsWorkflowType, {
    taskQueue: options.taskQueue,
    workflowId: options.workflowId,
    args: [options.input],
  });
}

/** What the Schedule starts on every tick: one sweep. */
export function reconcileFundingsScheduleAction(options: { taskQueue: string; input: ReconcileFundingsInput }): ScheduleOptionsStartWorkflowAction<ReconcileFundingsWorkflow> {
  return { type: 'startWorkflow', workflowType: reconcileFundingsWorkflowType, taskQueue: options.taskQueue, args: [options.input] };
}
