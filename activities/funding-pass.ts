// The one pass: a fresh funding, or a batch chunk's items, from claim to final state in one
// activity (passClaimed), when the wallet answers at once; whatever is not plain goes to the
// funding's own workflow's steps from the record. A single funding's pass (fundInOnePass, run by
// fundWallet as a local activity) is a pass of one; a batch chunk's (activities/funding-chunk.ts)
// claims its items together. The two differ in their claim and in what a failure of one funding
// becomes: the single pass fails with it (its workflow sees the failure and goes on from the
// record), a chunk leaves that item to its own workflow and goes on with the others.
import { ApplicationFailure } from '@temporalio/activity';
import { isFinalFundingStatus } from '../domain/funding.ts';
import type { WalletCallEvidence } from '../domain/review.ts';
import type { FundingCarrier } from '../fundings/funding-record.ts';
import { mismatchReviewReason, type FinishInput, type OnePassOutcome } from '../workflows/fund-wallet.contract.ts';
import { activityClock, callFitsBefore, pastItsTime, type ActivityClock } from './activity-clock.ts';
import { retryDelayOf } from '../wallet/index.ts';
import { isRateLimited, walletTransientType } from './wallet-retry.ts';
import {
  CallWouldOutlive,
  finishOwned,
  isOwnerLost,
  park,
  sendExecute,
  stopIfOvertaken,
  type ExecuteAnswer,
  type FundingContext,
} from './funding-context.ts';
import { requestIntent, type FundingRow } from './funding-intent.ts';

/** A funding a pass took on: its row as the claim left it (CREATING, no transfer yet), and the claim's fence. */
export type ClaimedRow = FundingRow & { fence: number };

/** The pass leaves the funding to its workflow's steps, which go on from the record (and claim it). */
export const steps: OnePassOutcome = { kind: 'steps' };

/**
 * What a failure of one funding in a pass becomes, beyond being overtaken or out of time (`steps`
 * in every pass): the single funding's pass fails with it, a batch's chunk leaves that item to
 * its workflow.
 */
export type ItemFailure = (fundingId: string, error: unknown) => OnePassOutcome;

/** A funding's part of a pass that threw: overtaken or out of time is `steps`; anything else is `failed`'s to say. */
export function outcomeOfFailure(fundingId: string, error: unknown, failed: ItemFailure): OnePassOutcome {
  return isOwnerLost(error) || error instanceof CallWouldOutlive ? steps : failed(fundingId, error);
}

/**
 * A create the wallet said to try again later (429, a refused connection; a token refresh not
 * done): nothing was created, and the workflow's create activity tries again with its retry
 * policy, after the wallet's Retry-After when it gave one. Null for any other failure.
 */
function createLater(error: unknown): OnePassOutcome | null {
  if (!(error instanceof ApplicationFailure) || error.nonRetryable || error.type !== walletTransientType) return null;
  return {
    kind: 'create-later',
    retryAfterMs: typeof error.nextRetryDelay === 'number' ? error.nextRetryDelay : null,
    ...(isRateLimited(error) ? { rateLimited: true } : {}),
  };
}

/**
 * A final state the pass writes, with its claim. `beforeExecute`: a state that says nothing was
 * sent (a refused or cancelled create), which the record writes only while no execute can have
 * been sent. A finish that did not leave the funding final leaves it to the steps.
 */
async function finished(
  ctx: FundingContext,
  fundingId: string,
  fence: number,
  input: FinishInput,
): Promise<OnePassOutcome> {
  const done = await finishOwned(ctx, fundingId, input, fence);
  if (!isFinalFundingStatus(done.status)) return steps;
  return { kind: 'finished', status: done.status, errorCode: done.errorCode, transferId: done.transferId };
}

/**
 * The single funding's pass fails with what it did not foresee: its workflow sees the failure, and its steps go on from
 * the record.
 */
function failWithThePass(_fundingId: string, error: unknown): never {
  throw error;
}

/**
 * A fresh funding in one pass, run by its workflow as one local activity: a pass of one. Overtaken
 * (another run claimed the funding) or out of time: nothing more is written or sent; the
 * workflow's step path goes on from the record, and claims it.
 */
export async function fundInOnePass(ctx: FundingContext, fundingId: string): Promise<OnePassOutcome> {
  try {
    return await fundOne(ctx, fundingId, activityClock(), failWithThePass);
  } catch (error) {
    if (isOwnerLost(error) || error instanceof CallWouldOutlive) return steps;
    throw error;
  }
}

/**
 * How a pass of one claims its funding: a chunk's item skips a row another transaction holds, records its carrier, and
 * tells its chunk the claim took it (`claimed`).
 */
export interface OneClaim {
  skipLocked?: boolean;
  carrier?: FundingCarrier;
  claimed?: (fundingIds: string[]) => void;
}

/**
 * A pass of one funding: the claim of one (a single funding's waits for a cancel that holds the
 * row; a chunk's item skips a row another transaction holds), then passClaimed. `steps` when there
 * is no time for a wallet call or the funding is not a fresh PENDING one (someone else took it on,
 * or it was cancelled).
 */
export async function fundOne(
  ctx: FundingContext,
  fundingId: string,
  clock: ActivityClock,
  failed: ItemFailure,
  claim: OneClaim = {},
): Promise<OnePassOutcome> {
  if (!callFitsBefore(clock, ctx.walletTimeoutMs)) return steps;
  const claimed = await claimOne(ctx, fundingId, claim);
  if (!claimed) return steps;
  return (await passClaimed(ctx, [claimed], clock, failed)).get(fundingId) ?? steps;
}

/**
 * PENDING → CREATING and the claim, at once (the funding record's claimPending), and the row as
 * the claim left it; null when the funding was not a fresh PENDING one, or when another run's
 * claim or a cancel came between the two.
 */
async function claimOne(ctx: FundingContext, fundingId: string, claim: OneClaim): Promise<ClaimedRow | null> {
  const { claimed: told, ...how } = claim;
  const fence = await ctx.fundings.claimPending(fundingId, how);
  if (fence === null) return null;
  told?.([fundingId]);
  const row = await ctx.fundings.get(fundingId);
  if (row.ownerFence !== fence || row.cancelRequested || row.status !== 'CREATING' || row.transferId !== null)
    return null;
  return { ...row, fence };
}

/**
 * The one pass, from claim to final state, of the fundings a pass claimed (a single funding's,
 * a chunk of one; a batch chunk's, many): the creates, all at once; the created intents stored,
 * each with its move to EXECUTING in one transaction (so stored before anything can execute it);
 * the executes, all at once and each sent once; the wallet's final words in one transaction,
 * their holds settled and their webhooks in it. A TOKEN funding's create gets its user's token
 * from the vault first (a refresh, when it expired): a chunk of TOKEN items costs its refreshes
 * and no more writes than one of CODE items. Every write is made only under the funding's
 * own claim (the fence checked in its WHERE, or read before the wallet call that follows it),
 * and no wallet call starts that could outlive the activity (`clock`). Whatever is not plain (a
 * refused or mismatching create, an execute to retry, an unknown outcome, an expired intent)
 * goes the step-by-step way for that funding alone: an unknown execute is on record at once
 * (RECONCILING) and answered by retrieve, in the workflow, never by a new intent. A funding
 * overtaken or out of time is answered `steps` (its workflow goes on from the record); an intent
 * created but not stored by then is kept on record, never executed. `failed` says what any
 * other failure of one funding becomes.
 */
export async function passClaimed(
  ctx: FundingContext,
  claimed: readonly ClaimedRow[],
  clock: ActivityClock,
  failed: ItemFailure,
): Promise<Map<string, OnePassOutcome>> {
  const { fundings, claimed: claimedFundings, walletTimeoutMs } = ctx;
  const outcomes = new Map<string, OnePassOutcome>(claimed.map((row) => [row.id, steps]));
  /** One funding's part, whatever it throws: overtaken, out of time or anything unforeseen. */
  const guarded = async <T>(fundingId: string, work: () => Promise<T>): Promise<T | typeof steps> => {
    try {
      return await work();
    } catch (error) {
      return outcomeOfFailure(fundingId, error, failed);
    }
  };
  const outOfTime = () => pastItsTime(clock);

  // The creates, all at once.
  const answered: Array<{ fundingId: string; fence: number; transferId: string; requestReferenceNo: string }> = [];
  await Promise.all(
    claimed.map(async (row) => {
      const { id: fundingId, fence } = row;
      let intent: Awaited<ReturnType<typeof requestIntent>>;
      try {
        // The claim just read the row: it shows the claim.
        intent = await requestIntent(ctx, row, fence, clock, true);
      } catch (error) {
        return void outcomes.set(fundingId, createLater(error) ?? outcomeOfFailure(fundingId, error, failed));
      }
      if (intent.kind === 'answered')
        return void answered.push({
          fundingId,
          fence,
          transferId: intent.transferId,
          requestReferenceNo: intent.requestReferenceNo,
        });
      switch (intent.kind) {
        case 'refused':
          // Out of time, it is left to the funding's workflow, which asks again (nothing was created).
          if (outOfTime()) return;
          outcomes.set(
            fundingId,
            await guarded(fundingId, () =>
              finished(ctx, fundingId, fence, {
                status: intent.status,
                code: intent.code,
                requestReferenceNo: intent.requestReferenceNo,
                beforeExecute: true,
              }),
            ),
          );
          return;
        case 'mismatch': {
          // Parked here, not only by the workflow: a pass run again must not find a CREATING
          // funding with no transfer and create (and execute) another intent. Out of time too (its
          // lease lapsed, its deadline reached): the park is made under the funding's claim, so it
          // changes nothing of a funding another run took over meanwhile.
          const evidence: WalletCallEvidence = {
            at: new Date().toISOString(),
            operation: 'transfers.create',
            requestReferenceNo: intent.requestReferenceNo,
            httpStatus: 201,
            code: 'ANSWER_MISMATCH',
            outcome: 'mismatch',
          };
          const parked = await guarded(fundingId, () =>
            park(ctx, fundingId, mismatchReviewReason(intent.detail, intent.transferId), [evidence], fence),
          );
          if ('kind' in parked) return;
          outcomes.set(
            fundingId,
            parked.parked
              ? { ...intent, fence }
              : { kind: 'finished', status: parked.status, errorCode: parked.errorCode, transferId: parked.transferId },
          );
          return;
        }
        default:
          return;
      }
    }),
  );
  if (answered.length === 0) return outcomes;
  if (outOfTime()) {
    // Created, not stored: kept on record, never executed (the funding's workflow creates anew).
    for (const item of answered)
      await guarded(item.fundingId, () => fundings.keepUnexecuted(item.fundingId, item.transferId));
    return outcomes;
  }

  // The intents stored and the fundings moved to EXECUTING, in one transaction; one that did not
  // move (cancelled meanwhile, taken over) keeps its intent on record, unexecuted.
  const executing = await claimedFundings.beginExecuteMany(answered);
  for (const item of answered.filter((entry) => !executing.has(entry.fundingId))) {
    await guarded(item.fundingId, () => fundings.storeTransferId(item.fundingId, item.transferId, item.fence));
  }
  // EXECUTING with no execute sent: its workflow retrieves first and executes what is not.
  if (!callFitsBefore(clock, walletTimeoutMs)) return outcomes;
  // Each claim read again right before its execute: a pass that paused after its move to
  // EXECUTING (a stopped worker, an attempt cut off from Temporal but not from PostgreSQL) sends
  // nothing for a funding another run claimed meanwhile; that run retrieves before any execute.
  const claimsNow = await fundings.fencesOf(
    answered.filter((item) => executing.has(item.fundingId)).map((item) => item.fundingId),
  );
  const toExecute = answered.filter(
    (item) => executing.has(item.fundingId) && claimsNow.get(item.fundingId) === item.fence,
  );
  if (!callFitsBefore(clock, walletTimeoutMs)) return outcomes;

  // The executes, all at once: each sent once, by the pass that moved its funding to EXECUTING.
  const answers = new Map<string, ExecuteAnswer>();
  await Promise.all(
    toExecute.map(async (item) => {
      const sent = await guarded(item.fundingId, () => sendExecute(ctx, item.fundingId, item.transferId));
      if ('kind' in sent && sent.kind === 'steps') return;
      answers.set(item.fundingId, sent as ExecuteAnswer);
    }),
  );
  if (outOfTime()) return outcomes;

  // The wallet's final words, in one transaction.
  const finals = toExecute.flatMap((item) => {
    const progress = answers.get(item.fundingId);
    return progress?.kind === 'final' ? [{ ...item, progress }] : [];
  });
  const finishedIds = await claimedFundings.finishExecutedMany(
    finals.map((item) => ({
      fundingId: item.fundingId,
      fence: item.fence,
      status: item.progress.status,
      code: item.progress.declineCode,
      requestReferenceNo: item.progress.requestReferenceNo,
    })),
  );
  for (const item of finals) {
    if (finishedIds.has(item.fundingId))
      outcomes.set(item.fundingId, {
        kind: 'finished',
        status: item.progress.status,
        errorCode: item.progress.declineCode,
        transferId: item.transferId,
      });
  }
  // The rest, each the step-by-step way from its execute.
  await Promise.all(
    toExecute.map(async (item) => {
      const progress = answers.get(item.fundingId);
      if (!progress || progress.kind === 'final') return;
      outcomes.set(
        item.fundingId,
        await guarded(item.fundingId, () => afterExecute(ctx, item.fundingId, item.fence, item.transferId, progress)),
      );
    }),
  );
  return outcomes;
}

/** What the pass does after a funding's execute, unless the wallet's word was final. */
async function afterExecute(
  ctx: FundingContext,
  fundingId: string,
  fence: number,
  transferId: string,
  progress: ExecuteAnswer,
): Promise<OnePassOutcome> {
  switch (progress.kind) {
    case 'retry':
      return { kind: 'execute', transferId, retryAfterMs: retryDelayOf(progress.error) ?? null, fence };
    case 'final':
      return finished(ctx, fundingId, fence, {
        status: progress.status,
        code: progress.declineCode,
        requestReferenceNo: progress.requestReferenceNo,
      });
    case 'expired':
      return finished(ctx, fundingId, fence, {
        status: 'FAILED',
        code: 'TRANSFER_EXPIRED',
        requestReferenceNo: progress.requestReferenceNo,
      });
    case 'unknown':
      // On record at once, with the execute's Request-Reference-No: whoever goes on from the
      // record (this workflow, a run after a crash, a review) sees the doubt and its evidence.
      if (
        !(await ctx.fundings.move(
          fundingId,
          'RECONCILING',
          {
            requestReferenceNo: progress.requestReferenceNo,
            detail: `execute outcome unknown (${progress.code}): retrieving`,
          },
          fence,
        ))
      ) {
        await stopIfOvertaken(ctx, fundingId, fence);
      }
      return { kind: 'executed', transferId, progress, fence };
    default:
      return { kind: 'executed', transferId, progress, fence };
  }
}
