// The batch runner's activities (workflows/fund-batch.ts): read the batch, page through its items
// not yet started, run a chunk of them, count what is left, complete it. A chunk runs as any
// carried chunk does (activities/carried-chunk.ts: the chunk pass, and whatever it leaves
// unfinished handed to the item's own fundWallet workflow). Signatures and results are the
// workflow's, declared in its contract.
import { ApplicationFailure } from '@temporalio/activity';
import type { Client } from '@temporalio/client';
import type { BatchState } from '../domain/funding-batch.ts';
import type { BatchRecord } from '../fundings/batch-record.ts';
import type { FundingRecord } from '../fundings/funding-record.ts';
import type { Logger } from '../lib/logger.ts';
import {
  fundBatchFailureTypes,
  type BatchItemsOutcome,
  type FundBatchActivities,
} from '../workflows/fund-batch.contract.ts';
import { createCarriedChunks, type ChunkCarrier } from './carried-chunk.ts';
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
  funding: Pick<FundingActivities, 'fundItemsInOnePass' | 'fundNextInLane'>;
  /** Starts an item's own fundWallet workflow. */
  temporal: Client;
  taskQueue: string;
  logger: Logger;
}

const batchNotFound = (what: string) => ApplicationFailure.nonRetryable(what, fundBatchFailureTypes.notFound);

/** A batch as the carrier of its items' chunks. */
const batchCarrier = (batchId: string): ChunkCarrier => ({
  label: `batch ${batchId}`,
  owns: (funding) => funding.batchId === batchId,
  notOwned: (fundingId) => batchNotFound(`funding ${fundingId} is not an item of batch ${batchId}`),
});

export function createBatchActivities(deps: BatchActivityDependencies): FundBatchActivities {
  const { batches, fundings } = deps;
  const chunks = createCarriedChunks(deps);

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

    runBatchItems: (batchId: string, fundingIds: string[]): Promise<BatchItemsOutcome> =>
      chunks.runCarriedChunk(batchCarrier(batchId), fundingIds),

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
