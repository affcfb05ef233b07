// fundLane: carries the single fundings of one lane (docs/fundings.md, Lanes), each exactly once.
//   next      ← nextLaneFundings: the lane's PENDING fundings in arrival order, leaving out those
//               under way; none: it waits (inside the activity) for one to arrive
//   chunks    → runLaneFundings: the batch items' chunk pass, whatever a pass left unfinished handed
//               to the funding's own fundWallet workflow
//   at most inFlight fundings at once, in CHUNKS_IN_FLIGHT chunks; a 429 from the wallet: the lane
//   waits its Retry-After and halves inFlight; inFlight fundings done in a row give one back
//   every CHUNKS_PER_RUN chunks (or when Temporal suggests it): continue-as-new, so the history
//   stays bounded however long the lane runs
// A lane never ends on its own: the API, the worker and the sweep start it when it is not running.
// Deterministic code only; inputs, results and the query carry ids, lanes and counts only.
import {
  condition,
  continueAsNew,
  log,
  proxyActivities,
  setHandler,
  setWorkflowOptions,
  sleep,
  workflowInfo,
} from '@temporalio/workflow';
import { fundBatchActivityTimeouts, type BatchItemsOutcome } from './fund-batch.contract.ts';
import {
  fundLaneActivityTimeouts,
  laneProgressQuery,
  type FundLaneActivities,
  type FundLaneInput,
} from './fund-lane.contract.ts';

/** Fundings a lane runs at once, at most: two chunks of 16, a batch runner's default. */
const MAX_IN_FLIGHT = 32;
/** Chunks under way at once: one chunk's calls go out while the other's writes are made. */
const CHUNKS_IN_FLIGHT = 2;
/**
 * Reads per run before it continues as new (a chunk's, or an idle lane's wait that found nothing):
 * at most about 12 events each, a history of a few thousand.
 */
const READS_PER_RUN = 250;
/** The longest the lane waits on one 429 (as a batch does). */
const MAX_SLOW_DOWN_MS = 5 * 60_000;

/** A chunk's run: retried with backoff, without a bound; a retried attempt hands its fundings over (never twice). */
const chunks = proxyActivities<Pick<FundLaneActivities, 'runLaneFundings'>>({
  startToCloseTimeout: fundBatchActivityTimeouts.runItemMs,
  heartbeatTimeout: fundBatchActivityTimeouts.heartbeatMs,
  retry: { initialInterval: '2 seconds', backoffCoefficient: 2, maximumInterval: '1 minute' },
});

/** The wait for work: a read, safe to repeat. */
const next = proxyActivities<Pick<FundLaneActivities, 'nextLaneFundings'>>({
  startToCloseTimeout: fundLaneActivityTimeouts.nextMs,
  retry: { initialInterval: '500 milliseconds', backoffCoefficient: 2, maximumInterval: '30 seconds' },
});

// Auto-upgrade (docs/changing-workflows.md): a lane runs for as long as the deployment does, so it
// moves to the current build at its next workflow task (an activity finishing); that build replays
// its history, and a change to its commands goes behind patched() while a run of the code before
// may be open.
setWorkflowOptions({ versioningBehavior: 'AUTO_UPGRADE' }, fundLane);

export async function fundLane(input: FundLaneInput): Promise<void> {
  const lane = input.lane;
  const readsPerRun = Math.max(1, Math.floor(input.readsPerRun ?? READS_PER_RUN));
  let inFlight = Math.min(MAX_IN_FLIGHT, Math.max(1, Math.floor(input.inFlight ?? MAX_IN_FLIGHT)));
  /** Fundings under way, by id (left out of the next read until their chunk is done). */
  const under = new Set<string>();
  let reads = 0;
  let dispatched = 0;
  let successes = 0;
  let slowDowns = 0;
  let resumeAt = 0;
  setHandler(laneProgressQuery, () => ({ lane, running: under.size, dispatched, inFlight }));

  const onOutcome = (outcome: BatchItemsOutcome, count: number, halvingsBefore: number) => {
    if (outcome.slowDownMs !== null) {
      resumeAt = Math.max(resumeAt, Date.now() + Math.min(Math.max(outcome.slowDownMs, 0), MAX_SLOW_DOWN_MS));
      successes = 0;
      // One halving per episode: the chunks already under way when it halved tell of the same congestion.
      if (halvingsBefore === slowDowns) {
        inFlight = Math.max(1, Math.floor(inFlight / 2));
        slowDowns += 1;
      }
      return;
    }
    successes += count;
    if (successes >= inFlight && inFlight < MAX_IN_FLIGHT) {
      inFlight += 1;
      successes = 0;
    }
  };

  const dispatch = (fundingIds: string[]) => {
    for (const id of fundingIds) under.add(id);
    dispatched += fundingIds.length;
    const halvingsBefore = slowDowns;
    chunks
      .runLaneFundings(lane, fundingIds)
      .then(
        (outcome) => onOutcome(outcome, fundingIds.length, halvingsBefore),
        (error: unknown) => {
          // Only the run's own cancellation gets here (the activity retries without a bound):
          // the fundings' rows tell where they stand, and the sweep takes on any left idle.
          log.error('lane fundings could not be run', {
            lane,
            count: fundingIds.length,
            error: error instanceof Error ? error.message : String(error),
          });
        },
      )
      .finally(() => {
        for (const id of fundingIds) under.delete(id);
      });
  };

  for (;;) {
    if (reads >= readsPerRun || workflowInfo().continueAsNewSuggested) {
      // Only once no chunk is under way: their outcomes belong to this run.
      await condition(() => under.size === 0);
      return continueAsNew<typeof fundLane>({ ...input, inFlight });
    }
    if (Date.now() < resumeAt) {
      // The wallet asked us to slow down: nothing new until then.
      await sleep(resumeAt - Date.now());
      continue;
    }
    const room = Math.min(Math.ceil(inFlight / CHUNKS_IN_FLIGHT), inFlight - under.size);
    if (room <= 0) {
      await condition(
        () => under.size < inFlight && Math.min(Math.ceil(inFlight / CHUNKS_IN_FLIGHT), inFlight - under.size) > 0,
      );
      continue;
    }
    reads += 1;
    const fundingIds = await next.nextLaneFundings(lane, [...under], room);
    if (fundingIds.length > 0) dispatch(fundingIds);
  }
}
