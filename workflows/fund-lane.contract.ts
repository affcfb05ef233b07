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
 * load, and that the lanes hold at most four of a worker's activity slots
 * (WORKER_MAX_CONCURRENT_ACTIVITIES, 16 by default: each lane's one or two chunks, which wait for work
 * inside their activity). Changing it moves keys between lanes: a PENDING funding of a lane no longer run is
 * started on its own by the sweep once it is idle.
 */
export const LANE_COUNT = 2;

/**
 * One run per lane of a deployment, named after its task queue and the lane (`walletflow-funding-lane-0`):
 * deployments that share a namespace (the test suite's stacks) each run lanes of their own.
 */
export const laneWorkflowId = (taskQueue: string, lane: number) => `${taskQueue}-funding-lane-${lane}`;

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
  /** Chunks per run before it continues as new; absent: 250 (a test's capture makes it short). */
  chunksPerRun?: number;
  /** Carried over a continue-as-new: the rate the runs had reached after the wallet's 429s. */
  inFlight?: number;
  /**
   * Carried over a continue-as-new while the wallet's last Retry-After still runs: the workflow time (ms since the
   * epoch) before which nothing new starts. Absent when no wait outlasted the run (so a run that continued without one
   * gives the next the same input as before).
   */
  resumeAt?: number;
}

/** Where the current run of a lane stands: for ops' eyes and the tests, never for decisions. Wire name 'progress'. */
export interface LaneProgress {
  lane: number;
  /** Chunks under way. */
  running: number;
  /** Chunks this run dispatched (a run continues as new after a bound). */
  dispatched: number;
  /** Fundings this run's chunks took on. */
  carried: number;
  /** Items it may run at once now (lowered by the wallet's 429s, raised back by successes). */
  inFlight: number;
}
export const laneProgressQuery = defineQuery<LaneProgress>('progress');

/**
 * How long a lane's chunk waits for a funding to arrive before it answers that none did (ms). The
 * chunk's time-outs and heartbeat are the batch's (workflows/fund-batch.contract.ts): the same pass.
 */
export const LANE_WAIT_FOR_WORK_MS = 20_000;

/** What a lane's chunk did: a batch chunk's counts, and how many fundings it took on (0: none came). */
export type LaneChunkOutcome = BatchItemsOutcome & { taken: number };

/** The activities fundLane schedules (activities/funding-lane.ts implements them, taking its types from here). */
export interface FundLaneActivities {
  /**
   * One chunk of the lane, exactly once each: waits (up to LANE_WAIT_FOR_WORK_MS) until fundings
   * wait in the lane, takes the next `limit` of them on (picked and claimed in one statement, so two
   * chunks never take the same one) and runs them through the batch items' chunk pass; whatever a
   * pass left unfinished is handed to the funding's own fundWallet workflow. A retried attempt
   * hands over what its earlier attempts took and left unfinished, and takes nothing new: it never
   * executes twice.
   */
  runLaneChunk(lane: number, limit: number): Promise<LaneChunkOutcome>;
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
    workflowId: laneWorkflowId(options.taskQueue, options.lane),
    args: [{ lane: options.lane }],
    workflowIdConflictPolicy: 'USE_EXISTING',
    workflowIdReusePolicy: 'ALLOW_DUPLICATE',
  });
}
