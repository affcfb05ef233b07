// The payment workflow's activities. Create debits nothing; execute debits once per wallet payment
// id. There is no retrieve for payments, so an execute whose outcome stays unknown is evidence for
// a person (NEEDS_REVIEW), never a guess. Results carry ids, states and codes only.
import { ApplicationFailure } from '@temporalio/activity';
import type { Prisma } from '../generated/prisma/client.ts';
import { currencyMinorUnits, fromThousandths, toThousandths, type Currency } from '../domain/money.ts';
import { paymentErrorMessage, isFinalPaymentStatus, type ExecuteAttempt, type FinalPaymentStatus, type PaymentStatus } from '../domain/payment.ts';
import type { Database } from '../lib/database.ts';
import type { Logger } from '../lib/logger.ts';
import type { Metrics } from '../lib/metrics.ts';
import { isWalletError, type WalletClient } from '../wallet/index.ts';
import { VaultError, type TokenVault } from '../links/token-vault.ts';
import { retryDelayOf, walletRetry } from './wallet-retry.ts';

export interface PaymentSnapshot {
  id: string;
  status: PaymentStatus;
  walletPaymentId: string | null;
}

export type CreatePaymentOutcome =
  | { kind: 'created'; walletPaymentId: string; requestReferenceNo: string | null }
  | { kind: 'refused'; code: string; requestReferenceNo: string | null };

export type ExecutePaymentOutcome =
  | { kind: 'succeeded'; requestReferenceNo: string }
  | { kind: 'failed'; code: string; attempt: ExecuteAttempt }
  | { kind: 'already-executed'; attempt: ExecuteAttempt }
  | { kind: 'unknown'; attempt: ExecuteAttempt }
  /**
   * The wallet certainly did not process it (429, connection refused): safe to send again, after
   * `retryAfterMs` when the wallet said so (Retry-After, bounded).
   */
  | { kind: 'not-sent'; attempt: ExecuteAttempt; retryAfterMs?: number };

export interface ResolveInput {
  outcome: 'SUCCEEDED' | 'FAILED';
  note: string;
  resolvedBy: string;
}

export interface PaymentActivityDependencies {
  database: Database;
  wallet: Pick<WalletClient, 'createPayment' | 'executePayment'>;
  vault: Pick<TokenVault, 'withUserToken'>;
  logger: Logger;
  /** Counts payments by final state and their time to it; absent: not counted. */
  metrics?: Pick<Metrics, 'paymentFinished'>;
}

export function createPaymentActivities(deps: PaymentActivityDependencies) {
  const { database, wallet, logger } = deps;

  async function moveTo(id: string, from: PaymentStatus[], status: PaymentStatus, requestReferenceNo: string | null, detail: string | null, data: Prisma.PaymentUpdateManyMutationInput = {}) {
    return database.$transaction(async (tx) => {
      const moved = await tx.payment.updateMany({ where: { id, status: { in: from } }, data: { status, ...data } });
      if (moved.count === 1) await tx.paymentEvent.create({ data: { paymentId: id, status, requestReferenceNo, detail } });
      return moved.count === 1;
    });
  }

  const attemptOf = (error: { requestReferenceNo: string; httpStatus: number | null; code: string; outcome: string }): ExecuteAttempt => ({
    at: new Date().toISOString(),
    requestReferenceNo: error.requestReferenceNo,
    httpStatus: error.httpStatus,
    code: error.code,
    outcome: error.outcome,
  });

  return {
    async loadPayment(id: string): Promise<PaymentSnapshot> {
      const payment = await database.payment.findUnique({ where: { id }, select: { status: true, walletPaymentId: true } });
      if (!payment) throw ApplicationFailure.nonRetryable(`payment ${id} does not exist`, 'PaymentNotFound');
      return { id, status: payment.status, walletPaymentId: payment.walletPaymentId };
    },

    async markPaymentCreating(id: string): Promise<void> {
      await moveTo(id, ['PENDING'], 'CREATING', null, 'creating the payment');
    },

    /** Creates the wallet payment (no debit) and stores its id and fee before any execute. */
    async createPayment(id: string): Promise<CreatePaymentOutcome> {
      const payment = await database.payment.findUniqueOrThrow({ where: { id } });
      if (payment.walletPaymentId) return { kind: 'created', walletPaymentId: payment.walletPaymentId, requestReferenceNo: null };
      const currency = payment.currency as Currency;
      const amount = { currency, value: fromThousandths(toThousandths(payment.amount.toFixed(3)) ?? 0n, currencyMinorUnits[currency]) };
      try {
        const created = await deps.vault.withUserToken(payment.linkId, (token) => wallet.createPayment({ userAccessToken: token, amount }));
        const stored = await database.payment.updateMany({
          where: { id, walletPaymentId: null },
          data: {
            walletPaymentId: created.data.paymentId,
            feeCurrency: created.data.fee.currency,
            // A decimal string: Prisma stores it exactly (activities/ import only types from generated/).
            fee: created.data.fee.value,
          },
        });
        if (stored.count === 0) {
          // A concurrent attempt stored its payment first: that one is the payment; this one is never executed.
          const current = await database.payment.findUniqueOrThrow({ where: { id }, select: { walletPaymentId: true } });
          return { kind: 'created', walletPaymentId: current.walletPaymentId!, requestReferenceNo: null };
        }
        return { kind: 'created', walletPaymentId: created.data.paymentId, requestReferenceNo: created.requestReferenceNo };
      } catch (error) {
        if (error instanceof VaultError) return { kind: 'refused', code: error.code === 'REAUTH_REQUIRED' ? 'REAUTH_REQUIRED' : 'LINK_NOT_USABLE', requestReferenceNo: null };
        if (!isWalletError(error)) throw error;
        if (error.outcome === 'rejected') return { kind: 'refused', code: error.code, requestReferenceNo: error.requestReferenceNo };
        // A lost create answer leaves an unexecuted payment record at the wallet: harmless, it debits nothing.
        throw walletRetry(error);
      }
    },

    async beginPaymentExecute(id: string, createRequestReferenceNo: string | null): Promise<void> {
      const payment = await database.payment.findUniqueOrThrow({ where: { id }, select: { walletPaymentId: true } });
      await moveTo(id, ['PENDING', 'CREATING'], 'EXECUTING', createRequestReferenceNo, `payment ${payment.walletPaymentId} created; executing`);
    },

    /** One execute attempt; the workflow decides what an unknown or repeated one means. */
    async executePayment(id: string): Promise<ExecutePaymentOutcome> {
      const payment = await database.payment.findUniqueOrThrow({ where: { id } });
      if (!payment.walletPaymentId) throw ApplicationFailure.nonRetryable('payment has no wallet payment id', 'PaymentCorrupt');
      const walletPaymentId = payment.walletPaymentId;
      try {
        const result = await deps.vault.withUserToken(payment.linkId, (token) => wallet.executePayment({ userAccessToken: token, paymentId: walletPaymentId }));
        return { kind: 'succeeded', requestReferenceNo: result.requestReferenceNo };
      } catch (error) {
        if (error instanceof VaultError) {
          return { kind: 'failed', code: error.code, attempt: { at: new Date().toISOString(), requestReferenceNo: null, httpStatus: null, code: error.code, outcome: 'rejected' } };
        }
        if (!isWalletError(error)) throw error;
        const attempt = attemptOf(error);
        if (error.code === 'PAYMENT_ALREADY_EXECUTED') return { kind: 'already-executed', attempt };
        if (error.outcome === 'rejected') return { kind: 'failed', code: error.code, attempt };
        if (error.outcome === 'retryable') {
          const retryAfterMs = retryDelayOf(error);
          return { kind: 'not-sent', attempt, ...(retryAfterMs === undefined ? {} : { retryAfterMs }) };
        }
        logger.warn({ paymentId: id, code: error.code, outcome: error.outcome, requestReferenceNo: error.requestReferenceNo }, 'payment execute outcome not known');
        return { kind: 'unknown', attempt };
      }
    },

    /** NEEDS_REVIEW with the evidence: every execute attempt and why no state could be known. */
    async parkForReview(id: string, reason: string, attempts: ExecuteAttempt[]): Promise<void> {
      const last = attempts[attempts.length - 1];
      await moveTo(id, ['EXECUTING'], 'NEEDS_REVIEW', last?.requestReferenceNo ?? null, reason.slice(0, 500), {
        reviewReason: reason.slice(0, 500),
        reviewEvidence: attempts as unknown as Prisma.InputJsonValue,
      });
    },

    /** Settles a payment in NEEDS_REVIEW, with who and why. */
    async resolvePayment(id: string, input: ResolveInput): Promise<{ status: FinalPaymentStatus }> {
      const status: FinalPaymentStatus = input.outcome;
      const resolved = await moveTo(id, ['NEEDS_REVIEW'], status, null, `resolved ${input.outcome} by ${input.resolvedBy}: ${input.note}`.slice(0, 500), {
        resolvedOutcome: input.outcome,
        resolvedBy: input.resolvedBy.slice(0, 128),
        resolvedNote: input.note.slice(0, 500),
        resolvedAt: new Date(),
        ...(status === 'FAILED' ? { errorCode: 'RESOLVED_FAILED', errorMessage: paymentErrorMessage('RESOLVED_FAILED') } : {}),
      });
      const payment = await database.payment.findUniqueOrThrow({ where: { id }, select: { status: true, createdAt: true } });
      if (!isFinalPaymentStatus(payment.status)) throw ApplicationFailure.nonRetryable('payment was not resolved', 'PaymentCorrupt');
      if (resolved) deps.metrics?.paymentFinished(payment.status, payment.createdAt);
      return { status: payment.status };
    },

    async finishPayment(
      id: string,
      input: { status: FinalPaymentStatus; code: string | null; requestReferenceNo: string | null },
    ): Promise<{ status: FinalPaymentStatus; errorCode: string | null; walletPaymentId: string | null }> {
      const finished = await moveTo(id, ['PENDING', 'CREATING', 'EXECUTING'], input.status, input.requestReferenceNo, input.code, {
        errorCode: input.code,
        errorMessage: input.code ? paymentErrorMessage(input.code) : null,
      });
      const payment = await database.payment.findUniqueOrThrow({ where: { id }, select: { status: true, errorCode: true, walletPaymentId: true, createdAt: true } });
      if (!isFinalPaymentStatus(payment.status)) throw ApplicationFailure.nonRetryable('payment did not reach a final state', 'PaymentCorrupt');
      if (finished) deps.metrics?.paymentFinished(payment.status, payment.createdAt);
      return { status: payment.status, errorCode: payment.errorCode, walletPaymentId: payment.walletPaymentId };
    },
  };
}

export type PaymentActivities = ReturnType<typeof createPaymentActivities>;
