// The payment workflow's activities. Create debits nothing; execute debits once per wallet payment
// id. There is no retrieve for payments, so an execute whose outcome stays unknown is evidence for
// a person (NEEDS_REVIEW), never a guess. Results carry ids, states and codes only. Every write
// goes through the payment record (payments/payment-record.ts); these stay thin. Their signatures
// and results are the workflow's, declared in its contract (workflows/pay-wallet.contract.ts).
import { ApplicationFailure } from '@temporalio/activity';
import { MoneyUnreadable, sameValue, storedAmount, type Amount } from '../domain/money.ts';
import { isFinalPaymentStatus, type ExecuteAttempt, type FinalPaymentStatus } from '../domain/payment.ts';
import type { Logger } from '../lib/logger.ts';
import type { PaymentFence, PaymentRecord } from '../payments/payment-record.ts';
import {
  CallNotSent,
  isConflictOf,
  isPaymentExecuteRefusal,
  isWalletError,
  retryDelayOf,
  type WalletClient,
} from '../wallet/index.ts';
import { TokenRefreshBusy, TokenRefreshError, VaultError, type TokenVault } from '../links/token-vault.ts';
import { activityClock, callFitsBefore, DEFAULT_WALLET_TIMEOUT_MS, type ActivityClock } from './activity-clock.ts';
import { refreshBusyRetry, walletRetry } from './wallet-retry.ts';
import {
  paymentFailureTypes,
  type CreatePaymentOutcome,
  type ExecutePaymentOutcome,
  type PaymentParkOutcome,
  type PaymentSnapshot,
  type PayWalletActivities,
  type ResolvePaymentUpdateInput,
} from '../workflows/pay-wallet.contract.ts';

export interface PaymentActivityDependencies {
  /** Writes every state change, and counts payments by final state (payments/payment-record.ts). */
  payments: PaymentRecord;
  wallet: Pick<WalletClient, 'createPayment' | 'executePayment' | 'merchantP2mId'>;
  vault: Pick<TokenVault, 'withUserToken'>;
  logger: Logger;
  /** WALLET_TIMEOUT_MS: an execute is sent only when a call this long still fits in the activity. */
  walletTimeoutMs?: number;
}

export function createPaymentActivities(deps: PaymentActivityDependencies): PayWalletActivities {
  const { payments, wallet, logger } = deps;
  /**
   * A wallet call's bound, asked right before its request goes out (after any client token it needs was fetched):
   * sent only while a call of WALLET_TIMEOUT_MS still ends within the attempt; else CallNotSent, nothing sent.
   */
  const fitsBefore = (clock: ActivityClock) => () =>
    callFitsBefore(clock, deps.walletTimeoutMs ?? DEFAULT_WALLET_TIMEOUT_MS);

  /** A run whose claim was overtaken writes and calls nothing more. */
  const ownerLost = (id: string) =>
    ApplicationFailure.nonRetryable(`payment ${id} was taken over by another run`, paymentFailureTypes.ownerLost);
  async function stopIfOvertaken(id: string, fence: PaymentFence): Promise<void> {
    if (fence !== undefined && (await payments.fenceOf(id)) !== fence) throw ownerLost(id);
  }
  /**
   * A money call's check, asked right before each of its requests goes out: the run still owns the payment (else it
   * stops, ownerLost), and the call still ends within the attempt (else CallNotSent). Before, the fence was read
   * before the call began, and the client token it needs, fetched after, could take a wallet call's time: a run
   * overtaken meanwhile (a takeover that executed) still sent.
   */
  const ownedAndInTime = (id: string, fence: PaymentFence, clock: ActivityClock) => async () => {
    await stopIfOvertaken(id, fence);
    return fitsBefore(clock)();
  };
  /** The payment as it stands, read once, for a run that still owns it (an overtaken one stops). */
  async function owned(id: string, fence: PaymentFence) {
    const payment = await payments.get(id);
    if (fence !== undefined && payment.ownerFence !== fence) throw ownerLost(id);
    return payment;
  }

  const attemptOf = (error: {
    requestReferenceNo: string;
    httpStatus: number | null;
    code: string;
    outcome: string;
  }): ExecuteAttempt => ({
    at: new Date().toISOString(),
    requestReferenceNo: error.requestReferenceNo,
    httpStatus: error.httpStatus,
    code: error.code,
    outcome: error.outcome,
  });

  return {
    async loadPayment(id: string): Promise<PaymentSnapshot> {
      const claimed = await payments.claim(id);
      if (!claimed) throw ApplicationFailure.nonRetryable(`payment ${id} does not exist`, paymentFailureTypes.notFound);
      return { id, status: claimed.status, walletPaymentId: claimed.walletPaymentId, fence: claimed.fence };
    },

    async markPaymentCreating(id: string, fence?: PaymentFence): Promise<void> {
      if (!(await payments.markCreating(id, fence))) await stopIfOvertaken(id, fence);
    },

    async createPayment(id: string, fence?: PaymentFence): Promise<CreatePaymentOutcome> {
      const clock = activityClock();
      const payment = await owned(id, fence);
      if (payment.walletPaymentId)
        return { kind: 'created', walletPaymentId: payment.walletPaymentId, requestReferenceNo: null };
      let amount: Amount;
      try {
        amount = storedAmount(payment);
      } catch (error) {
        // A stored amount that cannot be read is never sent as zero.
        if (error instanceof MoneyUnreadable)
          throw ApplicationFailure.nonRetryable(error.message, paymentFailureTypes.corrupt);
        throw error;
      }
      try {
        const created = await deps.vault.withUserToken(payment.linkId, (token) =>
          // Only the payment's owner creates, and only with the time to finish the call: asked right before each
          // request goes out (after the client token it needs, which may take a wallet call of its own).
          wallet.createPayment({ userAccessToken: token, amount, mayStillSend: ownedAndInTime(id, fence, clock) }),
        );
        // The answer must be about what was asked: a payment for another amount or
        // merchant is never executed, and is not stored as this payment's; a person looks at it.
        const mismatch = [
          created.data.p2mId !== wallet.merchantP2mId ? 'another merchant' : null,
          created.data.amount.currency !== amount.currency
            ? `currency ${created.data.amount.currency}, asked ${amount.currency}`
            : null,
          !sameValue(created.data.amount, amount) ? `amount ${created.data.amount.value}, asked ${amount.value}` : null,
        ].filter((difference) => difference !== null);
        if (mismatch.length > 0) {
          logger.error(
            {
              paymentId: id,
              walletPaymentId: created.data.walletPaymentId,
              requestReferenceNo: created.requestReferenceNo,
              mismatch,
            },
            'the wallet created something else than asked',
          );
          return {
            kind: 'mismatch',
            walletPaymentId: created.data.walletPaymentId,
            requestReferenceNo: created.requestReferenceNo,
            detail: mismatch.join('; '),
          };
        }
        const kept = await payments.storeCreated(
          id,
          { walletPaymentId: created.data.walletPaymentId, fee: created.data.fee },
          fence,
        );
        // A concurrent attempt stored its payment first: that one is the payment; this one is never executed.
        if (!kept.stored) {
          await stopIfOvertaken(id, fence);
          if (kept.walletPaymentId === null && kept.status !== 'CREATING') {
            // Answered after the run moved the payment on: this wallet payment is never executed, and said so.
            logger.warn(
              { paymentId: id, walletPaymentId: created.data.walletPaymentId, status: kept.status },
              'a payment create answered after its payment moved on: that wallet payment is never executed',
            );
            throw ApplicationFailure.nonRetryable(
              `payment ${id} moved on to ${kept.status} while its create was answered`,
              paymentFailureTypes.ownerLost,
            );
          }
          if (kept.walletPaymentId === null)
            throw ApplicationFailure.nonRetryable('payment id not stored', paymentFailureTypes.corrupt);
          return { kind: 'created', walletPaymentId: kept.walletPaymentId, requestReferenceNo: null };
        }
        return {
          kind: 'created',
          walletPaymentId: created.data.walletPaymentId,
          requestReferenceNo: created.requestReferenceNo,
        };
      } catch (error) {
        if (error instanceof CallNotSent)
          throw ApplicationFailure.retryable('create not sent: it could outlive this attempt', 'WalletCallDeferred');
        if (error instanceof VaultError)
          return {
            kind: 'refused',
            code: error.code === 'REAUTH_REQUIRED' ? 'REAUTH_REQUIRED' : 'LINK_NOT_USABLE',
            requestReferenceNo: null,
          };
        // The user's token could not be refreshed just now: nothing was created; try again.
        if (error instanceof TokenRefreshError)
          throw walletRetry(error.walletError, `token refresh: ${error.walletError.code}`);
        if (error instanceof TokenRefreshBusy) throw refreshBusyRetry(error);
        if (!isWalletError(error)) throw error;
        if (error.outcome === 'rejected')
          return { kind: 'refused', code: error.code, requestReferenceNo: error.requestReferenceNo };
        // A lost create answer leaves an unexecuted payment record at the wallet: harmless, it debits nothing.
        throw walletRetry(error);
      }
    },

    async beginPaymentExecute(
      id: string,
      createRequestReferenceNo: string | null,
      fence?: PaymentFence,
    ): Promise<void> {
      if (!(await payments.beginExecute(id, createRequestReferenceNo, fence))) await stopIfOvertaken(id, fence);
    },

    async executePayment(id: string, fence?: PaymentFence): Promise<ExecutePaymentOutcome> {
      const clock = activityClock();
      const payment = await owned(id, fence);
      if (!payment.walletPaymentId)
        throw ApplicationFailure.nonRetryable('payment has no wallet payment id', paymentFailureTypes.corrupt);
      const walletPaymentId = payment.walletPaymentId;
      try {
        const result = await deps.vault.withUserToken(payment.linkId, (token) =>
          wallet.executePayment({
            userAccessToken: token,
            walletPaymentId,
            mayStillSend: ownedAndInTime(id, fence, clock),
          }),
        );
        return { kind: 'succeeded', requestReferenceNo: result.requestReferenceNo };
      } catch (error) {
        if (error instanceof VaultError) {
          return {
            kind: 'failed',
            code: error.code,
            attempt: {
              at: new Date().toISOString(),
              requestReferenceNo: null,
              httpStatus: null,
              code: error.code,
              outcome: 'rejected',
            },
          };
        }
        if (error instanceof CallNotSent) {
          return {
            kind: 'not-sent',
            attempt: {
              at: new Date().toISOString(),
              operation: 'op.payments.execute',
              requestReferenceNo: null,
              httpStatus: null,
              code: 'EXECUTE_DEFERRED',
              outcome: 'not-sent',
            },
          };
        }
        // The token refresh failed before any execute was sent: not an execute
        // attempt, nothing to doubt; sent again later, after the wallet's Retry-After if it gave one.
        if (error instanceof TokenRefreshError) {
          const retryAfterMs = retryDelayOf(error.walletError);
          const attempt = {
            ...attemptOf(error.walletError),
            operation: error.walletError.operation,
            outcome: 'not-sent',
          };
          return { kind: 'not-sent', attempt, ...(retryAfterMs === undefined ? {} : { retryAfterMs }) };
        }
        // The vault's line did not take the refresh: nothing was sent at all.
        if (error instanceof TokenRefreshBusy) {
          const attempt: ExecuteAttempt = {
            at: new Date().toISOString(),
            operation: 'op.tokens',
            requestReferenceNo: null,
            httpStatus: null,
            code: error.code,
            outcome: 'not-sent',
          };
          return { kind: 'not-sent', attempt, retryAfterMs: error.retryAfterMs };
        }
        if (!isWalletError(error)) throw error;
        const attempt = attemptOf(error);
        // Proof of an execute that took effect only as the wallet's 409 (contract section 5): the code in a 5xx's body
        // is no answer of the wallet's, and the outcome stays unknown.
        if (isConflictOf(error, 'PAYMENT_ALREADY_EXECUTED')) return { kind: 'already-executed', attempt };
        // A refusal only as the service gives it (its status and code): another 4xx may follow a debit.
        if (error.outcome === 'rejected' && isPaymentExecuteRefusal(error))
          return { kind: 'failed', code: error.code, attempt };
        if (error.outcome === 'retryable') {
          const retryAfterMs = retryDelayOf(error);
          return { kind: 'not-sent', attempt, ...(retryAfterMs === undefined ? {} : { retryAfterMs }) };
        }
        logger.warn(
          { paymentId: id, code: error.code, outcome: error.outcome, requestReferenceNo: error.requestReferenceNo },
          'payment execute outcome not known',
        );
        return { kind: 'unknown', attempt };
      }
    },

    async parkForReview(
      id: string,
      reason: string,
      attempts: ExecuteAttempt[],
      fence?: PaymentFence,
    ): Promise<PaymentParkOutcome> {
      if (await payments.parkForReview(id, reason, attempts, fence)) return { parked: true };
      const payment = await owned(id, fence);
      if (payment.status === 'NEEDS_REVIEW') return { parked: true };
      if (isFinalPaymentStatus(payment.status))
        return {
          parked: false,
          status: payment.status,
          errorCode: payment.errorCode,
          walletPaymentId: payment.walletPaymentId,
        };
      throw ApplicationFailure.nonRetryable(
        `payment ${id} could not be parked from ${payment.status}`,
        paymentFailureTypes.corrupt,
      );
    },

    // With no fence: ops' word on a payment in review claims it, whichever run holds it.
    async resolvePayment(id: string, input: ResolvePaymentUpdateInput): Promise<{ status: FinalPaymentStatus }> {
      const payment = await payments.resolve(id, input);
      if (!isFinalPaymentStatus(payment.status))
        throw ApplicationFailure.nonRetryable('payment was not resolved', paymentFailureTypes.corrupt);
      return { status: payment.status };
    },

    async finishPayment(
      id: string,
      input: {
        status: FinalPaymentStatus;
        code: string | null;
        requestReferenceNo: string | null;
        detail?: string | null;
      },
      fence?: PaymentFence,
    ): Promise<{ status: FinalPaymentStatus; errorCode: string | null; walletPaymentId: string | null }> {
      const payment = await payments.finish(id, input, fence);
      if (!payment.moved && fence !== undefined && payment.ownerFence !== fence) {
        throw ownerLost(id);
      }
      if (!isFinalPaymentStatus(payment.status))
        throw ApplicationFailure.nonRetryable('payment did not reach a final state', paymentFailureTypes.corrupt);
      return { status: payment.status, errorCode: payment.errorCode, walletPaymentId: payment.walletPaymentId };
    },
  };
}
