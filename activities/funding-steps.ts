// The step path's activities: each one step of fundWallet's step path (workflows/fund-wallet.ts),
// against the wallet service or the database, under the run's claim (its fence; absent only in the
// histories of runs from before fencing, which the previous release's gates still replay: then no
// claim is checked). Each reports its outcome as data (ids, states, codes: never a token or a
// code). Their signatures and results are the workflow's contract's (FundWalletActivities).
import { ApplicationFailure } from '@temporalio/activity';
import { isFinalFundingStatus, type FinalFundingStatus } from '../domain/funding.ts';
import type { WalletCallEvidence } from '../domain/review.ts';
import type { Fence } from '../fundings/funding-record.ts';
import {
  fundingFailureTypes,
  type CreateOutcome,
  type FinishInput,
  type FundingSnapshot,
  type FundWalletActivities,
  type ParkOutcome,
  type ResolveFundingUpdateInput,
  type TransferProgress,
} from '../workflows/fund-wallet.contract.ts';
import { activityClock, callFitsBefore } from './activity-clock.ts';
import {
  beforeCall,
  CallWouldOutlive,
  deferred,
  finishOwned,
  owned,
  park,
  readBack,
  retryLater,
  sendExecute,
  stopIfOvertaken,
  type FundingContext,
} from './funding-context.ts';
import { createAndStore } from './funding-intent.ts';

export type FundingStepActivities = Omit<FundWalletActivities, 'fundInOnePass'>;

export function createFundingSteps(ctx: FundingContext): FundingStepActivities {
  const { fundings } = ctx;
  return {
    async loadFunding(fundingId: string): Promise<FundingSnapshot> {
      const claimed = await fundings.claim(fundingId);
      if (!claimed)
        throw ApplicationFailure.nonRetryable(`funding ${fundingId} does not exist`, fundingFailureTypes.notFound);
      return {
        fundingId,
        status: claimed.status,
        recipientType: claimed.recipientType,
        transferId: claimed.transferId,
        fence: claimed.fence,
      };
    },

    async markCreating(fundingId: string, fence?: Fence): Promise<boolean> {
      if (await fundings.move(fundingId, 'CREATING', { detail: 'creating the transfer intent' }, fence)) return true;
      const funding = await owned(ctx, fundingId, fence);
      return funding.status === 'CREATING' && !funding.cancelRequested;
    },

    async createTransfer(fundingId: string, fence?: Fence): Promise<CreateOutcome> {
      try {
        return await createAndStore(ctx, fundingId, fence, activityClock());
      } catch (error) {
        if (error instanceof CallWouldOutlive) throw deferred('create');
        throw error;
      }
    },

    async beginExecute(fundingId: string, createRequestReferenceNo: string | null, fence?: Fence): Promise<boolean> {
      if (await fundings.beginExecute(fundingId, createRequestReferenceNo, fence)) return true;
      const funding = await owned(ctx, fundingId, fence);
      return funding.status === 'EXECUTING' || funding.status === 'RECONCILING';
    },

    async executeTransfer(fundingId: string, transferId: string, fence?: Fence): Promise<TransferProgress> {
      const clock = activityClock();
      try {
        if (clock.attempt > 1) {
          await beforeCall(ctx, fundingId, fence, clock);
          const seen = await readBack(ctx, fundingId, transferId);
          // A read that shows nothing (refused, or off the contract) after an attempt that may have executed: the
          // execute's outcome is unknown, and the workflow reconciles it (RECONCILING, the evidence kept).
          if (seen.kind === 'refused')
            return {
              kind: 'unknown',
              code: `RETRIEVE_BEFORE_EXECUTE_${seen.code}`.slice(0, 64),
              requestReferenceNo: seen.requestReferenceNo,
              httpStatus: seen.httpStatus,
            };
          if (seen.kind !== 'not-executed') return seen;
        }
        // The claim read from the database right before the execute.
        await beforeCall(ctx, fundingId, fence, clock);
      } catch (error) {
        if (error instanceof CallWouldOutlive) throw deferred('execute');
        throw error;
      }
      const sent = await sendExecute(ctx, fundingId, transferId);
      if (sent.kind === 'retry') retryLater(sent.error);
      return sent;
    },

    async retrieveTransfer(fundingId: string, transferId: string): Promise<TransferProgress> {
      if (!callFitsBefore(activityClock(), ctx.walletTimeoutMs)) throw deferred('retrieve');
      return readBack(ctx, fundingId, transferId);
    },

    async markReconciling(
      fundingId: string,
      requestReferenceNo: string | null,
      detail: string,
      fence?: Fence,
    ): Promise<void> {
      if (await fundings.move(fundingId, 'RECONCILING', { requestReferenceNo, detail }, fence)) return;
      await stopIfOvertaken(ctx, fundingId, fence);
    },

    async parkFundingForReview(
      fundingId: string,
      reason: string,
      evidence: WalletCallEvidence[],
      fence?: Fence,
    ): Promise<ParkOutcome> {
      return park(ctx, fundingId, reason, evidence, fence);
    },

    // With no fence: ops' (or the wallet's) word on a funding in review claims it, whichever run holds it.
    async resolveFunding(
      fundingId: string,
      input: ResolveFundingUpdateInput,
    ): Promise<{ status: FinalFundingStatus; errorCode: string | null }> {
      const funding = await fundings.resolve(fundingId, input);
      if (!isFinalFundingStatus(funding.status))
        throw ApplicationFailure.nonRetryable('funding was not resolved', fundingFailureTypes.corrupt);
      return { status: funding.status, errorCode: funding.errorCode };
    },

    async finishFunding(
      fundingId: string,
      input: FinishInput,
      fence?: Fence,
    ): Promise<{ status: FinalFundingStatus; errorCode: string | null; transferId: string | null }> {
      const funding = await finishOwned(ctx, fundingId, input, fence);
      if (!isFinalFundingStatus(funding.status))
        throw ApplicationFailure.nonRetryable('funding did not reach a final state', fundingFailureTypes.corrupt);
      return { status: funding.status, errorCode: funding.errorCode, transferId: funding.transferId };
    },
  };
}
