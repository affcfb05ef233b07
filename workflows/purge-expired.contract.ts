// purgeExpired's contract: what its starters and the workflow itself agree on (type name, input
// and result, workflow ids) and the one start every starter uses, with the action the Temporal
// Schedule starts it by. Imported by the workflow bundle: runtime imports from @temporalio/* and
// workflows/ only, and the workflow's signature declared here (the workflow imports this file,
// never the reverse).
import type {
  Client,
  ScheduleOptionsStartWorkflowAction,
  WorkflowHandleWithFirstExecutionRunId,
} from '@temporalio/client';
import type { PurgeTable } from '../domain/purge.ts';

export interface PurgeInput {
  /** How long past its expiry a row is kept (for an incident's questions) before it is deleted. */
  retentionSeconds: number;
  /** Rows deleted per statement; absent: 500. */
  batchSize?: number;
  /** Batches per table per run; absent: 100. What is left waits for the next run. */
  maxBatches?: number;
}

export interface PurgeReport {
  /** The expiry before which rows were deleted (ISO 8601). */
  cutoff: string;
  deleted: Record<PurgeTable, number>;
  /** Tables whose batches ran out before their backlog did. */
  unfinished: PurgeTable[];
}

/** The workflow type: the name Temporal and every stored history know it by (the function's name). */
export const purgeExpiredWorkflowType = 'purgeExpired';

/** Declared with the purge activity, which takes and returns the same. */
export type PurgeExpiredInput = PurgeInput;
export type PurgeExpiredResult = PurgeReport;

/** The activity purgeExpired schedules (activities/purge.ts implements it, taking its types from here). */
export interface PurgeExpiredActivities {
  /** A few bounded batches of deletes per table, heartbeating after each; a retry deletes what is left. */
  purgeExpiredRows(input: PurgeInput): Promise<PurgeReport>;
}

/** purgeExpired's signature: what starters and the Schedule type-check against. */
export type PurgeExpiredWorkflow = (input: PurgeExpiredInput) => Promise<PurgeExpiredResult>;

/** The Schedule that runs the purge; Temporal names each scheduled run after it. */
export const purgeScheduleId = 'walletflow-purge';

/** A purge run by hand (a test, a capture): a fresh id each time, so runs never collide. */
export const manualPurgeWorkflowId = (uniqueSuffix: string) => `walletflow-purge-manual-${uniqueSuffix}`;

/** Starts one purge; the handle's result() is its report. No id policies: each id is new. */
export async function startPurgeExpired(
  client: Client,
  options: { taskQueue: string; workflowId: string; input: PurgeExpiredInput },
): Promise<WorkflowHandleWithFirstExecutionRunId<PurgeExpiredWorkflow>> {
  return client.workflow.start<PurgeExpiredWorkflow>(purgeExpiredWorkflowType, {
    taskQueue: options.taskQueue,
    workflowId: options.workflowId,
    args: [options.input],
  });
}

/** What the Schedule starts on every tick: one purge. */
export function purgeExpiredScheduleAction(options: {
  taskQueue: string;
  input: PurgeExpiredInput;
}): ScheduleOptionsStartWorkflowAction<PurgeExpiredWorkflow> {
  return {
    type: 'startWorkflow',
    workflowType: purgeExpiredWorkflowType,
    taskQueue: options.taskQueue,
    args: [options.input],
  };
}
