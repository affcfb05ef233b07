// A lane's activity (workflows/fund-lane.ts): wait for the lane's fundings, then run a chunk of them
// as any carried chunk runs (activities/carried-chunk.ts: the chunk pass, and whatever a pass leaves
// unfinished handed to the funding's own fundWallet workflow). Its signature and result are the
// workflow's, declared in its contract.
import { ApplicationFailure, Context } from '@temporalio/activity';
import type { FundingRecord } from '../fundings/funding-record.ts';
import { sleepUnlessAborted, type LaneBell } from '../lib/lane-bell.ts';
import {
  LANE_WAIT_FOR_WORK_MS,
  type FundLaneActivities,
  type LaneChunkOutcome,
} from '../workflows/fund-lane.contract.ts';
import type { CarriedChunks, ChunkCarrier } from './carried-chunk.ts';

export interface LaneActivityDependencies {
  fundings: Pick<FundingRecord, 'hasPendingInLane'>;
  chunks: CarriedChunks;
  /** Wakes a waiting lane when a funding joins it (lib/lane-bell.ts). */
  bell: LaneBell;
}

/** The longest a waiting lane goes without reading its table, bell or not (a lost notification costs this much). */
const READ_AT_LEAST_EVERY_MS = 1000;
/**
 * How long a chunk that found its lane empty, then fundings in it, lets the ones arriving with them
 * join: a partner's loop sends its next fundings together as several end at once, and a chunk
 * taken at the first would leave the rest to the next chunk (a chunk costs its lane's history six
 * events however many it carries). A lane with fundings already waiting takes them at once.
 */
export const LANE_GATHER_MS = 25;

/** A lane as the carrier of its fundings' chunks. */
const laneCarrier = (lane: number): ChunkCarrier & { lane: number } => ({
  lane,
  label: `lane ${lane}`,
  owns: (funding) => funding.lane === lane && funding.batchId === null,
  notOwned: (fundingId) =>
    ApplicationFailure.nonRetryable(`funding ${fundingId} is not a funding of lane ${lane}`, 'LaneFundingNotFound'),
});

export function createLaneActivities(deps: LaneActivityDependencies): FundLaneActivities {
  /** Whether fundings wait in the lane, waiting up to LANE_WAIT_FOR_WORK_MS for one (or the activity's end). */
  async function waitForWork(lane: number): Promise<boolean> {
    const signal = Context.current().cancellationSignal;
    const until = Date.now() + LANE_WAIT_FOR_WORK_MS;
    let waited = false;
    for (;;) {
      // The bell's count first: a funding announced while the table is read still wakes the wait below.
      const rings = deps.bell.rings(lane);
      if (await deps.fundings.hasPendingInLane(lane)) {
        if (waited) await sleepUnlessAborted(LANE_GATHER_MS, signal);
        return true;
      }
      const left = until - Date.now();
      if (left <= 0 || signal.aborted) return false;
      waited = true;
      await deps.bell.wait(lane, rings, Math.min(left, READ_AT_LEAST_EVERY_MS), signal);
    }
  }

  return {
    runLaneChunk: (lane: number, limit: number): Promise<LaneChunkOutcome> =>
      deps.chunks.runLaneChunk(laneCarrier(lane), limit, () => waitForWork(lane)),
  };
}
