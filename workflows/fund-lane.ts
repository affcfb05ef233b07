// fundLane: carries the single fundings of one lane (docs/fundings.md, Lanes), each exactly once.
//   chunks    → runLaneChunk: waits until fundings wait in the lane, takes the next ones on and runs
//               them through the batch items' chunk pass; whatever a pass left unfinished goes to
//               the funding's own fundWallet workflow
//   one chunk at a time while the lane keeps up (each takes the fundings waiting, up to inFlight);
//   once a chunk came back full (fundings wait behind it), CHUNKS_IN_FLIGHT chunks of half as many,
//   until the last chunk back had room; runs begun before that rule (no patch marker) always ran two
//   halves of ceil(inFlight / 2).
//   A 429 from the wallet: the lane waits its Retry-After and halves inFlight; inFlight fundings
//   done in a row give one back
//   every chunksPerRun chunks (or when Temporal suggests it): continue-as-new, so the history stays
//   bounded however long the lane runs
// A lane never ends on its own: the API, the worker and the sweep start it when it is not running.
// Deterministic code only; inputs, results and the query carry lanes and counts only.
import {
  condition,
  continueAsNew,
  log,
  patched,
  proxyActivities,
  setHandler,
  setWorkflowOptions,
  sleep,
  workflowInfo,
} from '@temporalio/workflow';
import { fundBatchActivityTimeouts } from './fund-batch.contract.ts';
import { carriedResumeAt, InFlightRate } from './in-flight-rate.ts';
import {
  laneProgressQuery,
  type FundLaneActivities,
  type FundLaneInput,
  type LaneChunkOutcome,
} from './fund-lane.contract.ts';

/** Fundings a lane runs at once, at most (a batch runner's default): one chunk of 32, or two of 16. */
const MAX_IN_FLIGHT = 32;
/** Chunks under way at once, at most: one chunk's calls go out while the other's writes are made. */
const CHUNKS_IN_FLIGHT = 2;
/**
 * The patch that sends one chunk at a time until a chunk comes back full: a chunk costs the lane's
 * history six events however many fundings it carries, and two chunks sharing a lane that keeps up
 * carried half as many each (about one event per funding at 32 in flight).
 */
export const LONE_CHUNK_UNTIL_FULL_PATCH = 'lane-lone-chunk-until-full';
/**
 * Chunks per run before it continues as new: six events each (the activity's three and a workflow
 * task's), a history of about 1,500.
 */
const CHUNKS_PER_RUN = 250;
/**
 * A chunk: retried with backoff, without a bound (a retried attempt hands over what the one before
 * took, never executes twice). Its heartbeat time-out is a batch chunk's: a chunk on a worker that
 * died or froze is tried again after it.
 */
const chunks = proxyActivities<Pick<FundLaneActivities, 'runLaneChunk'>>({
  startToCloseTimeout: fundBatchActivityTimeouts.runItemMs,
  heartbeatTimeout: fundBatchActivityTimeouts.heartbeatMs,
  retry: { initialInterval: '2 seconds', backoffCoefficient: 2, maximumInterval: '1 minute' },
});

// Auto-upgrade (docs/changing-workflows.md): a lane runs for as long as the deployment does, so it
// moves to the current build at its next workflow task (an activity finishing); that build replays
// its history, and a change to its commands goes behind patched() while a run of the code before
// may be open.
setWorkflowOptions({ versioningBehavior: 'AUTO_UPGRADE' }, fundLane);

export async function fundLane(input: FundLaneInput): Promise<void> {
  const lane = input.lane;
  const chunksPerRun = Math.max(1, Math.floor(input.chunksPerRun ?? CHUNKS_PER_RUN));
  const rate = new InFlightRate(
    Math.min(MAX_IN_FLIGHT, Math.max(1, Math.floor(input.inFlight ?? MAX_IN_FLIGHT))),
    MAX_IN_FLIGHT,
  );
  rate.resumeAt = carriedResumeAt(input.resumeAt);
  /** Chunks under way, and the fundings they may take together (their limits). */
  let running = 0;
  let reserved = 0;
  let dispatched = 0;
  let carried = 0;
  setHandler(laneProgressQuery, () => ({ lane, running, dispatched, carried, inFlight: rate.inFlight }));
  // Read once, at the run's start: a run begun on the code before (replayed on this one) keeps its two halves.
  const loneUntilFull = patched(LONE_CHUNK_UNTIL_FULL_PATCH);
  /** The last chunk back took as many as it was allowed: fundings are waiting behind it. */
  let backlog = false;

  const onOutcome = (outcome: LaneChunkOutcome, episode: number, limit: number) => {
    carried += outcome.taken;
    backlog = outcome.taken >= limit;
    rate.onOutcome(outcome, outcome.taken, episode);
  };

  const dispatch = (limit: number) => {
    running += 1;
    reserved += limit;
    dispatched += 1;
    const episode = rate.episode();
    chunks
      .runLaneChunk(lane, limit)
      .then(
        (outcome) => onOutcome(outcome, episode, limit),
        (error: unknown) => {
          // Only the run's own cancellation gets here (the activity retries without a bound): the
          // fundings' rows tell where they stand, and the sweep takes on any left idle.
          log.error('lane chunk could not be run', {
            lane,
            error: error instanceof Error ? error.message : String(error),
          });
        },
      )
      .finally(() => {
        running -= 1;
        reserved -= limit;
      });
  };

  for (;;) {
    if (dispatched >= chunksPerRun || workflowInfo().continueAsNewSuggested) {
      // Only once no chunk is under way: their outcomes belong to this run.
      await condition(() => running === 0);
      // A 429 answered while the run waited for its last chunks: its wait goes on in the next run.
      const { resumeAt: _carried, ...rest } = input;
      return continueAsNew<typeof fundLane>({
        ...rest,
        inFlight: rate.inFlight,
        ...(rate.resumeAt > Date.now() ? { resumeAt: rate.resumeAt } : {}),
      });
    }
    if (Date.now() < rate.resumeAt) {
      // The wallet asked us to slow down: nothing new until then.
      await sleep(rate.resumeAt - Date.now());
      continue;
    }
    if (running >= CHUNKS_IN_FLIGHT) {
      await condition(() => running < CHUNKS_IN_FLIGHT);
      continue;
    }
    const half = Math.max(1, Math.ceil(rate.inFlight / CHUNKS_IN_FLIGHT));
    if (!loneUntilFull) {
      dispatch(half);
      continue;
    }
    if (backlog) {
      // Fundings wait behind the lane: two chunks, their limits together at most inFlight.
      const room = rate.inFlight - reserved;
      if (room <= 0) {
        await condition(() => rate.inFlight - reserved > 0);
        continue;
      }
      dispatch(Math.min(half, room));
      continue;
    }
    // The lane keeps up: one chunk at a time, taking every funding waiting when it starts (up to inFlight).
    if (running > 0) {
      await condition(() => running === 0 || backlog);
      continue;
    }
    dispatch(rate.inFlight);
  }
}
