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
import { startAttemptLease, type AttemptLease } from './attempt-lease.ts';
import type { FundingActivities } from './funding.ts';

export interface CarriedChunkDependencies {
  /** The fundings' rows: the row a funding is handed over from, and the owner's beats. */
  fundings: Pick<FundingRecord, 'get' | 'seeOwners'>;
  /** The chunk pass, as the funding activities built it (the same routine as a single funding's one pass). */
  funding: Pick<FundingActivities, 'fundItemsInOnePass'>;
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
    });
    logger.info(
      { carrier: carrier.label, fundingId, status: funding.status, why },
      'funding handed to its own workflow',
    );
    return 'handed-over';
  }

  /**
   * One chunk: its fundings' passes, then each funding it did not finish handed over or left PENDING; nothing once its
   * lease ended.
   */
  async function runChunk(
    carrier: ChunkCarrier,
    fundingIds: string[],
    lease: AttemptLease,
  ): Promise<BatchItemsOutcome> {
    const run = Context.current().info.workflowExecution;
    // The chunk pass takes the fresh fundings on together, the others (a cancel holds them) each in its own pass.
    let passes: Map<string, OnePassOutcome | 'failed'>;
    try {
      passes = (await deps.funding.fundItemsInOnePass(fundingIds, lease.current, run)).outcomes;
    } catch (error) {
      // Nothing is assumed about what the chunk did: a funding past PENDING goes to its own
      // workflow, which claims it (fencing out anything still under way); a PENDING one stays the carrier's.
      logger.warn(
        { carrier: carrier.label, err: (error as Error).message },
        'chunk pass failed: handing its fundings over',
      );
      passes = new Map();
    }
    const outcome: BatchItemsOutcome = { finished: 0, handedOver: 0, notStarted: 0, slowDownMs: null };
    for (const fundingId of fundingIds) {
      const pass = passes.get(fundingId) ?? 'failed';
      if (pass !== 'failed' && pass.kind === 'finished') {
        outcome.finished += 1;
        continue;
      }
      const why = pass === 'failed' ? 'one pass failed' : `one pass: ${pass.kind}`;
      // A replaced attempt hands nothing over: the current one does, from the record.
      if (!lease.current()) throw attemptReplaced(carrier.label);
      const handed = await startItsWorkflow(carrier, fundingId, why);
      if (handed === 'finished') outcome.finished += 1;
      else if (handed === 'not-started') outcome.notStarted += 1;
      else outcome.handedOver += 1;
      // The wallet refused the create with 429 (nothing created): the funding's workflow retries it
      // after the wallet's Retry-After, and the carrier slows down. Another transient failure (a
      // reset connection, a 503) is the funding's alone: it is handed over, no more.
      if (pass !== 'failed' && pass.kind === 'create-later' && pass.rateLimited)
        outcome.slowDownMs = Math.max(outcome.slowDownMs ?? 0, pass.retryAfterMs ?? DEFAULT_SLOW_DOWN_MS);
    }
    return outcome;
  }

  return {
    /**
     * Runs a chunk as an activity: alive while this process runs (a frozen or dead one stops
     * beating, and the chunk is tried again after its heartbeat time-out: the new attempt claims
     * the fundings anew). While it is the current attempt, its beats also show the sweep that its
     * fundings have a live owner; once it may have been replaced, it claims, calls and hands over nothing more.
     */
    async runCarriedChunk(carrier: ChunkCarrier, fundingIds: string[]): Promise<BatchItemsOutcome> {
      const context = Context.current();
      const lease = startAttemptLease({
        heartbeat: () => context.heartbeat(),
        cancelled: context.cancellationSignal,
        everyMs: fundBatchActivityTimeouts.heartbeatEveryMs,
        lapseMs: CHUNK_LEASE_LAPSE_MS,
        whileCurrent: { everyMs: SEE_OWNERS_EVERY_MS, run: () => fundings.seeOwners(fundingIds) },
        onLapse: (gapMs) =>
          logger.warn(
            { carrier: carrier.label, gapMs: Math.round(gapMs) },
            'chunk: its heartbeat lapsed; it stops (another attempt may have taken it over)',
          ),
      });
      try {
        return await runChunk(carrier, fundingIds, lease);
      } finally {
        lease.stop();
      }
    },
  };
}

export type CarriedChunks = ReturnType<typeof createCarriedChunks>;
