// fundBatch: runs a funding batch's items (contract-decisions section 14), each exactly once.
//   items      ← the batch's PENDING items, a page at a time, in id order after the last dispatched
//   chunks     → runBatchItems: half of inFlight items in one pass together (their writes
//                set-based), each item handed to its own fundWallet workflow when the pass left it
//   at most inFlight items at once; a 429 from the wallet: the whole batch waits its Retry-After
//   and halves inFlight; inFlight items done in a row without one give one back, up to maxInFlight
//   a state change (signal): PAUSED stops dispatching until the next one; CANCELLED or REJECTED
//   ends the run once the items under way are done
//   every itemsPerRun items: continue-as-new, so the history stays bounded at any batch size
//   no PENDING item left: wait for the handed-over ones (polling the count), then COMPLETED
// Deterministic code only: the batch's state, its items and the clock come from activities and
// Temporal; inputs, results and the query carry ids, states and counts only.
import {
  condition,
  continueAsNew,
  log,
  proxyActivities,
  setHandler,
  setWorkflowOptions,
  workflowInfo,
} from '@temporalio/workflow';
import type { BatchState } from '../domain/funding-batch.ts';
import {
  batchProgressQuery,
  batchStateChangedSignal,
  fundBatchActivityTimeouts,
  fundBatchFailureTypes,
  type FundBatchActivities,
  type FundBatchInput,
  type FundBatchResult,
} from './fund-batch.contract.ts';
import { carriedResumeAt, InFlightRate } from './in-flight-rate.ts';

/**
 * Items dispatched per run before it continues as new, unless the input says: 125 chunks of 16 at
 * the default BATCH_MAX_IN_FLIGHT (32), a history of about 1,100 events (the most a run of the
 * bench's batches wrote: docs/benchmarks.md, Funding batches).
 */
const DEFAULT_ITEMS_PER_RUN = 2000;
/** Item ids read per page: enough to keep maxInFlight busy between reads, small enough to be one quick query. */
const PAGE_SIZE = 200;
/**
 * runBatchItems activities under way at once, at most: inFlight items are split into this many
 * chunks (32 in flight: two chunks of 16). Few activities, so a batch of any BATCH_MAX_IN_FLIGHT
 * holds at most two of the worker's activity slots (WORKER_MAX_CONCURRENT_ACTIVITIES, 16) and
 * never starves single fundings' activities; two, so one chunk's calls go out while the other's
 * writes are made. Measured (bench --batch, 2 cores): four chunks of 8, 95-130 items/s at 8-10 ms
 * of CPU per item; two of 16, 163 items/s at 5.7 ms.
 */
const CHUNKS_IN_FLIGHT = 2;
/** While paused (or waiting for approval) the state is read again this often, in case a signal was lost. */
const IDLE_RECHECK_MS = 5 * 60_000;
/** Timed waits per run (drain polls, idle re-checks) before it continues as new: each adds a few events. */
const WAITS_PER_RUN = 200;

/**
 * Waits between drain polls: short at first (most items finish in seconds), then every 10 s, so a batch whose last
 * item finished in its own workflow is COMPLETED within 10 s of it, where it waited up to 30 s (a poll a few events
 * and one indexed count; a run continues as new after WAITS_PER_RUN of them).
 */
function drainPollMs(poll: number): number {
  return Math.min(2000 * 2 ** Math.min(poll, 3), 10_000);
}

const nonRetryableErrorTypes = [fundBatchFailureTypes.notFound];

/**
 * A chunk's run: retried with backoff, without a bound. A retried attempt finds its items past
 * PENDING and hands them over to their own workflows, so a retry never executes twice; an item is
 * never dropped (its funding would stay PENDING, and the batch could never complete).
 */
const items = proxyActivities<Pick<FundBatchActivities, 'runBatchItems'>>({
  startToCloseTimeout: fundBatchActivityTimeouts.runItemMs,
  // A chunk on a worker that died (or froze) is tried again after this, not after runItemMs.
  heartbeatTimeout: fundBatchActivityTimeouts.heartbeatMs,
  retry: { initialInterval: '2 seconds', backoffCoefficient: 2, maximumInterval: '1 minute', nonRetryableErrorTypes },
});

/** The batch's reads and its completion: short, safe to repeat. */
const reads = proxyActivities<
  Pick<FundBatchActivities, 'batchState' | 'nextBatchItems' | 'unfinishedBatchItems' | 'completeBatch'>
>({
  startToCloseTimeout: fundBatchActivityTimeouts.readMs,
  retry: {
    initialInterval: '500 milliseconds',
    backoffCoefficient: 2,
    maximumInterval: '30 seconds',
    nonRetryableErrorTypes,
  },
});

/** States in which the batch ends: the run returns once its items under way are done. */
const endStates: Record<BatchState, boolean> = {
  AWAITING_APPROVAL: false,
  RUNNING: false,
  PAUSED: false,
  COMPLETED: true,
  CANCELLED: true,
  REJECTED: true,
};

// Auto-upgrade (docs/changing-workflows.md): a run moves to the current build at its next workflow
// task (a timer firing, an activity finishing, a signal), and that build replays its history: a
// change to its commands goes behind patched() while a run of the code before may be open.
setWorkflowOptions({ versioningBehavior: 'AUTO_UPGRADE' }, fundBatch);

export async function fundBatch(input: FundBatchInput): Promise<FundBatchResult> {
  const run = new BatchRun(input);
  run.handleMessages();
  await run.readState();
  return run.dispatchItems();
}

/** One run of the runner: the state it read, its rate, the items it dispatched and those under way. */
class BatchRun {
  readonly batchId: string;
  readonly itemsPerRun: number;
  /** Items that may run at once now: lowered by 429s, raised back by successes, up to the input's maxInFlight. */
  readonly rate: InFlightRate;
  /** The last item dispatched: the next page starts after it, here and in the next run. */
  afterId: string | null;
  state: BatchState = 'RUNNING';
  /** State-change signals received; `signalsRead` of them are answered by the last state read. */
  signals = 0;
  signalsRead = 0;
  /** Items under way (in runBatchItems activities). */
  running = 0;
  dispatched = 0;
  /** Timed waits so far in this run (drain polls, idle re-checks). */
  waits = 0;
  draining = false;
  /** Items read and not yet dispatched, in id order. */
  queue: string[] = [];

  constructor(readonly input: FundBatchInput) {
    this.batchId = input.batchId;
    const maxInFlight = Math.max(1, Math.floor(input.maxInFlight));
    this.itemsPerRun = Math.max(1, Math.floor(input.itemsPerRun ?? DEFAULT_ITEMS_PER_RUN));
    this.rate = new InFlightRate(
      Math.min(maxInFlight, Math.max(1, Math.floor(input.inFlight ?? input.maxInFlight))),
      maxInFlight,
    );
    this.rate.resumeAt = carriedResumeAt(input.resumeAt);
    this.afterId = input.afterId ?? null;
  }

  handleMessages(): void {
    setHandler(batchStateChangedSignal, () => {
      this.signals += 1;
    });
    setHandler(batchProgressQuery, () => ({
      state: this.state,
      inFlight: this.rate.inFlight,
      running: this.running,
      dispatched: this.dispatched,
      afterId: this.afterId,
      slowDowns: this.rate.slowDowns,
      waitingUntil: this.rate.resumeAt > Date.now() ? new Date(this.rate.resumeAt).toISOString() : null,
      draining: this.draining,
    }));
  }

  /** A signal came that the last state read does not answer. */
  signalled(): boolean {
    return this.signals !== this.signalsRead;
  }

  /** Reads the stored state; it answers every signal received before the read began. */
  async readState(): Promise<void> {
    this.signalsRead = this.signals;
    this.state = await reads.batchState(this.batchId);
  }

  /**
   * Continues as new with where this run got to; only once no item is under way (their outcomes belong to this run).
   */
  async continueAsNew(): Promise<never> {
    await condition(() => this.running === 0);
    // A signal that arrives from here on is not lost: the next run reads the state first.
    // A 429 answered while the run waited for its last chunks: its wait goes on in the next run (before, the next run
    // dispatched at once, inside the wallet's Retry-After).
    const { resumeAt: _carried, ...input } = this.input;
    return continueAsNew<typeof fundBatch>({
      ...input,
      afterId: this.afterId,
      inFlight: this.rate.inFlight,
      ...(this.rate.resumeAt > Date.now() ? { resumeAt: this.rate.resumeAt } : {}),
    });
  }

  /** Paused or awaiting approval: until the next signal (or a re-check, in case one was lost), then the state again. */
  async idle(): Promise<void> {
    if (this.waits >= WAITS_PER_RUN && this.running === 0) await this.continueAsNew();
    this.waits += 1;
    await condition(() => this.signalled(), IDLE_RECHECK_MS);
    await this.readState();
  }

  /** The items not yet started, at most inFlight at a time, until none is left or the batch ends. */
  async dispatchItems(): Promise<FundBatchResult> {
    for (;;) {
      if (this.signalled()) await this.readState();
      if (endStates[this.state]) {
        // Cancelled (its PENDING items were cancelled with it) or rejected: the items under way finish.
        await condition(() => this.running === 0);
        return { state: this.state };
      }
      if (this.state !== 'RUNNING') {
        await this.idle();
        continue;
      }
      if (Date.now() < this.rate.resumeAt) {
        // The wallet asked us to slow down: nothing new until then (a cancel or a pause is still heard).
        await condition(() => this.signalled(), this.rate.resumeAt - Date.now());
        continue;
      }
      if (this.dispatched >= this.itemsPerRun || workflowInfo().continueAsNewSuggested) await this.continueAsNew();
      if (this.queue.length === 0) {
        // Each page reads the state too: a signal lost on its way stops the batch a page later at worst.
        await this.readState();
        if (this.state !== 'RUNNING') continue;
        this.queue = await reads.nextBatchItems(
          this.batchId,
          this.afterId,
          Math.min(PAGE_SIZE, this.itemsPerRun - this.dispatched),
        );
        if (this.queue.length === 0) return this.drain();
        continue;
      }
      const inFlight = this.rate.inFlight;
      if (this.running >= inFlight) {
        await condition(() => this.running < this.rate.inFlight || this.signalled());
        continue;
      }
      this.dispatch(this.queue.splice(0, Math.min(Math.ceil(inFlight / CHUNKS_IN_FLIGHT), inFlight - this.running)));
    }
  }

  dispatch(fundingIds: string[]): void {
    this.afterId = fundingIds.at(-1)!;
    this.running += fundingIds.length;
    this.dispatched += fundingIds.length;
    const episode = this.rate.episode();
    items
      .runBatchItems(this.batchId, fundingIds)
      .then(
        (outcome) => this.rate.onOutcome(outcome, fundingIds.length, episode),
        (error: unknown) => {
          // Only a non-retryable failure (a funding that is not an item of this batch) or the
          // runner's own cancellation gets here: nothing the runner can do for these items; their
          // rows tell ops where they stand.
          log.error('batch items could not be run', {
            batchId: this.batchId,
            first: fundingIds[0],
            count: fundingIds.length,
            error: error instanceof Error ? error.message : String(error),
          });
        },
      )
      .finally(() => {
        this.running -= fundingIds.length;
      });
  }

  /**
   * Every item was dispatched: the runs under way finish, then the items handed to their own
   * workflows (a retry, a reconciliation) are waited for by counting them, until none is left
   * (an item in review counts as done). Then the batch is COMPLETED, unless it was paused or
   * ended meanwhile.
   */
  async drain(): Promise<FundBatchResult> {
    this.draining = true;
    await condition(() => this.running === 0);
    for (let poll = 0; ; poll += 1) {
      if (this.signalled()) await this.readState();
      if (endStates[this.state]) return { state: this.state };
      if (this.state !== 'RUNNING') {
        await this.idle();
        continue;
      }
      if ((await reads.unfinishedBatchItems(this.batchId)) === 0) {
        this.state = await reads.completeBatch(this.batchId);
        if (endStates[this.state]) return { state: this.state };
        // Paused meanwhile: the completion waits for the resume.
        continue;
      }
      // An item left PENDING (a pause reached its chunk first, or its pass did not get to it):
      // dispatched again, after a poll's wait. Nothing else owns a PENDING item (the runner never
      // hands one to its own workflow, and the sweep leaves them to the runner).
      const pending = poll === 0 ? [] : await reads.nextBatchItems(this.batchId, null, PAGE_SIZE);
      if (pending.length > 0) {
        this.draining = false;
        this.queue = pending;
        return this.dispatchItems();
      }
      if (this.waits >= WAITS_PER_RUN || workflowInfo().continueAsNewSuggested) await this.continueAsNew();
      this.waits += 1;
      // A durable timer; a cancel meanwhile is heard at once.
      await condition(() => this.signalled(), drainPollMs(poll));
    }
  }
}
