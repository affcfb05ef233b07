// The funding workflow's activities: each does one step against the wallet service or the
// database and reports the outcome as data (ids, states, codes: never a token or a code). The
// rules of exactly-once live here and in workflows/fund-wallet.ts:
// - the transferId is stored before any execute, and a stored one is reused, never re-created;
// - an execute whose outcome is unknown is answered by retrieve, never by a new intent;
// - every status change is written with the Request-Reference-No of the wallet call behind it.
import { ApplicationFailure } from '@temporalio/activity';
import { fromThousandths, toThousandths, currencyMinorUnits, type Currency } from '../domain/money.ts';
import { fundingErrorMessage, isFinalFundingStatus, type FinalFundingStatus, type FundingStatus } from '../domain/funding.ts';
import type { Database } from '../lib/database.ts';
import type { Logger } from '../lib/logger.ts';
import type { Metrics } from '../lib/metrics.ts';
import type { TokenCipher } from '../links/token-cipher.ts';
import { isWalletError, type Transfer, type WalletClient, type WalletError } from '../wallet/index.ts';
import { VaultError, type TokenVault } from '../links/token-vault.ts';
import { walletRetry } from './wallet-retry.ts';

export const cashInCodeContext = (fundingId: string) => `funding:${fundingId}:cash_in_code`;

export interface FundingSnapshot {
  fundingId: string;
  status: FundingStatus;
  recipientType: 'CODE' | 'TOKEN';
  transferId: string | null;
}

export type CreateOutcome =
  | { kind: 'created'; transferId: string; requestReferenceNo: string | null }
  | { kind: 'refused'; status: 'REJECTED' | 'FAILED'; code: string; requestReferenceNo: string | null }
  | { kind: 'cancelled' };

/** Where a transfer stands, as the workflow needs it. */
export type TransferProgress =
  | { kind: 'final'; status: 'APPROVED' | 'DECLINED'; declineCode: string | null; requestReferenceNo: string }
  | { kind: 'processing'; requestReferenceNo: string }
  | { kind: 'not-executed'; requestReferenceNo: string }
  | { kind: 'expired'; requestReferenceNo: string | null }
  | { kind: 'unknown'; code: string; requestReferenceNo: string | null };

export interface FinishInput {
  status: FinalFundingStatus;
  code?: string | null;
  requestReferenceNo?: string | null;
  detail?: string | null;
}

export interface FundingActivityDependencies {
  database: Database;
  wallet: Pick<WalletClient, 'createTransfer' | 'executeTransfer' | 'retrieveTransfer'>;
  vault: Pick<TokenVault, 'withUserToken'>;
  cipher: TokenCipher;
  logger: Logger;
  /** Counts fundings by final state and their time to it; absent: not counted. */
  metrics?: Pick<Metrics, 'fundingFinished'>;
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

export function createFundingActivities(deps: FundingActivityDependencies) {
  const { database, wallet, logger } = deps;

  /** Moves a non-final funding to `status`, with its timeline event; a final funding never moves. */
  async function moveTo(fundingId: string, from: FundingStatus[], status: FundingStatus, requestReferenceNo: string | null, detail: string | null) {
    return database.$transaction(async (tx) => {
      const moved = await tx.funding.updateMany({ where: { id: fundingId, status: { in: from } }, data: { status } });
      if (moved.count === 1) await tx.fundingEvent.create({ data: { fundingId, status, requestReferenceNo, detail } });
      return moved.count === 1;
    });
  }

  return {
    async loadFunding(fundingId: string): Promise<FundingSnapshot> {
      const funding = await database.funding.findUnique({
        where: { id: fundingId },
        select: { id: true, status: true, recipientType: true, transferId: true },
      });
      if (!funding) throw ApplicationFailure.nonRetryable(`funding ${fundingId} does not exist`, 'FundingNotFound');
      return { fundingId, status: funding.status, recipientType: funding.recipientType, transferId: funding.transferId };
    },

    /** PENDING → CREATING; false when the funding was cancelled (or is otherwise past creating). */
    async markCreating(fundingId: string): Promise<boolean> {
      if (await moveTo(fundingId, ['PENDING'], 'CREATING', null, 'creating the transfer intent')) return true;
      const funding = await database.funding.findUniqueOrThrow({ where: { id: fundingId }, select: { status: true, cancelRequested: true } });
      return funding.status === 'CREATING' && !funding.cancelRequested;
    },

    /**
     * Creates the transfer intent and stores its transferId before anything can execute it. A
     * stored transferId is returned as is: a retried activity never creates a second intent for
     * a funding that already has one.
     */
    async createTransfer(fundingId: string): Promise<CreateOutcome> {
      const funding = await database.funding.findUniqueOrThrow({ where: { id: fundingId } });
      if (funding.transferId) return { kind: 'created', transferId: funding.transferId, requestReferenceNo: null };
      if (funding.cancelRequested || funding.status !== 'CREATING') return { kind: 'cancelled' };
      const currency = funding.currency as Currency;
      const thousandths = toThousandths(funding.amount.toFixed(3));
      if (thousandths === null) throw ApplicationFailure.nonRetryable('stored amount is not a decimal', 'FundingCorrupt');
      const amount = { currency, value: fromThousandths(thousandths, currencyMinorUnits[currency]) };

      let created: { data: Transfer; requestReferenceNo: string };
      try {
        if (funding.recipientType === 'CODE') {
          if (!funding.cashInCodeEncrypted) throw ApplicationFailure.nonRetryable('funding has no cash-in code', 'FundingCorrupt');
          const code = deps.cipher.decrypt(funding.cashInCodeEncrypted, cashInCodeContext(fundingId));
          created = await wallet.createTransfer({ recipient: { type: 'CODE', value: code }, amount });
        } else {
          if (!funding.linkId) throw ApplicationFailure.nonRetryable('funding has no link', 'FundingCorrupt');
          created = await deps.vault.withUserToken(funding.linkId, (token) =>
            wallet.createTransfer({ recipient: { type: 'TOKEN', value: token }, amount }),
          );
        }
      } catch (error) {
        if (error instanceof VaultError) {
          return { kind: 'refused', status: 'FAILED', code: error.code === 'REAUTH_REQUIRED' ? 'REAUTH_REQUIRED' : 'LINK_NOT_USABLE', requestReferenceNo: null };
        }
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

      const transferId = created.data.transferId;
      const stored = await database.$transaction(async (tx) => {
        const updated = await tx.funding.updateMany({
          where: { id: fundingId, transferId: null, status: 'CREATING', cancelRequested: false },
          data: { transferId },
        });
        if (updated.count === 1) return true;
        // Cancelled meanwhile (or a concurrent attempt stored one first): keep the intent on record, unexecuted.
        await tx.funding.update({ where: { id: fundingId }, data: { abandonedTransferIds: { push: transferId } } });
        return false;
      });
      if (stored) return { kind: 'created', transferId, requestReferenceNo: created.requestReferenceNo };
      const current = await database.funding.findUniqueOrThrow({ where: { id: fundingId }, select: { transferId: true } });
      return current.transferId ? { kind: 'created', transferId: current.transferId, requestReferenceNo: null } : { kind: 'cancelled' };
    },

    /**
     * CREATING → EXECUTING unless cancelled: after this, cancel is refused. The event carries the
     * create call's Request-Reference-No: the created intent is what moved the funding on.
     */
    async beginExecute(fundingId: string, createRequestReferenceNo: string | null): Promise<boolean> {
      const began = await database.$transaction(async (tx) => {
        const moved = await tx.funding.updateMany({
          where: { id: fundingId, status: 'CREATING', cancelRequested: false, transferId: { not: null } },
          data: { status: 'EXECUTING' },
        });
        if (moved.count === 1) {
          const { transferId } = await tx.funding.findUniqueOrThrow({ where: { id: fundingId }, select: { transferId: true } });
          await tx.fundingEvent.create({
            data: { fundingId, status: 'EXECUTING', requestReferenceNo: createRequestReferenceNo, detail: `transfer ${transferId} created; executing` },
          });
        }
        return moved.count === 1;
      });
      if (began) return true;
      const funding = await database.funding.findUniqueOrThrow({ where: { id: fundingId }, select: { status: true } });
      return funding.status === 'EXECUTING' || funding.status === 'RECONCILING';
    },

    /** The one execute of the funding's transfer. An unknown outcome is reported, not retried. */
    async executeTransfer(fundingId: string, transferId: string): Promise<TransferProgress> {
      try {
        const result = await wallet.executeTransfer(transferId);
        return progressOf(result.data, result.requestReferenceNo);
      } catch (error) {
        if (!isWalletError(error)) throw error;
        if (error.code === 'TRANSFER_EXPIRED') return { kind: 'expired', requestReferenceNo: error.requestReferenceNo };
        if (error.outcome === 'retryable') retryLater(error);
        // unknown (time-out, 5xx, 7011, reset, unparsable, 409) or an odd rejection: retrieve decides.
        logger.warn({ fundingId, code: error.code, requestReferenceNo: error.requestReferenceNo }, 'execute outcome unknown: reconciling');
        return { kind: 'unknown', code: error.code, requestReferenceNo: error.requestReferenceNo };
      }
    },

    /** Reads the transfer back; transient failures are retried by Temporal (a read is safe). */
    async retrieveTransfer(fundingId: string, transferId: string): Promise<TransferProgress> {
      try {
        const result = await wallet.retrieveTransfer(transferId);
        return progressOf(result.data, result.requestReferenceNo);
      } catch (error) {
        if (!isWalletError(error)) throw error;
        if (error.outcome !== 'rejected') retryLater(error);
        logger.error({ fundingId, code: error.code, requestReferenceNo: error.requestReferenceNo }, 'retrieve transfer refused');
        return { kind: 'unknown', code: error.code, requestReferenceNo: error.requestReferenceNo };
      }
    },

    /** EXECUTING → RECONCILING: the execute's outcome is unknown and retrieve will settle it. */
    async markReconciling(fundingId: string, requestReferenceNo: string | null, detail: string): Promise<void> {
      await moveTo(fundingId, ['EXECUTING'], 'RECONCILING', requestReferenceNo, detail);
    },

    /** Writes the final state once; a funding already final keeps its state (returned). */
    async finishFunding(fundingId: string, input: FinishInput): Promise<{ status: FinalFundingStatus; errorCode: string | null; transferId: string | null }> {
      const code = input.code ?? null;
      const finished = await database.$transaction(async (tx) => {
        const moved = await tx.funding.updateMany({
          where: { id: fundingId, status: { notIn: ['APPROVED', 'DECLINED', 'REJECTED', 'FAILED'] } },
          data: { status: input.status, errorCode: code, errorMessage: code ? fundingErrorMessage(code) : null },
        });
        if (moved.count === 1) {
          await tx.fundingEvent.create({
            data: { fundingId, status: input.status, requestReferenceNo: input.requestReferenceNo ?? null, detail: input.detail ?? code },
          });
        }
        return moved.count === 1;
      });
      const funding = await database.funding.findUniqueOrThrow({ where: { id: fundingId }, select: { status: true, errorCode: true, transferId: true, createdAt: true } });
      if (!isFinalFundingStatus(funding.status)) throw ApplicationFailure.nonRetryable('funding did not reach a final state', 'FundingCorrupt');
      // Counted by whoever moved it: a retried activity, or a funding cancelled by ops, is not counted twice.
      if (finished) deps.metrics?.fundingFinished(funding.status, funding.createdAt);
      return { status: funding.status, errorCode: funding.errorCode, transferId: funding.transferId };
    },
  };
}

export type FundingActivities = ReturnType<typeof createFundingActivities>;
