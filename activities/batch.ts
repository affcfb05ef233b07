// The batch runner's activities (workflows/fund-batch.ts): read the batch, page through its items
// not yet started, run one item, count what is left, complete it. An item runs as a single
// funding's one pass (activities/funding.ts fundInOnePass, under the funding's ownership rules);
// whatever the pass leaves unfinished goes to the item's own fundWallet workflow, whose step path
// claims the funding and trusts nothing it did not write. So an item never waits inside the
// batch's activity for a retry, a reconciliation or a review, and an activity retried after an
// attempt that did get somewhere finds its funding past PENDING and hands it over: it never
// executes twice. Signatures and results are the workflow's, declared in its contract.
import { ApplicationFailure, Context } from '@temporalio/activity';
import type { Client } from '@temporalio/client';
import { isFinalFundingStatus } from '../domain/funding.ts';
import type { BatchState } from '../domain/funding-batch.ts';
import type { BatchRecord } from '../fundings/batch-record.ts';
import type { FundingRecord } from '../fundings/funding-record.ts';
import type { Logger } from '../lib/logger.ts';
import {
  fundBatchActivityTimeouts,
  fundBatchFailureTypes,
  WORKER_HEARTBEAT_THROTTLE_MS,
  type BatchItemsOutcome,
  type FundBatchActivities,
} from '../workflows/fund-batch.contract.ts';
import { startFundWallet, type OnePassOutcome } from '../workflows/fund-wallet.contract.ts';
import { startAttemptLease, type AttemptLease } from './attempt-lease.ts';
import type { FundingActivities } from './funding.ts';

export interface BatchActivityDependencies {
  /** The batch's row: its state and its completion (fundings/batch-record.ts). */
  batches: BatchRecord;
  /** The items' rows: the next ones not started, and the row an item is handed over from. */
  fundings: FundingRecord;
  /**
   * The chunk pass, as the funding activities built it (the same routine, records, wallet and vault as a single
   * funding's one pass).
   */
  funding: Pick<FundingActivities, 'fundItemsInOnePass'>;
  /** Starts an item's own fundWallet workflow. */
  temporal: Client;
  taskQueue: string;
  logger: Logger;
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
 * How often a current chunk shows its items' owner alive to the sweep (well under RECONCILE_AFTER_SECONDS, at least 60
 * s).
 */
const SEE_OWNERS_EVERY_MS = 2000;

/** A chunk attempt that may have been replaced: it stops, and Temporal's current attempt goes on. */
const attemptReplaced = (batchId: string) =>
  ApplicationFailure.retryable(
    `a chunk of batch ${batchId} stopped: its attempt may have been replaced (its heartbeat lapsed)`,
    'ChunkAttemptReplaced',
  );

const batchNotFound = (what: string) => ApplicationFailure.nonRetryable(what, fundBatchFailureTypes.notFound);

export function createBatchActivities(deps: BatchActivityDependencies): FundBatchActivities {
  const { batches, fundings, logger } = deps;

  /**
   * The item's own workflow takes it on, under the id stored on its row (an attempt Temporal
   * replaced after a missed heartbeat still gets here: the SDK does not abort its calls, and the
   * start finds the successor's workflow): a second start (a retried
   * activity) finds the running one, and a closed one is left alone (that run already ended it).
   */
  async function startItsWorkflow(
    batchId: string,
    fundingId: string,
    why: string,
  ): Promise<'handed-over' | 'finished' | 'not-started'> {
    const funding = await fundings.get(fundingId);
    if (funding.batchId !== batchId) throw batchNotFound(`funding ${fundingId} is not an item of batch ${batchId}`);
    // Final already (an earlier attempt's pass finished it, or the batch's cancel did): nothing
    // is left for a workflow to do.
    if (isFinalFundingStatus(funding.status)) return 'finished';
    // Not started (the batch stopped, or the pass did not get to it): a PENDING item stays the
    // runner's, which dispatches it again (after a resume); never its own workflow's, which would
    // make it a second owner of an item the runner may dispatch again.
    if (funding.status === 'PENDING') return 'not-started';
    await startFundWallet(deps.temporal, {
      workflowId: funding.workflowId,
      taskQueue: deps.taskQueue,
      fundingId,
      status: funding.status,
      recipientType: funding.recipientType,
      reusePolicy: 'reject-duplicate',
    });
    logger.info({ batchId, fundingId, status: funding.status, why }, 'batch item handed to its own workflow');
    return 'handed-over';
  }

  return {
    async batchState(batchId: string): Promise<BatchState> {
      const batch = await batches.find(batchId);
      if (!batch) throw batchNotFound(`batch ${batchId} does not exist`);
      return batch.state;
    },

    async nextBatchItems(batchId: string, afterId: string | null, limit: number): Promise<string[]> {
      const items = await fundings.nextPendingBatchItems(batchId, afterId, limit);
      return items.map((item) => item.id);
    },

    async runBatchItems(batchId: string, fundingIds: string[]): Promise<BatchItemsOutcome> {
      // Alive while this process runs (a frozen or dead one stops beating, and the chunk is tried
      // again after its heartbeat time-out: the new attempt claims the items anew). While it is
      // the current attempt, its beats also show the sweep that its items have a live owner; once
      // it may have been replaced, it claims, calls and hands over nothing more.
      const context = Context.current();
      const lease = startAttemptLease({
        heartbeat: () => context.heartbeat(),
        cancelled: context.cancellationSignal,
        everyMs: fundBatchActivityTimeouts.heartbeatEveryMs,
        lapseMs: CHUNK_LEASE_LAPSE_MS,
        whileCurrent: { everyMs: SEE_OWNERS_EVERY_MS, run: () => fundings.seeOwners(fundingIds) },
        onLapse: (gapMs) =>
          logger.warn(
            { batchId, gapMs: Math.round(gapMs) },
            'batch chunk: its heartbeat lapsed; it stops (another attempt may have taken it over)',
          ),
      });
      try {
        return await runChunk(batchId, fundingIds, lease);
      } finally {
        lease.stop();
      }
    },

    unfinishedBatchItems: (batchId: string): Promise<number> => batches.unfinishedItems(batchId),

    async completeBatch(batchId: string): Promise<BatchState> {
      // Refused unless RUNNING (paused or cancelled meanwhile): the state it is in is answered.
      await batches.move(batchId, 'COMPLETED');
      const batch = await batches.find(batchId);
      if (!batch) throw batchNotFound(`batch ${batchId} does not exist`);
      return batch.state;
    },
  };

  /**
   * One chunk: its items' passes, then each item it did not finish handed over or left PENDING; nothing once its lease
   * ended.
   */
  async function runChunk(batchId: string, fundingIds: string[], lease: AttemptLease): Promise<BatchItemsOutcome> {
    // The chunk pass takes the fresh items on together, the others (a cancel holds them) each in its own pass.
    let passes: Map<string, OnePassOutcome | 'failed'>;
    try {
      passes = (await deps.funding.fundItemsInOnePass(fundingIds, lease.current)).outcomes;
    } catch (error) {
      // Nothing is assumed about what the chunk did: an item past PENDING goes to its own
      // workflow, which claims it (fencing out anything still under way); a PENDING one stays
      // the runner's.
      logger.warn({ batchId, err: (error as Error).message }, 'batch chunk pass failed: handing its items over');
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
      if (!lease.current()) throw attemptReplaced(batchId);
      const handed = await startItsWorkflow(batchId, fundingId, why);
      if (handed === 'finished') outcome.finished += 1;
      else if (handed === 'not-started') outcome.notStarted += 1;
      else outcome.handedOver += 1;
      // The wallet refused the create with 429 (nothing created): the item's workflow retries it
      // after the wallet's Retry-After, and the whole batch slows down. Another transient
      // failure (a reset connection, a 503) is the item's alone: it is handed over, no more.
      if (pass !== 'failed' && pass.kind === 'create-later' && pass.rateLimited)
        outcome.slowDownMs = Math.max(outcome.slowDownMs ?? 0, pass.retryAfterMs ?? DEFAULT_SLOW_DOWN_MS);
    }
    return outcome;
  }
}
