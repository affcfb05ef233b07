// A lane's activities (workflows/fund-lane.ts): wait for the lane's fundings, and run a chunk of
// them as any carried chunk runs (activities/carried-chunk.ts: the batch items' chunk pass, and
// whatever a pass leaves unfinished handed to the funding's own fundWallet workflow). Signatures
// and results are the workflow's, declared in its contract.
import { ApplicationFailure, Context } from '@temporalio/activity';
import type { FundingRecord } from '../fundings/funding-record.ts';
import type { LaneBell } from '../lib/lane-bell.ts';
import { fundLaneActivityTimeouts, type FundLaneActivities } from '../workflows/fund-lane.contract.ts';
import type { BatchItemsOutcome } from '../workflows/fund-batch.contract.ts';
import type { CarriedChunks, ChunkCarrier } from './carried-chunk.ts';

export interface LaneActivityDependencies {
  fundings: Pick<FundingRecord, 'nextPendingLaneFundings'>;
  chunks: CarriedChunks;
  /** Wakes a waiting lane when a funding joins it (lib/lane-bell.ts). */
  bell: LaneBell;
}

/** The longest a waiting lane goes without reading its table, bell or not (a lost notification costs this much). */
const READ_AT_LEAST_EVERY_MS = 1000;

/** A lane as the carrier of its fundings' chunks. */
const laneCarrier = (lane: number): ChunkCarrier => ({
  label: `lane ${lane}`,
  owns: (funding) => funding.lane === lane && funding.batchId === null,
  notOwned: (fundingId) =>
    ApplicationFailure.nonRetryable(`funding ${fundingId} is not a funding of lane ${lane}`, 'LaneFundingNotFound'),
});

/** The activity's cancellation (a worker shutting down), or none outside an activity. */
function cancellation(): AbortSignal | undefined {
  try {
    return Context.current().cancellationSignal;
  } catch {
    return undefined;
  }
}

export function createLaneActivities(deps: LaneActivityDependencies): FundLaneActivities {
  return {
    async nextLaneFundings(lane: number, under: string[], limit: number): Promise<string[]> {
      const signal = cancellation();
      const until = Date.now() + fundLaneActivityTimeouts.waitForWorkMs;
      for (;;) {
        // The bell's count first: a funding announced while the table is read still wakes the wait below.
        const rings = deps.bell.rings(lane);
        const ids = await deps.fundings.nextPendingLaneFundings(lane, under, limit);
        const left = until - Date.now();
        if (ids.length > 0 || left <= 0 || signal?.aborted) return ids;
        await deps.bell.wait(lane, rings, Math.min(left, READ_AT_LEAST_EVERY_MS), signal);
      }
    },

    runLaneFundings: (lane: number, fundingIds: string[]): Promise<BatchItemsOutcome> =>
      deps.chunks.runCarriedChunk(laneCarrier(lane), fundingIds),
  };
}
