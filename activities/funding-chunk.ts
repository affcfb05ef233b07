// A batch chunk's pass (run by the batch's runBatchItems, activities/batch.ts): a chunk of a
// batch's items in one pass together, through the same routine as a single funding's pass
// (activities/funding-pass.ts passClaimed), its claims and writes set-based. An item whose pass
// failed is left to its own workflow, for the batch to start.
import type { FundingCarrier } from '../fundings/funding-record.ts';
import type { OnePassOutcome } from '../workflows/fund-wallet.contract.ts';
import { activityClock, callFitsBefore, type ActivityClock } from './activity-clock.ts';
import type { FundingContext } from './funding-context.ts';
import { fundOne, outcomeOfFailure, passClaimed, steps } from './funding-pass.ts';

/** What the chunk pass did: an outcome per item. */
export interface ItemsPassResult {
  outcomes: Map<string, OnePassOutcome>;
}

/** A batch chunk's attempt, as its carrier (activities/carried-chunk.ts) runs it. */
export interface ChunkAttempt {
  /** False once the chunk's attempt may have been replaced (activities/attempt-lease.ts). */
  current?: () => boolean;
  /** The run recorded as the carrier of what it claims. */
  carrier?: FundingCarrier;
  /**
   * Told the ids each claim of this attempt took, as it commits (the set claim's, and each one-by-one claim's): what
   * only this attempt can hand over, should its claim commit after the attempt that replaced it looked.
   */
  claimed?: (fundingIds: string[]) => void;
}

/**
 * A chunk leaves the funding to its own workflow (which takes it on from the record) and goes on with its other items.
 */
function leaveToItsWorkflow(ctx: FundingContext) {
  return (fundingId: string, error: unknown): OnePassOutcome => {
    ctx.logger.warn(
      { fundingId, err: (error as Error).message },
      'batch item: its pass stopped; its workflow takes it on',
    );
    return steps;
  };
}

/**
 * The fresh items taken on at once (one transaction claims them all; rows another transaction
 * holds, a batch's cancel, are skipped), then passClaimed with its writes made set-based. The items
 * it did not claim run a pass of their own meanwhile (fundOne, skipping a held row too), on the
 * same clock: the activity's, read at its start, with the chunk's lease (`current`: false once the
 * chunk's attempt may have been replaced, activities/attempt-lease.ts), so no call of theirs can
 * outlive the activity either.
 */
export async function fundItemsInOnePass(
  ctx: FundingContext,
  fundingIds: readonly string[],
  attempt: ChunkAttempt = {},
): Promise<ItemsPassResult> {
  const { current, carrier } = attempt;
  const clock: ActivityClock = { ...activityClock(), ...(current ? { current } : {}) };
  const claimPendingItems = async (ids: readonly string[]) => {
    const rows = await ctx.claimed.claimPendingItems(ids, carrier);
    if (rows.length > 0) attempt.claimed?.(rows.map((row) => row.id));
    return rows;
  };
  const outcomes = new Map<string, OnePassOutcome>();
  if (!callFitsBefore(clock, ctx.walletTimeoutMs)) {
    for (const fundingId of fundingIds) outcomes.set(fundingId, steps);
    return { outcomes };
  }
  const failed = leaveToItsWorkflow(ctx);
  let claimed = await claimPendingItems(fundingIds);
  if (claimed.length === 0 && (await ctx.claimed.batchHeld(fundingIds))) {
    // A move holds the batch (a cancel ending its items): none of them starts, and none is tried one by one either (a
    // transaction each, for nothing). The chunk waits a while for the move to end, then asks once more (before, it
    // answered at once, and the runner sent it round and round for as long as the cancel took).
    if (await heldNoLonger(ctx, fundingIds, clock)) claimed = await claimPendingItems(fundingIds);
    // Still held, or the move over and none to claim (a cancel ended them, a pause holds them): none is tried one by
    // one; each is looked at as it is (activities/carried-chunk.ts: final, or PENDING for the runner).
    if (claimed.length === 0) {
      for (const fundingId of fundingIds) outcomes.set(fundingId, steps);
      return { outcomes };
    }
  }
  const claimedIds = new Set(claimed.map((row) => row.id));
  const alone = Promise.all(
    fundingIds
      .filter((id) => !claimedIds.has(id))
      .map(async (fundingId) => {
        let outcome: OnePassOutcome;
        try {
          // A row another transaction holds (the batch's cancel holds its items until it
          // commits) is left PENDING, not waited on: the runner dispatches it again, and no
          // connection of the worker's line waits on the cancel.
          outcome = await fundOne(ctx, fundingId, clock, failed, {
            skipLocked: true,
            ...(carrier ? { carrier } : {}),
            ...(attempt.claimed ? { claimed: attempt.claimed } : {}),
          });
        } catch (error) {
          outcome = outcomeOfFailure(fundingId, error, failed);
        }
        outcomes.set(fundingId, outcome);
      }),
  );
  try {
    for (const [fundingId, outcome] of await passClaimed(ctx, claimed, clock, failed)) outcomes.set(fundingId, outcome);
  } finally {
    // Even when the chunk's part failed: no pass of this activity runs on after it ends.
    await alone;
  }
  return { outcomes };
}

/** The longest a chunk waits for a move that holds its batch, and how often it looks. */
const HELD_WAIT_MS = 5000;
const HELD_LOOK_EVERY_MS = 250;

/** Whether the move holding the batch ended within HELD_WAIT_MS, with a wallet call still fitting the attempt. */
async function heldNoLonger(
  ctx: FundingContext,
  fundingIds: readonly string[],
  clock: ActivityClock,
): Promise<boolean> {
  for (let waited = 0; waited < HELD_WAIT_MS; waited += HELD_LOOK_EVERY_MS) {
    await new Promise((resolve) => setTimeout(resolve, HELD_LOOK_EVERY_MS));
    if (!callFitsBefore(clock, ctx.walletTimeoutMs)) return false;
    if (!(await ctx.claimed.batchHeld(fundingIds))) return true;
  }
  return false;
}

/** A lane chunk's attempt: its clock (read when the activity began), its lease, and who hears what it claimed. */
export interface LaneAttempt {
  clock: ActivityClock;
  current: () => boolean;
  /** Told the ids the claim took, at once (the chunk's beats show the sweep their owner from then on). */
  claimed: (fundingIds: string[]) => void;
}

/**
 * A lane's chunk (workflows/fund-lane.ts): the next fundings waiting in the lane, at most `limit`,
 * picked and claimed in one statement (claimNextInLane, recording `carrier`), then passClaimed with
 * its writes set-based, on the activity's clock (read when it began, before its wait for work) and
 * the chunk's lease. `taken`: the ids it claimed.
 */
export async function fundNextInLane(
  ctx: FundingContext,
  lane: number,
  limit: number,
  carrier: FundingCarrier,
  attempt: LaneAttempt,
): Promise<ItemsPassResult & { taken: string[] }> {
  const clock: ActivityClock = { ...attempt.clock, current: attempt.current };
  if (!callFitsBefore(clock, ctx.walletTimeoutMs)) return { outcomes: new Map(), taken: [] };
  const claimed = await ctx.claimed.claimNextInLane(lane, limit, carrier);
  attempt.claimed(claimed.map((row) => row.id));
  const outcomes = new Map<string, OnePassOutcome>();
  for (const [fundingId, outcome] of await passClaimed(ctx, claimed, clock, leaveToItsWorkflow(ctx)))
    outcomes.set(fundingId, outcome);
  return { outcomes, taken: claimed.map((row) => row.id) };
}
