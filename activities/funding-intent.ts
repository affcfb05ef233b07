// A funding's transfer intent: the create call (a TOKEN recipient's user token from the vault
// first), what its answer means, and the transferId stored before anything can execute it. Shared
// by the step activity that creates (activities/funding-steps.ts) and the one pass
// (activities/funding-pass.ts), which stores its intents with their move to EXECUTING.
import { ApplicationFailure } from '@temporalio/activity';
import { MoneyUnreadable, sameValue, storedAmount, type Amount } from '../domain/money.ts';
import type { Fence, FundingRecord } from '../fundings/funding-record.ts';
import { fundingFailureTypes, type CreateOutcome } from '../workflows/fund-wallet.contract.ts';
import { isWalletError, type Transfer } from '../wallet/index.ts';
import { TokenRefreshBusy, TokenRefreshError, VaultError } from '../links/token-vault.ts';
import { callFitsBefore, type ActivityClock } from './activity-clock.ts';
import { refreshBusyRetry, walletRetry } from './wallet-retry.ts';
import {
  beforeCall,
  CallWouldOutlive,
  ownerLost,
  retryLater,
  stopIfOvertaken,
  type FundingContext,
} from './funding-context.ts';

/** A funding as its record reads it. */
export type FundingRow = Awaited<ReturnType<FundingRecord['get']>>;

/** Codes of a refused create that end the funding REJECTED (before any execute, final). */
const rejectedCreateCodes = new Set(['M133', '1096', 'CODE_INVALID']);

/** An intent the wallet created as asked, not stored yet: the caller stores it before anything can execute it. */
export type AnsweredIntent = { kind: 'answered'; transferId: string; requestReferenceNo: string };

/** What differs between a created intent and the request, in words (no secret); null when nothing does. */
function createMismatch(
  transfer: Transfer,
  asked: { recipientType: 'CODE' | 'TOKEN'; amount: { currency: string; value: string } },
): string | null {
  const differences: string[] = [];
  if (transfer.status !== 'CREATED') differences.push(`status ${transfer.status}`);
  if (transfer.recipient.type !== asked.recipientType)
    differences.push(`recipient type ${transfer.recipient.type}, asked ${asked.recipientType}`);
  if (transfer.amount.currency !== asked.amount.currency)
    differences.push(`currency ${transfer.amount.currency}, asked ${asked.amount.currency}`);
  if (!sameValue(transfer.amount, asked.amount))
    differences.push(`amount ${transfer.amount.value}, asked ${asked.amount.value}`);
  return differences.length > 0 ? differences.join('; ') : null;
}

/**
 * Creates the transfer intent and stores its transferId before anything can execute it. A
 * stored transferId is returned as is: a retried activity never creates a second intent for
 * a funding that already has one. Only the funding's owner creates, and only with the time to
 * finish the call (checked after the token vault's lock, which may have taken most of it).
 */
export async function createAndStore(
  ctx: FundingContext,
  fundingId: string,
  fence: Fence,
  clock: ActivityClock,
): Promise<CreateOutcome> {
  const funding = await ctx.fundings.get(fundingId);
  if (fence !== undefined && funding.ownerFence !== fence) throw ownerLost(fundingId);
  if (funding.transferId) return { kind: 'created', transferId: funding.transferId, requestReferenceNo: null };
  if (funding.cancelRequested || funding.status !== 'CREATING') return { kind: 'cancelled' };
  // The row just read shows the claim.
  const intent = await requestIntent(ctx, funding, fence, clock, true);
  if (intent.kind !== 'answered') return intent;
  // Cancelled meanwhile, a concurrent attempt stored one first, or another run took the
  // funding over: this intent stays unexecuted (kept on record).
  const kept = await ctx.fundings.storeTransferId(fundingId, intent.transferId, fence);
  if (kept.stored)
    return { kind: 'created', transferId: intent.transferId, requestReferenceNo: intent.requestReferenceNo };
  await stopIfOvertaken(ctx, fundingId, fence);
  return kept.transferId
    ? { kind: 'created', transferId: kept.transferId, requestReferenceNo: null }
    : { kind: 'cancelled' };
}

/**
 * The create call for a funding in CREATING with no transfer yet, and what its answer means:
 * `answered` (an intent matching the request, not stored yet: the caller stores it before
 * anything can execute it), refused, or a mismatch (kept on record, never executed). Throws to
 * retry later (a transient failure) and when the run was overtaken.
 */
export async function requestIntent(
  ctx: FundingContext,
  funding: FundingRow,
  fence: Fence,
  clock: ActivityClock,
  ownershipJustShown: boolean,
): Promise<CreateOutcome | AnsweredIntent> {
  const fundingId = funding.id;
  let amount: Amount;
  try {
    amount = storedAmount(funding);
  } catch (error) {
    if (error instanceof MoneyUnreadable)
      throw ApplicationFailure.nonRetryable(error.message, fundingFailureTypes.corrupt);
    throw error;
  }

  let created: { data: Transfer; requestReferenceNo: string };
  try {
    if (funding.recipientType === 'CODE') {
      const code = ctx.fundings.cashInCodeOf(funding);
      if (code === null)
        throw ApplicationFailure.nonRetryable('funding has no cash-in code', fundingFailureTypes.corrupt);
      await beforeCall(ctx, fundingId, fence, clock, ownershipJustShown);
      created = await ctx.wallet.createTransfer({ recipient: { type: 'CODE', value: code }, amount });
    } else {
      if (!funding.linkId) throw ApplicationFailure.nonRetryable('funding has no link', fundingFailureTypes.corrupt);
      // A token refresh is a wallet call too: none from an attempt out of time.
      if (!callFitsBefore(clock, ctx.walletTimeoutMs)) throw new CallWouldOutlive();
      created = await ctx.vault.withUserToken(funding.linkId, async (token) => {
        // The vault may have waited for another refresh's lock: ownership is read again.
        await beforeCall(ctx, fundingId, fence, clock);
        return ctx.wallet.createTransfer({ recipient: { type: 'TOKEN', value: token }, amount });
      });
    }
  } catch (error) {
    if (error instanceof VaultError) {
      return {
        kind: 'refused',
        status: 'FAILED',
        code: error.code === 'REAUTH_REQUIRED' ? 'REAUTH_REQUIRED' : 'LINK_NOT_USABLE',
        requestReferenceNo: null,
      };
    }
    // The user's token could not be refreshed just now: nothing was created; try again.
    if (error instanceof TokenRefreshError)
      throw walletRetry(error.walletError, `token refresh: ${error.walletError.code}`);
    if (error instanceof TokenRefreshBusy) throw refreshBusyRetry(error);
    if (!isWalletError(error)) throw error;
    if (error.outcome === 'rejected') {
      const status = rejectedCreateCodes.has(error.code) ? 'REJECTED' : 'FAILED';
      return { kind: 'refused', status, code: error.code, requestReferenceNo: error.requestReferenceNo };
    }
    // Unknown or retryable: nothing was executed, and a retried create at worst leaves an
    // unexecuted intent behind, which is harmless.
    ctx.logger.warn(
      { fundingId, code: error.code, outcome: error.outcome, requestReferenceNo: error.requestReferenceNo },
      'create transfer: retrying',
    );
    retryLater(error);
  }

  // The answer must be about what was asked: an intent for another amount or
  // recipient is never executed; a person looks at it.
  const mismatch = createMismatch(created.data, { recipientType: funding.recipientType, amount });
  if (mismatch) {
    await ctx.fundings.keepUnexecuted(fundingId, created.data.transferId);
    ctx.logger.error(
      { fundingId, transferId: created.data.transferId, requestReferenceNo: created.requestReferenceNo, mismatch },
      'the wallet created something else than asked',
    );
    return {
      kind: 'mismatch',
      transferId: created.data.transferId,
      requestReferenceNo: created.requestReferenceNo,
      detail: mismatch,
    };
  }
  return { kind: 'answered', transferId: created.data.transferId, requestReferenceNo: created.requestReferenceNo };
}
