// A chunk of fundings carried by a shared run (a batch's runner, workflows/fund-batch.ts, or a
// lane, workflows/fund-lane.ts): one routine for both. The chunk pass (activities/funding-chunk.ts
// fundItemsInOnePass) takes its fresh fundings on together; whatever a pass leaves unfinished goes
// to the funding's own fundWallet workflow, whose step path claims it and trusts nothing it did not
// write. So a funding never waits inside the shared run's activity for a retry, a reconciliation
// or a review, and an attempt retried after one that did get somewhere finds its fundings past
// PENDING and hands them over: it never executes twice. A PENDING funding stays the carrier's,
// which dispatches it again.
import { ApplicationFailure, Context } from '@temporalio/activity';
import type { Client } from '@temporalio/client';
import { isFinalFundingStatus } from '../domain/funding.ts';
import type { Funding } from '../generated/prisma/client.ts';
import type { FundingRecord } from '../fundings/funding-record.ts';
import type { Logger } from '../lib/logger.ts';
import {
  fundBatchActivityTimeouts,
  WORKER_HEARTBEAT_THROTTLE_MS,
  type BatchItemsOutcome,
} from '../workflows/fund-batch.contract.ts';
import { startFundWallet, type OnePassOutcome } from '../workflows/fund-wallet.contract.ts';
import type { LaneChunkOutcome } from '../workflows/fund-lane.contract.ts';
import { startAttemptLease, type AttemptLease } from './attempt-lease.ts';
import { activityClock } from './activity-clock.ts';
import type { FundingActivities } from './funding.ts';

export interface CarriedChunkDependencies {
  /** The fundings' rows: the row a funding is handed over from, and the owner's beats. */
  fundings: Pick<FundingRecord, 'get' | 'seeOwners' | 'leftByChunk'>;
  /** The chunk pass, as the funding activities built it (the same routine as a single funding's one pass). */
  funding: Pick<FundingActivities, 'fundItemsInOnePass' | 'fundNextInLane'>;
  /** Starts a funding's own fundWallet workflow. */
  temporal: Client;
  taskQueue: string;
  logger: Logger;
}

/** Who carries the chunk: its name in logs, and which fundings are its own. */
export interface ChunkCarrier {
  /** `batch <id>` or `lane <n>`. */
  label: string;
  /** Whether the funding is this carrier's (an item of the batch, a funding of the lane). */
  owns(funding: Funding): boolean;
  /** The failure for a funding that is not (never retried: nothing the carrier can do for it). */
  notOwned(fundingId: string): ApplicationFailure;
}

/** When the wallet said "later" without saying when: fundWallet's create retry waits as long. */
const DEFAULT_SLOW_DOWN_MS = 1000;
/** The longest a funding handed over after a "later" waits before its first step (a carrier's own bound on a 429). */
const MAX_WAIT_BEFORE_MS = 5 * 60_000;

/**
 * The longest gap between a chunk's beats that still proves it the current attempt: its heartbeat
 * time-out less the worker's heartbeat throttle (a beat may reach the server that much later) and
 * a second's margin.
 */
const CHUNK_LEASE_LAPSE_MS = fundBatchActivityTimeouts.heartbeatMs - WORKER_HEARTBEAT_THROTTLE_MS - 1000;
/**
 * How often a current chunk shows its fundings' owner alive to the sweep (well under RECONCILE_AFTER_SECONDS, at least
 * 60 s).
 */
const SEE_OWNERS_EVERY_MS = 2000;

/** A chunk attempt that may have been replaced: it stops, and Temporal's current attempt goes on. */
const attemptReplaced = (label: string) =>
  ApplicationFailure.retryable(
    `a chunk of ${label} stopped: its attempt may have been replaced (its heartbeat lapsed)`,
    'ChunkAttemptReplaced',
  );

export function createCarriedChunks(deps: CarriedChunkDependencies) {
  const { fundings, logger } = deps;

  /**
   * The funding's own workflow takes it on, under the id stored on its row (an attempt Temporal
   * replaced after a missed heartbeat still gets here: the SDK does not abort its calls, and the
   * start finds the successor's workflow): a second start (a retried activity) finds the running
   * one, and a closed one is left alone (that run already ended it).
   */
  async function startItsWorkflow(
    carrier: ChunkCarrier,
    fundingId: string,
    why: string,
    waitBeforeMs: number | undefined,
  ): Promise<'handed-over' | 'finished' | 'not-started'> {
    const funding = await fundings.get(fundingId);
    if (!carrier.owns(funding)) throw carrier.notOwned(fundingId);
    // Final already (an earlier attempt's pass finished it, or a cancel did): nothing is left for a workflow to do.
    if (isFinalFundingStatus(funding.status)) return 'finished';
    // Not started (the batch stopped, or the pass did not get to it): a PENDING funding stays the
    // carrier's, which dispatches it again; never its own workflow's, which would make it a second
    // owner of a funding the carrier may dispatch again.
    if (funding.status === 'PENDING') return 'not-started';
    await startFundWallet(deps.temporal, {
      workflowId: funding.workflowId,
      taskQueue: deps.taskQueue,
      fundingId,
      status: funding.status,
      recipientType: funding.recipientType,
      reusePolicy: 'reject-duplicate',
      ...(waitBeforeMs === undefined ? {} : { waitBeforeMs }),
    });
    logger.info(
      { carrier: carrier.label, fundingId, status: funding.status, why },
      'funding handed to its own workflow',
    );
    return 'handed-over';
  }

  /**
   * What the passes left: each funding not finished handed to its own workflow or left PENDING (the
   * carrier takes it again). Once the lease ended, only what `evenIfReplaced` names; an attempt that
   * skipped any other then fails (Temporal's current attempt goes on). An answer of a replaced attempt
   * is refused by Temporal, whichever it gives.
   */
  async function handOverWhatIsLeft(
    carrier: ChunkCarrier,
    fundingIds: readonly string[],
    passes: Map<string, OnePassOutcome>,
    lease: AttemptLease,
    evenIfReplaced: (fundingId: string) => boolean = () => false,
  ): Promise<BatchItemsOutcome> {
    const outcome: BatchItemsOutcome = { finished: 0, handedOver: 0, notStarted: 0, slowDownMs: null };
    let replaced = false;
    for (const fundingId of fundingIds) {
      const pass = passes.get(fundingId) ?? 'failed';
      if (pass !== 'failed' && pass.kind === 'finished') {
        outcome.finished += 1;
        continue;
      }
      const why = pass === 'failed' ? 'one pass failed' : `one pass: ${pass.kind}`;
      // A replaced attempt hands over only what its own claims took: a claim that committed after
      // the attempt that replaced it looked at the record (its worker frozen inside the claim's
      // transaction) would be found by no one but the sweep. The rest is the current attempt's, which
      // hands it over from the record. A start is idempotent, and the funding's workflow claims it
      // anew, fencing out this attempt. A lane's retried attempt looks for what its predecessor
      // claimed, so a lane's replaced attempt hands over all it took.
      if (!lease.current() && !evenIfReplaced(fundingId)) {
        replaced = true;
        continue;
      }
      // The wallet said "later" (nothing sent): its workflow waits the wallet's Retry-After first.
      const waitBeforeMs =
        pass === 'failed'
          ? undefined
          : pass.kind === 'create-later'
            ? Math.min(pass.retryAfterMs ?? DEFAULT_SLOW_DOWN_MS, MAX_WAIT_BEFORE_MS)
            : pass.kind === 'execute' && pass.retryAfterMs !== null
              ? Math.min(pass.retryAfterMs, MAX_WAIT_BEFORE_MS)
              : undefined;
      const handed = await startItsWorkflow(carrier, fundingId, why, waitBeforeMs);
      if (handed === 'finished') outcome.finished += 1;
      else if (handed === 'not-started') outcome.notStarted += 1;
      else outcome.handedOver += 1;
      // The wallet refused the create with 429 (nothing created): the funding's workflow retries it
      // after the wallet's Retry-After, and the carrier slows down. Another transient failure (a
      // reset connection, a 503) is the funding's alone: it is handed over, no more.
      if (pass !== 'failed' && pass.kind === 'create-later' && pass.rateLimited)
        outcome.slowDownMs = Math.max(outcome.slowDownMs ?? 0, pass.retryAfterMs ?? DEFAULT_SLOW_DOWN_MS);
    }
    if (replaced) throw attemptReplaced(carrier.label);
    return outcome;
  }

  /**
   * Runs `work` as the chunk's activity attempt: alive while this process runs (a frozen or dead one
   * stops beating, and the chunk is tried again after its heartbeat time-out). While it is the
   * current attempt, its beats also show the sweep that the fundings in `beating` have a live
   * owner; once it may have been replaced, it claims, calls and hands over nothing more.
   */
  async function underLease<T>(
    carrier: ChunkCarrier,
    beating: readonly string[],
    work: (lease: AttemptLease) => Promise<T>,
  ): Promise<T> {
    const context = Context.current();
    const lease = startAttemptLease({
      heartbeat: () => context.heartbeat(),
      cancelled: context.cancellationSignal,
      everyMs: fundBatchActivityTimeouts.heartbeatEveryMs,
      lapseMs: CHUNK_LEASE_LAPSE_MS,
      whileCurrent: { everyMs: SEE_OWNERS_EVERY_MS, run: () => fundings.seeOwners([...beating]) },
      onLapse: (gapMs) =>
        logger.warn(
          { carrier: carrier.label, gapMs: Math.round(gapMs) },
          'chunk: its heartbeat lapsed; it stops (another attempt may have taken it over)',
        ),
    });
    try {
      return await work(lease);
    } finally {
      lease.stop();
    }
  }

  return {
    /**
     * A chunk of given fundings (a batch's items): the chunk pass takes the fresh ones on together,
     * the others (a cancel holds them) each in its own pass; then what is left is handed over. A
     * retried attempt finds its fundings past PENDING and hands them over: it never executes twice.
     */
    runCarriedChunk: (carrier: ChunkCarrier, fundingIds: string[]): Promise<BatchItemsOutcome> =>
      underLease(carrier, fundingIds, async (lease) => {
        const run = Context.current().info.workflowExecution;
        // What this attempt's claims took, as each commits: its own to hand over, even once replaced.
        const claimedHere = new Set<string>();
        const attempt = {
          current: lease.current,
          ...(run ? { carrier: run } : {}),
          claimed: (ids: string[]) => ids.forEach((id) => claimedHere.add(id)),
        };
        let passes: Map<string, OnePassOutcome>;
        try {
          passes = (await deps.funding.fundItemsInOnePass(fundingIds, attempt)).outcomes;
        } catch (error) {
          // Nothing is assumed about what the chunk did: a funding past PENDING goes to its own
          // workflow, which claims it (fencing out anything still under way); a PENDING one stays the carrier's.
          logger.warn(
            { carrier: carrier.label, err: (error as Error).message },
            'chunk pass failed: handing its fundings over',
          );
          passes = new Map();
        }
        return handOverWhatIsLeft(carrier, fundingIds, passes, lease, (id) => claimedHere.has(id));
      }),

    /**
     * A lane's chunk: once `waitForWork` says the lane has fundings waiting, the next `limit` of them
     * claimed (recording this activity as their carrier) and passed together, then what is left
     * handed over. A retried attempt first hands over what its earlier attempts claimed and left
     * unfinished (found by the carrier they recorded), and takes nothing new.
     */
    runLaneChunk: (
      carrier: ChunkCarrier & { lane: number },
      limit: number,
      waitForWork: () => Promise<boolean>,
    ): Promise<LaneChunkOutcome> => {
      const info = Context.current().info;
      // Always set for an activity a workflow scheduled (the lane's); empty only when called outside one (a test).
      const chunk = {
        workflowId: info.workflowExecution?.workflowId ?? '',
        runId: info.workflowExecution?.runId ?? '',
        chunk: info.activityId,
      };
      // Read before the wait for work: start-to-close counts from the activity's start.
      const clock = activityClock();
      const beating: string[] = [];
      // A replaced attempt of a lane hands over all it took (see handOverWhatIsLeft).
      const allItTook = () => true;
      return underLease(carrier, beating, async (lease) => {
        if (info.attempt > 1) {
          const left = await fundings.leftByChunk(chunk);
          beating.push(...left);
          return { ...(await handOverWhatIsLeft(carrier, left, new Map(), lease, allItTook)), taken: left.length };
        }
        if (!(await waitForWork()) || !lease.current()) return { ...noneTaken };
        let taken: string[];
        let passes: Map<string, OnePassOutcome>;
        try {
          const pass = await deps.funding.fundNextInLane(carrier.lane, limit, chunk, {
            clock,
            current: lease.current,
            // Beaten from the claim on: the sweep sees a live owner for the whole pass.
            claimed: (ids) => beating.push(...ids),
          });
          ({ taken, outcomes: passes } = pass);
        } catch (error) {
          // What it claimed is found by its carrier and handed over; nothing is assumed about it.
          logger.warn(
            { carrier: carrier.label, err: (error as Error).message },
            'lane chunk pass failed: handing its fundings over',
          );
          taken = await fundings.leftByChunk(chunk);
          passes = new Map();
        }
        return { ...(await handOverWhatIsLeft(carrier, taken, passes, lease, allItTook)), taken: taken.length };
      });
    },
  };
}

const noneTaken: LaneChunkOutcome = { finished: 0, handedOver: 0, notStarted: 0, slowDownMs: null, taken: 0 };

export type CarriedChunks = ReturnType<typeof createCarriedChunks>;
