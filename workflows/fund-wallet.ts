// fundWallet: one funding, exactly one executed transfer at most.
//   transferId ← stored one, or createTransfer (stored before any execute)
//   progress   ← executeTransfer, once; an unknown outcome → retrieve, never a new intent
//   while PROCESSING or unknown: durable sleep with backoff, then retrieve
//   finish: APPROVED | DECLINED (60xx) | REJECTED (M133, 1096, CODE_INVALID) | FAILED (reason)
// Inputs, results, queries and search attributes carry ids and states only.
import {
  ActivityFailure,
  continueAsNew,
  patched,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  sleep,
  upsertSearchAttributes,
} from '@temporalio/workflow';
import type { FundingActivities, TransferProgress } from '../activities/funding.ts';
import type { FinalFundingStatus, FundingResult, FundingStatus } from '../domain/funding.ts';
import { fundingCancelledSignal, fundingFailureTypes, fundingStatusQuery, type FundWalletInput } from './fund-wallet.contract.ts';
import { kindKey, recipientTypeKey, statusKey } from './search-attribute-keys.ts';

const nonRetryableErrorTypes = [fundingFailureTypes.notFound, fundingFailureTypes.corrupt];

/**
 * The final statuses. Workflows import domain/ as types only (it brings zod and is not part of
 * the deterministic bundle), so the list is spelled here, and the compiler holds it to domain's
 * transition table: a status added to or removed from the final ones fails to type-check here.
 */
const finalStatuses: Record<FinalFundingStatus, true> = { APPROVED: true, DECLINED: true, REJECTED: true, FAILED: true };
const isFinal = (status: FundingStatus): status is FinalFundingStatus => Object.hasOwn(finalStatuses, status);

const databaseRetry = { initialInterval: '500 milliseconds', backoffCoefficient: 2, maximumInterval: '30 seconds', nonRetryableErrorTypes };

type DatabaseSteps = Pick<FundingActivities, 'loadFunding' | 'markCreating' | 'beginExecute' | 'markReconciling' | 'finishFunding'>;

/** The database steps as activities: how fundings started before `localDatabaseSteps` run. */
const activityDatabase = proxyActivities<DatabaseSteps>({ startToCloseTimeout: '15 seconds', retry: databaseRetry });

/**
 * The same steps as local activities: short, idempotent PostgreSQL writes run by the worker inside
 * the workflow task, with no activity task round trip through Temporal (a funding's history goes
 * from about 40 events and 7 workflow tasks to about 25 and 3). The wallet calls stay activities.
 */
const localDatabase = proxyLocalActivities<DatabaseSteps>({ startToCloseTimeout: '15 seconds', localRetryThreshold: '10 seconds', retry: databaseRetry });

/** The patch that moved the database steps to local activities; histories from before it replay the activity path. */
export const localDatabaseStepsPatch = 'fund-wallet-local-database-steps';

/** create: a retried create may leave an unexecuted intent behind (harmless); give up after ~10 minutes. */
const create = proxyActivities<Pick<FundingActivities, 'createTransfer'>>({
  startToCloseTimeout: '25 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '60 seconds', maximumAttempts: 15, nonRetryableErrorTypes },
});

/**
 * execute: retried only when nothing happened (429, refused connection) or the worker died; a
 * repeated execute is refused by the wallet (409), which reads as unknown and leads to retrieve.
 */
const execute = proxyActivities<Pick<FundingActivities, 'executeTransfer'>>({
  startToCloseTimeout: '20 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds', maximumAttempts: 5, nonRetryableErrorTypes },
});

/** retrieve: a read, retried until the wallet answers. */
const retrieve = proxyActivities<Pick<FundingActivities, 'retrieveTransfer'>>({
  startToCloseTimeout: '20 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '60 seconds', nonRetryableErrorTypes },
});

/** Re-executes allowed when retrieve shows the transfer still CREATED after an unknown execute. */
const MAX_EXECUTE_ATTEMPTS = 4;
/** Polls per run before continue-as-new keeps the history short. */
const POLLS_PER_RUN = 200;

function pollDelayMs(poll: number): number {
  return Math.min(1000 * 2 ** Math.min(poll, 10), 60_000);
}

export async function fundWallet(input: FundWalletInput): Promise<FundingResult> {
  const { fundingId } = input;
  const database = patched(localDatabaseStepsPatch) ? localDatabase : activityDatabase;
  let status = 'PENDING' as FundingStatus;
  let cancelNudged = false;
  setHandler(fundingStatusQuery, () => status);
  setHandler(fundingCancelledSignal, () => {
    cancelNudged = true;
  });

  const setStatus = (next: FundingStatus) => {
    status = next;
    upsertSearchAttributes([{ key: statusKey, value: next }]);
  };
  const finish = async (final: FinalFundingStatus, code: string | null, requestReferenceNo: string | null, detail?: string): Promise<FundingResult> => {
    const done = await database.finishFunding(fundingId, { status: final, code, requestReferenceNo, detail: detail ?? code });
    setStatus(done.status);
    return { fundingId, status: done.status, transferId: done.transferId, errorCode: done.errorCode };
  };

  const snapshot = await database.loadFunding(fundingId);
  upsertSearchAttributes([
    { key: kindKey, value: 'FUNDING' },
    { key: recipientTypeKey, value: snapshot.recipientType },
  ]);
  setStatus(snapshot.status);
  if (isFinal(snapshot.status)) {
    return finish(snapshot.status, null, null);
  }

  let transferId = input.reconcile?.transferId ?? snapshot.transferId;
  let createRequestReferenceNo: string | null = null;
  let progress: TransferProgress;
  let polls = input.reconcile?.polls ?? 0;
  const pollsAtRunStart = polls;

  if (input.reconcile || (transferId && (snapshot.status === 'EXECUTING' || snapshot.status === 'RECONCILING'))) {
    // An execute may already have been sent: only retrieve may tell.
    progress = { kind: 'unknown', code: 'RESUMED', requestReferenceNo: null };
  } else {
    if (!transferId) {
      if (!(await database.markCreating(fundingId))) return finish('FAILED', 'CANCELLED', null);
      setStatus('CREATING');
      let created;
      try {
        created = await create.createTransfer(fundingId);
      } catch (error) {
        if (!(error instanceof ActivityFailure)) throw error;
        return finish('FAILED', 'CREATE_FAILED', null, 'the wallet service could not create the transfer; nothing was executed');
      }
      if (created.kind === 'refused') return finish(created.status, created.code, created.requestReferenceNo);
      if (created.kind === 'cancelled') return finish('FAILED', 'CANCELLED', null);
      transferId = created.transferId;
      createRequestReferenceNo = created.requestReferenceNo;
    }
    if (cancelNudged || !(await database.beginExecute(fundingId, createRequestReferenceNo))) return finish('FAILED', 'CANCELLED', null);
    setStatus('EXECUTING');
    try {
      progress = await execute.executeTransfer(fundingId, transferId);
    } catch (error) {
      if (!(error instanceof ActivityFailure)) throw error;
      progress = { kind: 'unknown', code: 'EXECUTE_ACTIVITY_FAILED', requestReferenceNo: null };
    }
  }

  if (!transferId) throw new Error('unreachable: no transferId after create');
  const executedTransferId: string = transferId;
  let executeAttempts = 1;
  for (;;) {
    switch (progress.kind) {
      case 'final':
        return finish(progress.status, progress.declineCode, progress.requestReferenceNo);
      case 'expired':
        return finish('FAILED', 'TRANSFER_EXPIRED', progress.requestReferenceNo);
      case 'not-executed':
        if (executeAttempts >= MAX_EXECUTE_ATTEMPTS) {
          return finish('FAILED', 'EXECUTE_FAILED', progress.requestReferenceNo, 'the transfer was never executed; nothing was moved');
        }
        // Retrieve says nothing executed: executing again is safe, the wallet executes a transfer once.
        executeAttempts += 1;
        try {
          progress = await execute.executeTransfer(fundingId, executedTransferId);
        } catch (error) {
          if (!(error instanceof ActivityFailure)) throw error;
          progress = { kind: 'unknown', code: 'EXECUTE_ACTIVITY_FAILED', requestReferenceNo: null };
        }
        continue;
      case 'unknown':
        if (status !== 'RECONCILING') {
          await database.markReconciling(fundingId, progress.requestReferenceNo, `execute outcome unknown (${progress.code}): retrieving`);
          setStatus('RECONCILING');
        }
        break;
      case 'processing':
        break;
    }
    // Counted per run: a continued run starts with the total so far, and must poll before it continues again.
    if (polls - pollsAtRunStart >= POLLS_PER_RUN) {
      await continueAsNew<typeof fundWallet>({ fundingId, reconcile: { transferId: executedTransferId, polls } });
    }
    // A durable timer: it survives worker restarts.
    await sleep(pollDelayMs(polls));
    polls += 1;
    progress = await retrieve.retrieveTransfer(fundingId, executedTransferId);
  }
}
