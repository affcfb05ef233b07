// fundBatch's contract: what its starters and the workflow itself agree on (type name, input and
// result, workflow id, the signal a state change sends, the activities it schedules) and the one
// start every starter uses. Imported by the workflow bundle: runtime imports from @temporalio/*
// and workflows/ only (the workflow imports this file, never the reverse).
import type { Client } from '@temporalio/client';
import { defineQuery, defineSignal } from '@temporalio/workflow';
import type { BatchState } from '../domain/funding-batch.ts';
import { ignoringClosedRun, startOncePolicies } from './idempotent-start.ts';

/** The workflow type: the name Temporal and every stored history know it by (the function's name). */
export const fundBatchWorkflowType = 'fundBatch';

/** One runner per batch, named after it. */
export const batchWorkflowId = (batchId: string) => `funding-batch-${batchId}`;

export interface FundBatchInput {
  batchId: string;
  /** BATCH_MAX_IN_FLIGHT: items being worked on at once, at most. */
  maxInFlight: number;
  /** Items dispatched per run before it continues as new (its history stays bounded); absent: 2000. */
  itemsPerRun?: number;
  /** Carried over a continue-as-new: the last item dispatched (items go in id order). */
  afterId?: string | null;
  /** Carried over a continue-as-new: the rate the runs had reached after the wallet's 429s. */
  inFlight?: number;
  /**
   * Carried over a continue-as-new while the wallet's last Retry-After still runs: the workflow time (ms since the
   * epoch) before which nothing new starts. Absent when no wait outlasted the run (so a run that continued without one
   * gives the next the same input as before).
   */
  resumeAt?: number;
}

export interface FundBatchResult {
  /** How the batch ended: COMPLETED (every item final or in review), CANCELLED, or REJECTED. */
  state: BatchState;
}

/** Sent by the API after it moved the batch (pause, resume, cancel): the runner reads the state again. */
export const batchStateChangedSignal = defineSignal<[]>('batchStateChanged');

/**
 * Where the current run of the runner stands: for ops' eyes and the tests, never for decisions. Wire name 'progress'.
 */
export interface BatchRunnerProgress {
  /** The batch's state as the runner last read it. */
  state: BatchState;
  /** Items it may run at once now (lowered by the wallet's 429s, raised back by successes). */
  inFlight: number;
  /** Items under way (in runBatchItems activities). */
  running: number;
  /** Items this run dispatched (a run continues as new after itemsPerRun). */
  dispatched: number;
  /** The last item dispatched (items go in id order). */
  afterId: string | null;
  /** Times this run halved inFlight after a 429. */
  slowDowns: number;
  /** Until when nothing is dispatched after a 429 (ISO time), or null. */
  waitingUntil: string | null;
  /** Every PENDING item was dispatched: the run waits for the items handed to their own workflows. */
  draining: boolean;
}
export const batchProgressQuery = defineQuery<BatchRunnerProgress>('progress');

/** The ApplicationFailure types the batch activities throw and fundBatch never retries. */
export const fundBatchFailureTypes = {
  /** No batch with this id, or a funding id that is not one of its items. */
  notFound: 'BatchNotFound',
} as const;

/**
 * fundBatch's activities' time-outs and a chunk's heartbeat (ms). A chunk's run holds its items' passes (a TOKEN
 * item's may wait for the token vault's refresh lock; the creates, the executes and the writes; no
 * wallet call starts that could outlive the activity) and the start of an item's own workflow when
 * its pass left it unfinished.
 */
export const fundBatchActivityTimeouts = {
  runItemMs: 150_000,
  /**
   * A chunk's heartbeat time-out: a chunk on a worker that died or froze is tried again after
   * this, not after runItemMs (its items would wait minutes on a dead worker). The attempt that
   * takes over claims the items anew, so a frozen one that goes on writes nothing (fencing).
   */
  heartbeatMs: 10_000,
  /** How often a chunk records a heartbeat; the worker sends one at most every WORKER_HEARTBEAT_THROTTLE_MS. */
  heartbeatEveryMs: 1000,
  /** The small reads and the completion: a few indexed queries each. */
  readMs: 30_000,
} as const;

/**
 * The longest the worker holds a heartbeat before sending it (its option
 * maxHeartbeatThrottleInterval; the SDK's own is 80% of the time-out, which would leave a chunk
 * 2 s of slack). Every worker that runs fundBatch's activities is created with it.
 */
export const WORKER_HEARTBEAT_THROTTLE_MS = 2000;

/** What the runner did with a chunk of items. */
export interface BatchItemsOutcome {
  /** Finished here: approved, declined, refused, failed before any execute (each funding says which). */
  finished: number;
  /** Handed to their own fundWallet workflows, which take them over (a retry, an unknown outcome, a review). */
  handedOver: number;
  /** Left PENDING: the batch was no longer RUNNING when they would have started (the runner starts them on resume). */
  notStarted: number;
  /**
   * The wallet said "later" to a create (429: nothing created): the whole batch waits this long (those items went to
   * their workflows).
   */
  slowDownMs: number | null;
}

/** The activities fundBatch schedules (activities/batch.ts implements them, taking its types from here). */
export interface FundBatchActivities {
  /** The batch's state as stored. */
  batchState(batchId: string): Promise<BatchState>;
  /** The next items not yet started, after `afterId`, in id order: their funding ids. */
  nextBatchItems(batchId: string, afterId: string | null, limit: number): Promise<string[]>;
  /**
   * A chunk of items, each exactly once: the chunk pass (fundItemsInOnePass: the one pass of each,
   * its writes set-based, under each item's ownership rules), or an item's own one pass; whatever
   * a pass leaves unfinished is handed to the item's own fundWallet workflow.
   */
  runBatchItems(batchId: string, fundingIds: string[]): Promise<BatchItemsOutcome>;
  /** Items neither final nor in review. */
  unfinishedBatchItems(batchId: string): Promise<number>;
  /** RUNNING → COMPLETED, with its webhook; answers the state the batch is in after it. */
  completeBatch(batchId: string): Promise<BatchState>;
}

/** fundBatch's signature: what starters type-check against. */
export type FundBatchWorkflow = (input: FundBatchInput) => Promise<FundBatchResult>;

/**
 * Starts the batch's runner; a second start finds the running one, and a finished one is left
 * alone, unless `again` (the sweep, for a batch still under way whose runner closed).
 */
export async function startFundBatch(
  client: Client,
  options: { taskQueue: string; input: FundBatchInput; again?: boolean },
): Promise<void> {
  await ignoringClosedRun(
    client.workflow.start<FundBatchWorkflow>(fundBatchWorkflowType, {
      taskQueue: options.taskQueue,
      workflowId: batchWorkflowId(options.input.batchId),
      args: [options.input],
      ...startOncePolicies,
      ...(options.again ? { workflowIdReusePolicy: 'ALLOW_DUPLICATE' as const } : {}),
    }),
  );
}
