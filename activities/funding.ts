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
// The step activities (create, execute, retrieve, …) share the wallet calls (requestIntent,
// sendExecute, readBack); a fresh funding's one pass and a batch chunk are one routine from claim
// to final state (passClaimed), which differ in their claim and in what a failure of one funding
// becomes. Every write goes through the records: fundings/funding-record.ts one funding at a time,
// fundings/batch-items-record.ts many in a statement (the pass's move to EXECUTING and its final
// words, for a single funding too, as a list of one); these stay thin. Their signatures and
// results are the workflow's, declared in its contract (workflows/fund-wallet.contract.ts).
import { ApplicationFailure } from '@temporalio/activity';
import { MoneyUnreadable, sameValue, storedAmount, type Amount } from '../domain/money.ts';
import { isFinalFundingStatus, type FinalFundingStatus } from '../domain/funding.ts';
import type { WalletCallEvidence } from '../domain/review.ts';
import type { BatchItemsRecord } from '../fundings/batch-items-record.ts';
import type { Fence, FundingRecord } from '../fundings/funding-record.ts';
import {
  fundingFailureTypes,
  mismatchReviewReason,
  type CreateOutcome,
  type FinishInput,
  type FundingSnapshot,
  type FundWalletActivities,
  type OnePassOutcome,
  type ParkOutcome,
  type ResolveFundingUpdateInput,
  type TransferProgress,
} from '../workflows/fund-wallet.contract.ts';
import type { Logger } from '../lib/logger.ts';
import { isWalletError, type Transfer, type WalletClient, type WalletError } from '../wallet/index.ts';
import { TokenRefreshBusy, TokenRefreshError, VaultError, type TokenVault } from '../links/token-vault.ts';
import { activityClock, callFitsBefore, DEFAULT_WALLET_TIMEOUT_MS, pastItsTime, type ActivityClock } from './activity-clock.ts';
import { isRateLimited, refreshBusyRetry, retryDelayOf, walletRetry, walletTransientType } from './wallet-retry.ts';

/** A run whose claim on the funding was overtaken: it writes nothing more and calls nothing more. */
function ownerLost(fundingId: string): ApplicationFailure {
  return ApplicationFailure.nonRetryable(`funding ${fundingId} was taken over by another run`, fundingFailureTypes.ownerLost);
}
export const isOwnerLost = (error: unknown): boolean => error instanceof ApplicationFailure && error.type === fundingFailureTypes.ownerLost;

/** Not sent: a wallet call that could outlive the activity (or the pass) it runs in. */
class CallWouldOutlive extends Error {
  override readonly name = 'CallWouldOutlive';
}
/** A retryable failure for a call not sent for lack of time: the next attempt starts with its full time. */
const deferred = (what: string) => ApplicationFailure.retryable(`${what} not sent: it could outlive this attempt`, 'WalletCallDeferred');

export interface FundingActivityDependencies {
  /** Writes every state change, and counts fundings by final state (fundings/funding-record.ts). */
  fundings: FundingRecord;
  /** The batch chunk's writes, many items at once (fundings/batch-items-record.ts). */
  batchItems: Pick<BatchItemsRecord, 'claimPendingItems' | 'beginExecuteMany' | 'finishExecutedMany'>;
  wallet: Pick<WalletClient, 'createTransfer' | 'executeTransfer' | 'retrieveTransfer'>;
  vault: Pick<TokenVault, 'withUserToken'>;
  logger: Logger;
  /** WALLET_TIMEOUT_MS: a wallet call's longest wait, which the one pass must have left before each call. */
  walletTimeoutMs?: number;
}

/** Codes of a refused create that end the funding REJECTED (before any execute, final). */
const rejectedCreateCodes = new Set(['M133', '1096', 'CODE_INVALID']);

/** A transient failure: Temporal retries the activity (after Retry-After when the service gave one). */
function retryLater(error: WalletError): never {
  throw walletRetry(error);
}

function progressOf(transfer: Transfer, requestReferenceNo: string): TransferProgress {
  switch (transfer.status) {
    case 'APPROVED':
      return { kind: 'final', status: 'APPROVED', declineCode: null, requestReferenceNo };
    case 'DECLINED':
      return { kind: 'final', status: 'DECLINED', declineCode: transfer.decline?.code ?? 'DECLINED', requestReferenceNo };
    case 'PROCESSING':
      return { kind: 'processing', requestReferenceNo };
    case 'CREATED':
      return { kind: 'not-executed', requestReferenceNo };
    case 'EXPIRED':
      return { kind: 'expired', requestReferenceNo };
  }
}

/** What differs between a created intent and the request, in words (no secret); null when nothing does. */
function createMismatch(transfer: Transfer, asked: { recipientType: 'CODE' | 'TOKEN'; amount: { currency: string; value: string } }): string | null {
  const differences: string[] = [];
  if (transfer.status !== 'CREATED') differences.push(`status ${transfer.status}`);
  if (transfer.recipient.type !== asked.recipientType) differences.push(`recipient type ${transfer.recipient.type}, asked ${asked.recipientType}`);
  if (transfer.amount.currency !== asked.amount.currency) differences.push(`currency ${transfer.amount.currency}, asked ${asked.amount.currency}`);
  if (!sameValue(transfer.amount, asked.amount)) differences.push(`amount ${transfer.amount.value}, asked ${asked.amount.value}`);
  return differences.length > 0 ? differences.join('; ') : null;
}

/** What the chunk pass did: an outcome per item. */
export interface ItemsPassResult {
  outcomes: Map<string, OnePassOutcome>;
}

/** The funding activities, and the chunk pass a batch runs its items through (not an activity of its own). */
export type FundingActivities = FundWalletActivities & {
  /** `current`: false once the chunk's attempt may have been replaced (activities/attempt-lease.ts): it claims and calls nothing more. */
  fundItemsInOnePass(fundingIds: readonly string[], current?: () => boolean): Promise<ItemsPassResult>;
};

type FundingRow = Awaited<ReturnType<FundingRecord['get']>>;

/** A funding a pass took on: its row as the claim left it (CREATING, no transfer yet), and the claim's fence. */
type ClaimedRow = FundingRow & { fence: number };

/** The pass hands the funding to its workflow's steps, which go on from the record (and claim it). */
const steps: OnePassOutcome = { kind: 'steps' };

/**
 * What a failure of one funding in a pass becomes, beyond being overtaken or out of time (`steps`
 * in every pass): the single funding's pass fails with it, a batch's chunk hands that item over.
 */
type ItemFailure = (fundingId: string, error: unknown) => OnePassOutcome;

/** A funding's part of a pass that threw: overtaken or out of time is `steps`; anything else is `failed`'s to say. */
function handedOver(fundingId: string, error: unknown, failed: ItemFailure): OnePassOutcome {
  return isOwnerLost(error) || error instanceof CallWouldOutlive ? steps : failed(fundingId, error);
}

/**
 * A create the wallet said to try again later (429, a refused connection; a token refresh not
 * done): nothing was created, and the workflow's create activity tries again with its retry
 * policy, after the wallet's Retry-After when it gave one. Null for any other failure.
 */
function createLater(error: unknown): OnePassOutcome | null {
  if (!(error instanceof ApplicationFailure) || error.nonRetryable || error.type !== walletTransientType) return null;
  return { kind: 'create-later', retryAfterMs: typeof error.nextRetryDelay === 'number' ? error.nextRetryDelay : null, ...(isRateLimited(error) ? { rateLimited: true } : {}) };
}

export function createFundingActivities(deps: FundingActivityDependencies): FundingActivities {
  const { fundings, batchItems, wallet, logger } = deps;
  const walletTimeoutMs = deps.walletTimeoutMs ?? DEFAULT_WALLET_TIMEOUT_MS;

  /** After a write the record refused: an overtaken run stops here. */
  async function stopIfOvertaken(fundingId: string, fence: Fence): Promise<void> {
    if (fence !== undefined && (await fundings.fenceOf(fundingId)) !== fence) throw ownerLost(fundingId);
  }
  /** The funding as it stands, read once, for a run that still owns it (an overtaken one stops). */
  async function owned(fundingId: string, fence: Fence) {
    const funding = await fundings.get(fundingId);
    if (fence !== undefined && funding.ownerFence !== fence) throw ownerLost(fundingId);
    return funding;
  }
  /**
   * Before a wallet call: the call starts only while the run owns the funding (read again unless
   * the run's own fenced write or read just showed it) and the call fits in its time.
   */
  async function beforeCall(fundingId: string, fence: Fence, clock: ActivityClock, ownershipJustShown = false): Promise<void> {
    if (!ownershipJustShown) await stopIfOvertaken(fundingId, fence);
    if (!callFitsBefore(clock, walletTimeoutMs)) throw new CallWouldOutlive();
  }

  async function readBack(fundingId: string, transferId: string): Promise<TransferProgress> {
    try {
      const result = await wallet.retrieveTransfer(transferId);
      return progressOf(result.data, result.requestReferenceNo);
    } catch (error) {
      if (!isWalletError(error)) throw error;
      if (error.outcome !== 'rejected') retryLater(error);
      logger.error({ fundingId, code: error.code, requestReferenceNo: error.requestReferenceNo }, 'retrieve transfer refused');
      return { kind: 'refused', code: error.code, requestReferenceNo: error.requestReferenceNo, httpStatus: error.httpStatus };
    }
  }

  /** Sends the execute once: where the transfer stands, or `retry` when the wallet did nothing (429, refused connection). */
  async function sendExecute(fundingId: string, transferId: string): Promise<TransferProgress | { kind: 'retry'; error: WalletError }> {
    try {
      const result = await wallet.executeTransfer(transferId);
      return progressOf(result.data, result.requestReferenceNo);
    } catch (error) {
      if (!isWalletError(error)) throw error;
      if (error.code === 'TRANSFER_EXPIRED') return { kind: 'expired', requestReferenceNo: error.requestReferenceNo };
      if (error.outcome === 'retryable') return { kind: 'retry', error };
      // unknown (time-out, 5xx, 7011, reset, unparsable, 409) or an odd rejection: retrieve decides.
      logger.warn({ fundingId, code: error.code, requestReferenceNo: error.requestReferenceNo }, 'execute outcome unknown: reconciling');
      return { kind: 'unknown', code: error.code, requestReferenceNo: error.requestReferenceNo, httpStatus: error.httpStatus };
    }
  }

  const activities = {
    async loadFunding(fundingId: string): Promise<FundingSnapshot> {
      const claimed = await fundings.claim(fundingId);
      if (!claimed) throw ApplicationFailure.nonRetryable(`funding ${fundingId} does not exist`, fundingFailureTypes.notFound);
      return { fundingId, status: claimed.status, recipientType: claimed.recipientType, transferId: claimed.transferId, fence: claimed.fence };
    },

    async markCreating(fundingId: string, fence?: Fence): Promise<boolean> {
      if (await fundings.move(fundingId, 'CREATING', { detail: 'creating the transfer intent' }, fence)) return true;
      const funding = await owned(fundingId, fence);
      return funding.status === 'CREATING' && !funding.cancelRequested;
    },

    async createTransfer(fundingId: string, fence?: Fence): Promise<CreateOutcome> {
      try {
        return await create(fundingId, fence, activityClock());
      } catch (error) {
        if (error instanceof CallWouldOutlive) throw deferred('create');
        throw error;
      }
    },

    async beginExecute(fundingId: string, createRequestReferenceNo: string | null, fence?: Fence): Promise<boolean> {
      if (await fundings.beginExecute(fundingId, createRequestReferenceNo, fence)) return true;
      const funding = await owned(fundingId, fence);
      return funding.status === 'EXECUTING' || funding.status === 'RECONCILING';
    },

    async executeTransfer(fundingId: string, transferId: string, fence?: Fence): Promise<TransferProgress> {
      const clock = activityClock();
      try {
        if (clock.attempt > 1) {
          await beforeCall(fundingId, fence, clock);
          const seen = await readBack(fundingId, transferId);
          if (seen.kind !== 'not-executed') return seen;
        }
        await beforeCall(fundingId, fence, clock);
      } catch (error) {
        if (error instanceof CallWouldOutlive) throw deferred('execute');
        throw error;
      }
      const sent = await sendExecute(fundingId, transferId);
      if (sent.kind === 'retry') retryLater(sent.error);
      return sent;
    },

    async retrieveTransfer(fundingId: string, transferId: string): Promise<TransferProgress> {
      if (!callFitsBefore(activityClock(), walletTimeoutMs)) throw deferred('retrieve');
      return readBack(fundingId, transferId);
    },

    async markReconciling(fundingId: string, requestReferenceNo: string | null, detail: string, fence?: Fence): Promise<void> {
      if (await fundings.move(fundingId, 'RECONCILING', { requestReferenceNo, detail }, fence)) return;
      await stopIfOvertaken(fundingId, fence);
    },

    async parkFundingForReview(fundingId: string, reason: string, evidence: WalletCallEvidence[], fence?: Fence): Promise<ParkOutcome> {
      return park(fundingId, reason, evidence, fence);
    },

    // With no fence: ops' (or the wallet's) word on a funding in review claims it, whichever run holds it.
    async resolveFunding(fundingId: string, input: ResolveFundingUpdateInput): Promise<{ status: FinalFundingStatus; errorCode: string | null }> {
      const funding = await fundings.resolve(fundingId, input);
      if (!isFinalFundingStatus(funding.status)) throw ApplicationFailure.nonRetryable('funding was not resolved', fundingFailureTypes.corrupt);
      return { status: funding.status, errorCode: funding.errorCode };
    },

    async finishFunding(fundingId: string, input: FinishInput, fence?: Fence): Promise<{ status: FinalFundingStatus; errorCode: string | null; transferId: string | null }> {
      const funding = await finishOwned(fundingId, input, fence);
      if (!isFinalFundingStatus(funding.status)) throw ApplicationFailure.nonRetryable('funding did not reach a final state', fundingFailureTypes.corrupt);
      return { status: funding.status, errorCode: funding.errorCode, transferId: funding.transferId };
    },
  };

  /** The final state, written by the funding's owner (the record answers how it stands; an overtaken writer stops). */
  async function finishOwned(fundingId: string, input: FinishInput, fence: Fence) {
    const code = input.code ?? null;
    const done = await fundings.finish(fundingId, {
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
  async function park(fundingId: string, reason: string, evidence: WalletCallEvidence[], fence: Fence): Promise<ParkOutcome> {
    if (await fundings.parkForReview(fundingId, reason, evidence, fence)) return { parked: true };
    const funding = await owned(fundingId, fence);
    if (funding.status === 'NEEDS_REVIEW') return { parked: true };
    if (isFinalFundingStatus(funding.status)) return { parked: false, status: funding.status, errorCode: funding.errorCode, transferId: funding.transferId };
    throw ApplicationFailure.nonRetryable(`funding ${fundingId} could not be parked from ${funding.status}`, fundingFailureTypes.corrupt);
  }

  /**
   * Creates the transfer intent and stores its transferId before anything can execute it. A
   * stored transferId is returned as is: a retried activity never creates a second intent for
   * a funding that already has one. Only the funding's owner creates, and only with the time to
   * finish the call (checked after the token vault's lock, which may have taken most of it).
   */
  async function create(fundingId: string, fence: Fence, clock: ActivityClock): Promise<CreateOutcome> {
    const funding = await fundings.get(fundingId);
    if (fence !== undefined && funding.ownerFence !== fence) throw ownerLost(fundingId);
    if (funding.transferId) return { kind: 'created', transferId: funding.transferId, requestReferenceNo: null };
    if (funding.cancelRequested || funding.status !== 'CREATING') return { kind: 'cancelled' };
    // The row just read shows the claim.
    const intent = await requestIntent(funding, fence, clock, true);
    if (intent.kind !== 'answered') return intent;
    // Cancelled meanwhile, a concurrent attempt stored one first, or another run took the
    // funding over: this intent stays unexecuted (kept on record).
    const kept = await fundings.storeTransferId(fundingId, intent.transferId, fence);
    if (kept.stored) return { kind: 'created', transferId: intent.transferId, requestReferenceNo: intent.requestReferenceNo };
    await stopIfOvertaken(fundingId, fence);
    return kept.transferId ? { kind: 'created', transferId: kept.transferId, requestReferenceNo: null } : { kind: 'cancelled' };
  }

  /**
   * The create call for a funding in CREATING with no transfer yet, and what its answer means:
   * `answered` (an intent matching the request, not stored yet: the caller stores it before
   * anything can execute it), refused, or a mismatch (kept on record, never executed). Throws to
   * retry later (a transient failure) and when the run was overtaken.
   */
  async function requestIntent(funding: FundingRow, fence: Fence, clock: ActivityClock, ownershipJustShown: boolean): Promise<CreateOutcome | { kind: 'answered'; transferId: string; requestReferenceNo: string }> {
    const fundingId = funding.id;
    let amount: Amount;
    try {
      amount = storedAmount(funding);
    } catch (error) {
      if (error instanceof MoneyUnreadable) throw ApplicationFailure.nonRetryable(error.message, fundingFailureTypes.corrupt);
      throw error;
    }

    let created: { data: Transfer; requestReferenceNo: string };
    try {
      if (funding.recipientType === 'CODE') {
        const code = fundings.cashInCodeOf(funding);
        if (code === null) throw ApplicationFailure.nonRetryable('funding has no cash-in code', fundingFailureTypes.corrupt);
        await beforeCall(fundingId, fence, clock, ownershipJustShown);
        created = await wallet.createTransfer({ recipient: { type: 'CODE', value: code }, amount });
      } else {
        if (!funding.linkId) throw ApplicationFailure.nonRetryable('funding has no link', fundingFailureTypes.corrupt);
        // A token refresh is a wallet call too: none from an attempt out of time.
        if (!callFitsBefore(clock, walletTimeoutMs)) throw new CallWouldOutlive();
        created = await deps.vault.withUserToken(funding.linkId, async (token) => {
          // The vault may have waited for another refresh's lock: ownership is read again.
          await beforeCall(fundingId, fence, clock);
          return wallet.createTransfer({ recipient: { type: 'TOKEN', value: token }, amount });
        });
      }
    } catch (error) {
      if (error instanceof VaultError) {
        return { kind: 'refused', status: 'FAILED', code: error.code === 'REAUTH_REQUIRED' ? 'REAUTH_REQUIRED' : 'LINK_NOT_USABLE', requestReferenceNo: null };
      }
      // The user's token could not be refreshed just now: nothing was created; try again.
      if (error instanceof TokenRefreshError) throw walletRetry(error.walletError, `token refresh: ${error.walletError.code}`);
      if (error instanceof TokenRefreshBusy) throw refreshBusyRetry(error);
      if (!isWalletError(error)) throw error;
      if (error.outcome === 'rejected') {
        const status = rejectedCreateCodes.has(error.code) ? 'REJECTED' : 'FAILED';
        return { kind: 'refused', status, code: error.code, requestReferenceNo: error.requestReferenceNo };
      }
      // Unknown or retryable: nothing was executed, and a retried create at worst leaves an
      // unexecuted intent behind, which is harmless.
      logger.warn({ fundingId, code: error.code, outcome: error.outcome, requestReferenceNo: error.requestReferenceNo }, 'create transfer: retrying');
      retryLater(error);
    }

    // The answer must be about what was asked: an intent for another amount or
    // recipient is never executed; a person looks at it.
    const mismatch = createMismatch(created.data, { recipientType: funding.recipientType, amount });
    if (mismatch) {
      await fundings.keepUnexecuted(fundingId, created.data.transferId);
      logger.error({ fundingId, transferId: created.data.transferId, requestReferenceNo: created.requestReferenceNo, mismatch }, 'the wallet created something else than asked');
      return { kind: 'mismatch', transferId: created.data.transferId, requestReferenceNo: created.requestReferenceNo, detail: mismatch };
    }
    return { kind: 'answered', transferId: created.data.transferId, requestReferenceNo: created.requestReferenceNo };
  }

  /**
   * A final state the pass writes, with its claim. `beforeExecute`: a state that says nothing was
   * sent (a refused or cancelled create), which the record writes only while no execute can have
   * been sent. A finish that did not leave the funding final hands over to the steps.
   */
  async function finished(fundingId: string, fence: number, input: FinishInput): Promise<OnePassOutcome> {
    const done = await finishOwned(fundingId, input, fence);
    if (!isFinalFundingStatus(done.status)) return steps;
    return { kind: 'finished', status: done.status, errorCode: done.errorCode, transferId: done.transferId };
  }

  return {
    ...activities,

    async fundInOnePass(fundingId: string): Promise<OnePassOutcome> {
      try {
        return await fundOne(fundingId, activityClock(), failThePass);
      } catch (error) {
        // Overtaken (another run claimed the funding) or out of time: nothing more is written or
        // sent; the workflow's step path goes on from the record, and claims it.
        if (isOwnerLost(error) || error instanceof CallWouldOutlive) return steps;
        throw error;
      }
    },

    fundItemsInOnePass,
  };

  /** The single funding's pass fails with what it did not foresee: its workflow sees the failure, and its steps go on from the record. */
  function failThePass(_fundingId: string, error: unknown): never {
    throw error;
  }

  /** A batch's chunk hands the item over (its workflow takes it on from the record) and goes on with its other items. */
  function handItOver(fundingId: string, error: unknown): OnePassOutcome {
    logger.warn({ fundingId, err: (error as Error).message }, 'batch item: its pass stopped; its workflow takes it on');
    return steps;
  }

  /**
   * A pass of one funding: the claim of one (a single funding's waits for a cancel that holds the
   * row; a chunk's item skips a row another transaction holds), then passClaimed. `steps` when there is no time for a wallet call or the funding is not a fresh
   * PENDING one (someone else took it on, or it was cancelled).
   */
  async function fundOne(fundingId: string, clock: ActivityClock, failed: ItemFailure, claim: { skipLocked?: boolean } = {}): Promise<OnePassOutcome> {
    if (!callFitsBefore(clock, walletTimeoutMs)) return steps;
    const claimed = await claimOne(fundingId, claim);
    if (!claimed) return steps;
    return (await passClaimed([claimed], clock, failed)).get(fundingId) ?? steps;
  }

  /**
   * PENDING → CREATING and the claim, at once (the funding record's claimPending), and the row as
   * the claim left it; null when the funding was not a fresh PENDING one, or when another run's
   * claim or a cancel came between the two.
   */
  async function claimOne(fundingId: string, claim: { skipLocked?: boolean }): Promise<ClaimedRow | null> {
    const fence = await fundings.claimPending(fundingId, claim);
    if (fence === null) return null;
    const row = await fundings.get(fundingId);
    if (row.ownerFence !== fence || row.cancelRequested || row.status !== 'CREATING' || row.transferId !== null) return null;
    return { ...row, fence };
  }

  /**
   * A chunk of a batch's items in one pass together: the fresh ones taken on at once (one
   * transaction claims them all; rows another transaction holds, a batch's cancel, are skipped),
   * then passClaimed with its writes made set-based. The items it did not claim run a pass of
   * their own meanwhile (fundOne, skipping a held row too), on the same clock: the activity's, read at its start, with the
   * chunk's lease, so no call of theirs can outlive the activity either. An item whose pass failed
   * is answered `steps`, for the batch to hand over.
   */
  async function fundItemsInOnePass(fundingIds: readonly string[], current?: () => boolean): Promise<ItemsPassResult> {
    const clock: ActivityClock = { ...activityClock(), ...(current ? { current } : {}) };
    const outcomes = new Map<string, OnePassOutcome>();
    if (!callFitsBefore(clock, walletTimeoutMs)) {
      for (const fundingId of fundingIds) outcomes.set(fundingId, steps);
      return { outcomes };
    }
    const claimed = await batchItems.claimPendingItems(fundingIds);
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
            outcome = await fundOne(fundingId, clock, handItOver, { skipLocked: true });
          } catch (error) {
            outcome = handedOver(fundingId, error, handItOver);
          }
          outcomes.set(fundingId, outcome);
        }),
    );
    try {
      for (const [fundingId, outcome] of await passClaimed(claimed, clock, handItOver)) outcomes.set(fundingId, outcome);
    } finally {
      // Even when the chunk's part failed: no pass of this activity runs on after it ends.
      await alone;
    }
    return { outcomes };
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
  async function passClaimed(claimed: readonly ClaimedRow[], clock: ActivityClock, failed: ItemFailure): Promise<Map<string, OnePassOutcome>> {
    const outcomes = new Map<string, OnePassOutcome>(claimed.map((row) => [row.id, steps]));
    /** One funding's part, whatever it throws: overtaken, out of time or anything unforeseen. */
    const guarded = async <T>(fundingId: string, work: () => Promise<T>): Promise<T | typeof steps> => {
      try {
        return await work();
      } catch (error) {
        return handedOver(fundingId, error, failed);
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
          intent = await requestIntent(row, fence, clock, true);
        } catch (error) {
          return void outcomes.set(fundingId, createLater(error) ?? handedOver(fundingId, error, failed));
        }
        if (intent.kind === 'answered') return void answered.push({ fundingId, fence, transferId: intent.transferId, requestReferenceNo: intent.requestReferenceNo });
        if (outOfTime()) return;
        switch (intent.kind) {
          case 'refused':
            outcomes.set(fundingId, await guarded(fundingId, () => finished(fundingId, fence, { status: intent.status, code: intent.code, requestReferenceNo: intent.requestReferenceNo, beforeExecute: true })));
            return;
          case 'mismatch': {
            // Parked here, not only by the workflow: a pass run again must not find a CREATING
            // funding with no transfer and create (and execute) another intent.
            const evidence: WalletCallEvidence = { at: new Date().toISOString(), operation: 'transfers.create', requestReferenceNo: intent.requestReferenceNo, httpStatus: 201, code: 'ANSWER_MISMATCH', outcome: 'mismatch' };
            const parked = await guarded(fundingId, () => park(fundingId, mismatchReviewReason(intent.detail, intent.transferId), [evidence], fence));
            if ('kind' in parked) return;
            outcomes.set(fundingId, parked.parked ? { ...intent, fence } : { kind: 'finished', status: parked.status, errorCode: parked.errorCode, transferId: parked.transferId });
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
      for (const item of answered) await guarded(item.fundingId, () => fundings.keepUnexecuted(item.fundingId, item.transferId));
      return outcomes;
    }

    // The intents stored and the fundings moved to EXECUTING, in one transaction; one that did not
    // move (cancelled meanwhile, taken over) keeps its intent on record, unexecuted.
    const executing = await batchItems.beginExecuteMany(answered);
    for (const item of answered.filter((entry) => !executing.has(entry.fundingId))) {
      await guarded(item.fundingId, () => fundings.storeTransferId(item.fundingId, item.transferId, item.fence));
    }
    // EXECUTING with no execute sent: its workflow retrieves first and executes what is not.
    if (!callFitsBefore(clock, walletTimeoutMs)) return outcomes;
    // Each claim read again right before its execute: a pass that paused after its move to
    // EXECUTING (a stopped worker, an attempt cut off from Temporal but not from PostgreSQL) sends
    // nothing for a funding another run claimed meanwhile; that run retrieves before any execute.
    const claimsNow = await fundings.fencesOf(answered.filter((item) => executing.has(item.fundingId)).map((item) => item.fundingId));
    const toExecute = answered.filter((item) => executing.has(item.fundingId) && claimsNow.get(item.fundingId) === item.fence);
    if (!callFitsBefore(clock, walletTimeoutMs)) return outcomes;

    // The executes, all at once: each sent once, by the pass that moved its funding to EXECUTING.
    const progressOf = new Map<string, Awaited<ReturnType<typeof sendExecute>>>();
    await Promise.all(
      toExecute.map(async (item) => {
        const sent = await guarded(item.fundingId, () => sendExecute(item.fundingId, item.transferId));
        if ('kind' in sent && sent.kind === 'steps') return;
        progressOf.set(item.fundingId, sent as Awaited<ReturnType<typeof sendExecute>>);
      }),
    );
    if (outOfTime()) return outcomes;

    // The wallet's final words, in one transaction.
    const finals = toExecute.flatMap((item) => {
      const progress = progressOf.get(item.fundingId);
      return progress?.kind === 'final' ? [{ ...item, progress }] : [];
    });
    const finishedIds = await batchItems.finishExecutedMany(
      finals.map((item) => ({ fundingId: item.fundingId, fence: item.fence, status: item.progress.status, code: item.progress.declineCode, requestReferenceNo: item.progress.requestReferenceNo })),
    );
    for (const item of finals) {
      if (finishedIds.has(item.fundingId)) outcomes.set(item.fundingId, { kind: 'finished', status: item.progress.status, errorCode: item.progress.declineCode, transferId: item.transferId });
    }
    // The rest, each the step-by-step way from its execute.
    await Promise.all(
      toExecute.map(async (item) => {
        const progress = progressOf.get(item.fundingId);
        if (!progress || progress.kind === 'final') return;
        outcomes.set(item.fundingId, await guarded(item.fundingId, () => afterExecute(item.fundingId, item.fence, item.transferId, progress)));
      }),
    );
    return outcomes;
  }

  /** What the pass does after a funding's execute, unless the wallet's word was final. */
  async function afterExecute(fundingId: string, fence: number, transferId: string, progress: Awaited<ReturnType<typeof sendExecute>>): Promise<OnePassOutcome> {
    switch (progress.kind) {
      case 'retry':
        return { kind: 'execute', transferId, retryAfterMs: retryDelayOf(progress.error) ?? null, fence };
      case 'final':
        return finished(fundingId, fence, { status: progress.status, code: progress.declineCode, requestReferenceNo: progress.requestReferenceNo });
      case 'expired':
        return finished(fundingId, fence, { status: 'FAILED', code: 'TRANSFER_EXPIRED', requestReferenceNo: progress.requestReferenceNo });
      case 'unknown':
        // On record at once, with the execute's Request-Reference-No: whoever goes on from the
        // record (this workflow, a run after a crash, a review) sees the doubt and its evidence.
        if (!(await fundings.move(fundingId, 'RECONCILING', { requestReferenceNo: progress.requestReferenceNo, detail: `execute outcome unknown (${progress.code}): retrieving` }, fence))) {
          await stopIfOvertaken(fundingId, fence);
        }
        return { kind: 'executed', transferId, progress, fence };
      default:
        return { kind: 'executed', transferId, progress, fence };
    }
  }
}
