// The batch runner's activities (workflows/fund-batch.ts): read the batch, page through its items
// not yet started, run one item, count what is left, complete it. An item runs as a single
// funding's one pass (activities/funding.ts fundInOnePass, under the funding's ownership rules);
// whatever the pass leaves unfinished goes to the item's own fundWallet workflow, whose step path
// claims the funding and trusts nothing it did not write. So an item never waits inside the
// batch's activity for a retry, a reconciliation or a review, and an activity retried after an
// attempt that did get somewhere finds its funding past PENDING and hands it over: it never
// executes twice. Signatures and results are the workflow's, declared in its contract.
import { ApplicationFailure } from '@temporalio/activity';
import type { Client } from '@temporalio/client';
import { isFinalFundingStatus } from '../domain/funding.ts';
import type { BatchState } from '../domain/funding-batch.ts';
import type { BatchRecord } from '../fundings/batch-record.ts';
import type { FundingRecord } from '../fundings/funding-record.ts';
import type { Logger } from '../lib/logger.ts';
import { fundBatchFailureTypes, type BatchItemOutcome, type FundBatchActivities } from '../workflows/fund-batch.contract.ts';
import { startFundWallet, type FundWalletActivities, type OnePassOutcome } from '../workflows/fund-wallet.contract.ts';

export interface BatchActivityDependencies {
  /** The batch's row: its state and its completion (fundings/batch-record.ts). */
  batches: BatchRecord;
  /** The items' rows: the next ones not started, and the row an item is handed over from. */
  fundings: FundingRecord;
  /** The single funding's one pass, as the funding activities built it (same record, wallet and vault). */
  funding: Pick<FundWalletActivities, 'fundInOnePass'>;
  /** Starts an item's own fundWallet workflow. */
  temporal: Client;
  taskQueue: string;
  logger: Logger;
}

/** When the wallet said "later" without saying when: fundWallet's create retry waits as long. */
const DEFAULT_SLOW_DOWN_MS = 1000;

const batchNotFound = (what: string) => ApplicationFailure.nonRetryable(what, fundBatchFailureTypes.notFound);

export function createBatchActivities(deps: BatchActivityDependencies): FundBatchActivities {
  const { batches, fundings, logger } = deps;

  /**
   * The item's own workflow takes it on, under the id stored on its row: a second start (a retried
   * activity) finds the running one, and a closed one is left alone (that run already ended it).
   */
  async function handOver(batchId: string, fundingId: string, why: string): Promise<'handed-over' | 'finished'> {
    const funding = await fundings.get(fundingId);
    if (funding.batchId !== batchId) throw batchNotFound(`funding ${fundingId} is not an item of batch ${batchId}`);
    // Final already (an earlier attempt's pass finished it, or the batch's cancel did): nothing
    // is left for a workflow to do.
    if (isFinalFundingStatus(funding.status)) return 'finished';
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

    async runBatchItem(batchId: string, fundingId: string): Promise<BatchItemOutcome> {
      let pass: OnePassOutcome | 'failed';
      try {
        pass = await deps.funding.fundInOnePass(fundingId);
      } catch (error) {
        // Nothing is assumed about what the pass did: the item's workflow reads the record and
        // claims the funding, fencing out anything this pass might still try to write.
        logger.warn({ batchId, fundingId, err: (error as Error).message }, 'batch item one pass failed: handing over');
        pass = 'failed';
      }
      if (pass !== 'failed' && pass.kind === 'finished') return { kind: 'finished' };
      const why = pass === 'failed' ? 'one pass failed' : `one pass: ${pass.kind}`;
      const handed = await handOver(batchId, fundingId, why);
      // The wallet refused the create with 429 (nothing created): the item's workflow retries it
      // after the wallet's Retry-After, and the whole batch slows down.
      if (pass !== 'failed' && pass.kind === 'create-later') return { kind: 'slow-down', retryAfterMs: pass.retryAfterMs ?? DEFAULT_SLOW_DOWN_MS };
      return handed === 'finished' ? { kind: 'finished' } : { kind: 'handed-over' };
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
}
