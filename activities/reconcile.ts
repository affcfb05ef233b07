// The reconciliation sweep: fundings that are not final long after they started are checked
// against their workflow and the wallet, and repaired when their workflow can no longer finish
// them; payments parked in NEEDS_REVIEW are listed for ops. Every repair is a funding event,
// written by the funding record (fundings/funding-record.ts).
import type { Client } from '@temporalio/client';
import type { FinalFundingStatus } from '../domain/funding.ts';
import type { FundingRecord } from '../fundings/funding-record.ts';
import type { Logger } from '../lib/logger.ts';
import type { Metrics } from '../lib/metrics.ts';
import type { PaymentRecord } from '../payments/payment-record.ts';
import { isWalletError, type WalletClient } from '../wallet/index.ts';
import { startFundWallet } from '../workflows/fund-wallet.contract.ts';
import { walletRetry } from './wallet-retry.ts';

export interface SweepInput {
  /** Fundings younger than this are left to their workflow. */
  olderThanSeconds: number;
  limit?: number;
}

export type RepairAction =
  | 'workflow-running'
  | 'workflow-started'
  | 'finished-from-wallet'
  | 'failed-not-executed'
  | 'left-for-ops';

export interface SweepReport {
  checked: number;
  repaired: number;
  items: Array<{ fundingId: string; status: string; action: RepairAction; detail: string }>;
  paymentsNeedingReview: Array<{ id: string; paymentId: string | null; since: string; reason: string | null }>;
  /** Final fundings whose hold was still open (a crash between the final state and its settle), now settled. */
  holdsSettled?: Array<{ fundingId: string; status: string; action: 'posted' | 'released' | 'none' }>;
}

export interface ReconcileDependencies {
  /** Finishes the fundings it repairs, counting them by final state (fundings/funding-record.ts). */
  fundings: FundingRecord;
  payments: PaymentRecord;
  wallet: Pick<WalletClient, 'retrieveTransfer'>;
  temporal: Client;
  taskQueue: string;
  logger: Logger;
  /** Counts repairs; absent: not counted. */
  metrics?: Pick<Metrics, 'reconcileRepair'>;
}

export function createReconcileActivities(deps: ReconcileDependencies) {
  const { fundings, logger } = deps;

  async function workflowState(workflowId: string): Promise<'running' | 'closed' | 'missing'> {
    try {
      const description = await deps.temporal.workflow.getHandle(workflowId).describe();
      return description.status.name === 'RUNNING' ? 'running' : 'closed';
    } catch (error) {
      if ((error as Error).name === 'WorkflowNotFoundError') return 'missing';
      throw error;
    }
  }

  /** Through the record, which counts the funding as finished only if this sweep moved it. */
  const finish = (funding: { id: string }, status: FinalFundingStatus, code: string | null, requestReferenceNo: string | null, detail: string) =>
    fundings.finish(funding.id, { status, code, requestReferenceNo, detail });

  return {
    async sweepStuckFundings(input: SweepInput): Promise<SweepReport> {
      const before = new Date(Date.now() - input.olderThanSeconds * 1000);
      const stuck = await fundings.listUnfinished({ createdBefore: before, limit: input.limit ?? 200 });
      const report: SweepReport = { checked: stuck.length, repaired: 0, items: [], paymentsNeedingReview: [] };
      for (const funding of stuck) {
        const state = await workflowState(funding.workflowId);
        const note = (action: RepairAction, detail: string, repaired: boolean) => {
          report.items.push({ fundingId: funding.id, status: funding.status, action, detail });
          if (repaired) {
            report.repaired += 1;
            deps.metrics?.reconcileRepair(action);
          }
        };
        if (state === 'running') {
          note('workflow-running', 'its workflow is still working on it', false);
          continue;
        }
        if (state === 'missing' && !funding.transferId && (funding.status === 'PENDING' || funding.status === 'CREATING')) {
          // Stored, but the API died before starting its workflow: start it now.
          await startFundWallet(deps.temporal, {
            workflowId: funding.workflowId,
            taskQueue: deps.taskQueue,
            fundingId: funding.id,
            status: funding.status,
            recipientType: funding.recipientType,
            reusePolicy: 'temporal-default',
          });
          await fundings.recordEvent(funding.id, funding.status, 'reconciliation: workflow started');
          note('workflow-started', 'the funding had no workflow', true);
          continue;
        }
        if (!funding.transferId) {
          // No transfer was ever stored, so nothing can have been executed for this funding.
          await finish(funding, 'FAILED', 'CREATE_FAILED', null, 'reconciliation: workflow ended without a transfer; nothing executed');
          note('failed-not-executed', 'no transfer was stored', true);
          continue;
        }
        try {
          const { data, requestReferenceNo } = await deps.wallet.retrieveTransfer(funding.transferId);
          if (data.status === 'APPROVED' || data.status === 'DECLINED') {
            await finish(funding, data.status, data.status === 'DECLINED' ? (data.decline?.code ?? 'DECLINED') : null, requestReferenceNo, 'reconciliation: state read back from the wallet');
            note('finished-from-wallet', `the wallet says ${data.status}`, true);
          } else if (data.status === 'CREATED' || data.status === 'EXPIRED') {
            // Its workflow is gone and the transfer was never executed: nothing moved.
            await finish(funding, 'FAILED', data.status === 'EXPIRED' ? 'TRANSFER_EXPIRED' : 'EXECUTE_FAILED', requestReferenceNo, 'reconciliation: transfer never executed');
            note('failed-not-executed', `the wallet says ${data.status}`, true);
          } else {
            note('left-for-ops', 'the wallet says PROCESSING; checked again next sweep', false);
          }
        } catch (error) {
          if (!isWalletError(error)) throw error;
          if (error.outcome !== 'rejected') throw walletRetry(error, `retrieve ${error.code}`);
          note('left-for-ops', `retrieve refused: ${error.code}`, false);
        }
      }
      // The ledger's side: a final funding's hold is settled in the same transaction as its final
      // state, so an open one is a crash or a hand-made repair; settle it by the funding's status.
      report.holdsSettled = [];
      for (const open of await fundings.listFinalWithOpenHold(input.limit ?? 200)) {
        const action = await fundings.settleFinalHold(open.id);
        report.holdsSettled.push({ fundingId: open.id, status: open.status, action });
        if (action !== 'none') {
          report.repaired += 1;
          deps.metrics?.reconcileRepair(action === 'posted' ? 'hold-posted' : 'hold-released');
        }
      }
      const review = await deps.payments.listInReview(200);
      report.paymentsNeedingReview = review.map((payment) => ({
        id: payment.id,
        paymentId: payment.walletPaymentId,
        since: payment.updatedAt.toISOString(),
        reason: payment.reviewReason,
      }));
      if (report.repaired > 0 || report.paymentsNeedingReview.length > 0) {
        logger.warn({ checked: report.checked, repaired: report.repaired, needsReview: report.paymentsNeedingReview.length }, 'reconciliation sweep');
      }
      return report;
    },
  };
}

export type ReconcileActivities = ReturnType<typeof createReconcileActivities>;
