// What every funding activity shares (activities/funding.ts puts them together): the records and
// the wallet it works through, the claim checks that stop an overtaken run (a run whose claim on
// the funding another run raised writes and sends nothing more), and the wallet calls that read
// and execute a transfer, each answering where the transfer stands as data. Every write goes
// through the records (fundings/funding-record.ts; for fundings a pass claimed, one or many,
// fundings/claimed-fundings-record.ts); these stay thin.
import { ApplicationFailure } from '@temporalio/activity';
import { isFinalFundingStatus } from '../domain/funding.ts';
import type { WalletCallEvidence } from '../domain/review.ts';
import type { ClaimedFundingsRecord } from '../fundings/claimed-fundings-record.ts';
import type { Fence, FundingRecord } from '../fundings/funding-record.ts';
import {
  fundingFailureTypes,
  type FinishInput,
  type ParkOutcome,
  type TransferProgress,
} from '../workflows/fund-wallet.contract.ts';
import type { Logger } from '../lib/logger.ts';
import {
  isConflictOf,
  isUnreadableAnswer,
  isWalletError,
  type Transfer,
  type WalletClient,
  type WalletError,
} from '../wallet/index.ts';
import type { TokenVault } from '../links/token-vault.ts';
import { callFitsBefore, DEFAULT_WALLET_TIMEOUT_MS, type ActivityClock } from './activity-clock.ts';
import { walletRetry } from './wallet-retry.ts';

export interface FundingActivityDependencies {
  /** Writes every state change, and counts fundings by final state (fundings/funding-record.ts). */
  fundings: FundingRecord;
  /** The moves of fundings a pass claimed, one or many (fundings/claimed-fundings-record.ts). */
  claimed: Pick<
    ClaimedFundingsRecord,
    'claimPendingItems' | 'batchHeld' | 'claimNextInLane' | 'beginExecuteMany' | 'finishExecutedMany'
  >;
  wallet: Pick<WalletClient, 'createTransfer' | 'executeTransfer' | 'retrieveTransfer'>;
  vault: Pick<TokenVault, 'withUserToken'>;
  logger: Logger;
  /** WALLET_TIMEOUT_MS: a wallet call's longest wait, which the one pass must have left before each call. */
  walletTimeoutMs?: number;
}

/** The dependencies, with WALLET_TIMEOUT_MS's default filled in: what each activity module takes first. */
export type FundingContext = FundingActivityDependencies & { walletTimeoutMs: number };

export const fundingContext = (deps: FundingActivityDependencies): FundingContext => ({
  ...deps,
  walletTimeoutMs: deps.walletTimeoutMs ?? DEFAULT_WALLET_TIMEOUT_MS,
});

/** A run whose claim on the funding was overtaken: it writes nothing more and calls nothing more. */
export function ownerLost(fundingId: string): ApplicationFailure {
  return ApplicationFailure.nonRetryable(
    `funding ${fundingId} was taken over by another run`,
    fundingFailureTypes.ownerLost,
  );
}
export const isOwnerLost = (error: unknown): boolean =>
  error instanceof ApplicationFailure && error.type === fundingFailureTypes.ownerLost;

/** Not sent: a wallet call that could outlive the activity (or the pass) it runs in. */
export class CallWouldOutlive extends Error {
  override readonly name = 'CallWouldOutlive';
}
/** A retryable failure for a call not sent for lack of time: the next attempt starts with its full time. */
export const deferred = (what: string) =>
  ApplicationFailure.retryable(`${what} not sent: it could outlive this attempt`, 'WalletCallDeferred');

/** A transient failure: Temporal retries the activity (after Retry-After when the service gave one). */
export function retryLater(error: WalletError): never {
  throw walletRetry(error);
}

/** The wallet's transfer record as the workflow's progress: final, processing, not executed yet, or expired. */
export function transferProgressOf(transfer: Transfer, requestReferenceNo: string): TransferProgress {
  switch (transfer.status) {
    case 'APPROVED':
      return { kind: 'final', status: 'APPROVED', declineCode: null, requestReferenceNo };
    case 'DECLINED':
      return {
        kind: 'final',
        status: 'DECLINED',
        declineCode: transfer.decline?.code ?? 'DECLINED',
        requestReferenceNo,
      };
    case 'PROCESSING':
      return { kind: 'processing', requestReferenceNo };
    case 'CREATED':
      return { kind: 'not-executed', requestReferenceNo };
    case 'EXPIRED':
      return { kind: 'expired', requestReferenceNo };
  }
}

/** After a write the record refused: an overtaken run stops here. */
export async function stopIfOvertaken(ctx: FundingContext, fundingId: string, fence: Fence): Promise<void> {
  if (fence !== undefined && (await ctx.fundings.fenceOf(fundingId)) !== fence) throw ownerLost(fundingId);
}

/** The funding as it stands, read once, for a run that still owns it (an overtaken one stops). */
export async function owned(ctx: FundingContext, fundingId: string, fence: Fence) {
  const funding = await ctx.fundings.get(fundingId);
  if (fence !== undefined && funding.ownerFence !== fence) throw ownerLost(fundingId);
  return funding;
}

/**
 * Before a wallet call: the call starts only while the run owns the funding (read again unless
 * the run's own fenced write or read just showed it) and the call fits in its time.
 */
export async function beforeCall(
  ctx: FundingContext,
  fundingId: string,
  fence: Fence,
  clock: ActivityClock,
  ownershipJustShown = false,
): Promise<void> {
  if (!ownershipJustShown) await stopIfOvertaken(ctx, fundingId, fence);
  if (!callFitsBefore(clock, ctx.walletTimeoutMs)) throw new CallWouldOutlive();
}

/** Reads the transfer back: where it stands, or the wallet's refusal to show it (404, 401) as data. */
export async function readBack(ctx: FundingContext, fundingId: string, transferId: string): Promise<TransferProgress> {
  try {
    const result = await ctx.wallet.retrieveTransfer(transferId);
    return transferProgressOf(result.data, result.requestReferenceNo);
  } catch (error) {
    if (!isWalletError(error)) throw error;
    // A 2xx whose JSON is off the contract counts as a refusal to show the transfer: persistent, the funding goes to
    // review after MAX_REFUSED_RETRIEVES (workflows/fund-wallet.ts) with the evidence, where it was asked for ever,
    // RECONCILING. A body that is not JSON (a proxy's page) is the wallet unable to answer now, retried.
    if (error.outcome !== 'rejected' && !isUnreadableAnswer(error)) retryLater(error);
    ctx.logger.error(
      { fundingId, code: error.code, httpStatus: error.httpStatus, requestReferenceNo: error.requestReferenceNo },
      'retrieve transfer refused, or answered off the contract',
    );
    return {
      kind: 'refused',
      code: error.code,
      requestReferenceNo: error.requestReferenceNo,
      httpStatus: error.httpStatus,
    };
  }
}

/**
 * What one execute call answered: where the transfer stands, or `retry` when the wallet did nothing (429, refused
 * connection).
 */
export type ExecuteAnswer = TransferProgress | { kind: 'retry'; error: WalletError };

/** Sends the execute once; an unknown outcome is reported, never retried here. */
export async function sendExecute(ctx: FundingContext, fundingId: string, transferId: string): Promise<ExecuteAnswer> {
  try {
    const result = await ctx.wallet.executeTransfer(transferId);
    return transferProgressOf(result.data, result.requestReferenceNo);
  } catch (error) {
    if (!isWalletError(error)) throw error;
    // The wallet's final word only as its 409: the code in a 5xx's body says nothing (retrieve decides, below).
    if (isConflictOf(error, 'TRANSFER_EXPIRED'))
      return { kind: 'expired', requestReferenceNo: error.requestReferenceNo };
    if (error.outcome === 'retryable') return { kind: 'retry', error };
    // unknown (time-out, 5xx, 7011, reset, unparsable, 409) or an odd rejection: retrieve decides.
    ctx.logger.warn(
      { fundingId, code: error.code, requestReferenceNo: error.requestReferenceNo },
      'execute outcome unknown: reconciling',
    );
    return {
      kind: 'unknown',
      code: error.code,
      requestReferenceNo: error.requestReferenceNo,
      httpStatus: error.httpStatus,
    };
  }
}

/** The final state, written by the funding's owner (the record answers how it stands; an overtaken writer stops). */
export async function finishOwned(ctx: FundingContext, fundingId: string, input: FinishInput, fence: Fence) {
  const code = input.code ?? null;
  const done = await ctx.fundings.finish(fundingId, {
    status: input.status,
    code,
    requestReferenceNo: input.requestReferenceNo ?? null,
    detail: input.detail ?? code,
    ...(input.beforeExecute ? { beforeExecute: true } : {}),
    fence,
  });
  if (!done.moved && fence !== undefined && done.ownerFence !== fence) throw ownerLost(fundingId);
  return done;
}

/** → NEEDS_REVIEW by the funding's owner; what it found when the funding was not parked. */
export async function park(
  ctx: FundingContext,
  fundingId: string,
  reason: string,
  evidence: WalletCallEvidence[],
  fence: Fence,
): Promise<ParkOutcome> {
  if (await ctx.fundings.parkForReview(fundingId, reason, evidence, fence)) return { parked: true };
  const funding = await owned(ctx, fundingId, fence);
  if (funding.status === 'NEEDS_REVIEW') return { parked: true };
  if (isFinalFundingStatus(funding.status))
    return { parked: false, status: funding.status, errorCode: funding.errorCode, transferId: funding.transferId };
  throw ApplicationFailure.nonRetryable(
    `funding ${fundingId} could not be parked from ${funding.status}`,
    fundingFailureTypes.corrupt,
  );
}
