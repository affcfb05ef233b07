// fundLane's contract: what its starters and the workflow itself agree on (type name, input, the
// lanes and their workflow ids, the activities it schedules) and the one start every starter uses.
// A lane is a long-lived run that carries single fundings accepted under load (docs/fundings.md,
// Lanes): it takes the PENDING fundings of its lane in chunks through the batch items' chunk pass,
// and hands whatever a pass left unfinished to the funding's own fundWallet workflow, as a batch's
// runner does. Imported by the workflow bundle: runtime imports from @temporalio/* and workflows/
// only (the workflow imports this file, never the reverse).
import type { Client } from '@temporalio/client';
import { defineQuery } from '@temporalio/workflow';
import type { BatchItemsOutcome } from './fund-batch.contract.ts';

/** The workflow type: the name Temporal and every stored history know it by (the function's name). */
export const fundLaneWorkflowType = 'fundLane';

/**
 * The lanes: a funding joins lane laneOf(its key). Two: one lane held up (a slow wallet call, one
 * user's token refresh) leaves half the load moving; few enough that a lane's chunks fill under
 * load, and that the lanes hold at most six of a worker's activity slots (WORKER_MAX_CONCURRENT_ACTIVITIES,
 * 16 by default: each lane's wait for work and its two chunks). Changing it moves keys between lanes:
 * a PENDING funding of a lane no longer run is started on its own by the sweep once it is idle.
 */
export const LANE_COUNT = 2;

/** One run per lane, named after it. */
export const laneWorkflowId = (lane: number) => `funding-lane-${lane}`;

/**
 * The lane of a key (a TOKEN funding's link, so one user's fundings share one lane and one
 * user's token refresh holds up only it; a CODE funding's id, spread evenly): FNV-1a, mod LANE_COUNT.
 */
export function laneOf(key: string): number {
  let hash = 0x811c9dc5;
  for (let index = 0; index < key.length; index += 1) {
    hash ^= key.charCodeAt(index);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash % LANE_COUNT;
}

export interface FundLaneInput {
  lane: number;
  /** Reads per run before it continues as new; absent: 250 (a test's capture makes it short). */
  readsPerRun?: number;
  /** Carried over a continue-as-new: the rate the runs had reached after the wallet's 429s. */
  inFlight?: number;
}

/** Where the current run of a lane stands: for ops' eyes and the tests, never for decisions. Wire name 'progress'. */
export interface LaneProgress {
  lane: number;
  /** Fundings under way in runLaneFundings activities. */
  running: number;
  /** Fundings this run dispatched (a run continues as new after a bound). */
  dispatched: number;
  /** Items it may run at once now (lowered by the wallet's 429s, raised back by successes). */
  inFlight: number;
}
export const laneProgressQuery = defineQuery<LaneProgress>('progress');

/**
 * fundLane's activities' time-outs (ms). The chunk's are the batch's (workflows/fund-batch.contract.ts):
 * the same pass, the same heartbeat. The wait for work answers before its time-out.
 */
export const fundLaneActivityTimeouts = {
  /** The longest nextLaneFundings waits for a funding to arrive before it answers none. */
  waitForWorkMs: 20_000,
  /** nextLaneFundings' start-to-close: the wait and its query. */
  nextMs: 30_000,
} as const;

/** The activities fundLane schedules (activities/funding-lane.ts implements them, taking its types from here). */
export interface FundLaneActivities {
  /**
   * The lane's PENDING fundings in arrival order, at most `limit`, leaving out `under` (those the
   * run dispatched and that are still under way); when there are none, waits up to
   * waitForWorkMs for one to arrive, then answers what there is (maybe none).
   */
  nextLaneFundings(lane: number, under: string[], limit: number): Promise<string[]>;
  /**
   * A chunk of the lane's fundings, each exactly once: the chunk pass, as a batch's items take it
   * (fundItemsInOnePass), and whatever a pass left unfinished handed to the funding's own fundWallet
   * workflow. A retried attempt finds its fundings past PENDING and hands them over: it never
   * executes twice. `BatchItemsOutcome.notStarted`: left PENDING, taken again by a later chunk.
   */
  runLaneFundings(lane: number, fundingIds: string[]): Promise<BatchItemsOutcome>;
}

/** fundLane's signature: what starters type-check against. A lane runs until it is terminated. */
export type FundLaneWorkflow = (input: FundLaneInput) => Promise<void>;

/**
 * Starts a lane's run, or finds it running; a closed one (terminated, failed) is started again.
 * Safe to repeat: the API, the worker at start-up and the sweep all call it.
 */
export async function startFundLane(client: Client, options: { taskQueue: string; lane: number }): Promise<void> {
  await client.workflow.start<FundLaneWorkflow>(fundLaneWorkflowType, {
    taskQueue: options.taskQueue,
    workflowId: laneWorkflowId(options.lane),
    args: [{ lane: options.lane }],
    workflowIdConflictPolicy: 'USE_EXISTING',
    workflowIdReusePolicy: 'ALLOW_DUPLICATE',
  });
}
