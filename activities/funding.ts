// The funding workflow's activities: each does one step against the wallet service or the
// database and reports the outcome as data (ids, states, codes: never a token or a code). The
// rules of exactly-once live here and in workflows/fund-wallet.ts:
// - the transferId is stored before any execute, and a stored one is reused, never re-created;
// - an execute whose outcome is unknown is answered by retrieve, never by a new intent;
// - every write and every wallet call is made only under the run's claim on the funding (its
//   fence, checked before each), so a run that was overtaken writes and sends nothing more; the one
//   exception, keepUnexecuted, only adds an intent that was never stored as the funding's transfer
//   to its record of abandoned intents (only the stored transferId is ever executed);
// - no wallet call starts that could outlive the activity it runs in (a retry could race it);
// - every status change is written with the Request-Reference-No of the wallet call behind it.
// By concern: what they share (activities/funding-context.ts: the claim checks, readBack,
// sendExecute), the transfer intent (activities/funding-intent.ts), the step path's activities
// (activities/funding-steps.ts), the one pass from claim to final state (activities/funding-pass.ts
// passClaimed: a fresh funding's pass, a pass of one) and a batch chunk's pass of many through it
// (activities/funding-chunk.ts). Every write goes through the records (fundings/funding-record.ts,
// and for the fundings a pass claimed, one or many, fundings/claimed-fundings-record.ts). Their signatures and
// results are the workflow's, declared in its contract (workflows/fund-wallet.contract.ts).
import type { FundingCarrier } from '../fundings/funding-record.ts';
import type { FundWalletActivities } from '../workflows/fund-wallet.contract.ts';
import {
  fundItemsInOnePass,
  fundNextInLane,
  type ChunkAttempt,
  type ItemsPassResult,
  type LaneAttempt,
} from './funding-chunk.ts';
import { fundingContext, type FundingActivityDependencies } from './funding-context.ts';
import { fundInOnePass } from './funding-pass.ts';
import { createFundingSteps } from './funding-steps.ts';

export { isOwnerLost, type FundingActivityDependencies } from './funding-context.ts';
export type { ChunkAttempt, ItemsPassResult } from './funding-chunk.ts';

/** The funding activities, and the chunk pass a batch runs its items through (not an activity of its own). */
export type FundingActivities = FundWalletActivities & {
  /** A lane's chunk pass: the next fundings of the lane claimed and passed together (not an activity of its own). */
  fundNextInLane(
    lane: number,
    limit: number,
    carrier: FundingCarrier,
    attempt: LaneAttempt,
  ): Promise<ItemsPassResult & { taken: string[] }>;
  /**
   * A batch chunk's pass. `attempt.current`: false once the chunk's attempt may have been replaced
   * (activities/attempt-lease.ts): it claims and calls nothing more; `attempt.claimed`: told what its claims took.
   */
  fundItemsInOnePass(fundingIds: readonly string[], attempt?: ChunkAttempt): Promise<ItemsPassResult>;
};

export function createFundingActivities(deps: FundingActivityDependencies): FundingActivities {
  const ctx = fundingContext(deps);
  return {
    ...createFundingSteps(ctx),
    fundInOnePass: (fundingId: string) => fundInOnePass(ctx, fundingId),
    fundItemsInOnePass: (fundingIds: readonly string[], attempt?: ChunkAttempt) =>
      fundItemsInOnePass(ctx, fundingIds, attempt),
    fundNextInLane: (lane: number, limit: number, carrier: FundingCarrier, attempt: LaneAttempt) =>
      fundNextInLane(ctx, lane, limit, carrier, attempt),
  };
}
