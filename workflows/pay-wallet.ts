// payWallet: a merchant payment from a user's wallet, executed at most once.
//   walletPaymentId ← stored one, or createPayment (no debit; stored before any execute)
//   execute: success → SUCCEEDED; INSUFFICIENT_BALANCE (or another refusal) → FAILED;
//            unknown → retried (the wallet executes a payment id once) with backoff;
//            not sent (429, connection refused, a failed token refresh) → sent again, without
//            using up an attempt; PAYMENT_ALREADY_EXECUTED (our own id) → SUCCEEDED;
//            still unknown after the retries, or refused after an unknown → NEEDS_REVIEW
//   NEEDS_REVIEW waits for the `resolve` update (ops, with who and why).
// There is no retrieve for payments: an unknown outcome is never turned into a guessed state.
import {
  ActivityFailure,
  condition,
  patched,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  setWorkflowOptions,
  sleep,
  upsertSearchAttributes,
} from '@temporalio/workflow';
import type { ExecuteAttempt, FinalPaymentStatus, PaymentResult, PaymentStatus } from '../domain/payment.ts';
import {
  paymentFailureTypes,
  paymentStatusQuery,
  payWalletActivityTimeouts,
  resolvePaymentUpdate,
  type PayWalletActivities,
  type PayWalletInput,
} from './pay-wallet.contract.ts';
import { kindKey, statusKey } from './search-attribute-keys.ts';
import { failedWith } from './activity-failure.ts';

const nonRetryableErrorTypes = [
  paymentFailureTypes.notFound,
  paymentFailureTypes.corrupt,
  paymentFailureTypes.ownerLost,
];

/**
 * The final statuses. Workflows import domain/ as types only (it brings zod and is not part of
 * the deterministic bundle), so the list is spelled here, and the compiler holds it to domain's
 * transition table: a status added to or removed from the final ones fails to type-check here.
 */
const finalStatuses: Record<FinalPaymentStatus, true> = { SUCCEEDED: true, FAILED: true };
const isFinal = (status: PaymentStatus): status is FinalPaymentStatus => Object.hasOwn(finalStatuses, status);

const databaseRetry = {
  initialInterval: '500 milliseconds',
  backoffCoefficient: 2,
  maximumInterval: '30 seconds',
  nonRetryableErrorTypes,
};

type DatabaseSteps = Pick<
  PayWalletActivities,
  'loadPayment' | 'markPaymentCreating' | 'beginPaymentExecute' | 'finishPayment' | 'parkForReview' | 'resolvePayment'
>;

/** The database steps as activities: how payments started before the patch below run. */
const activityDatabase = proxyActivities<DatabaseSteps>({ startToCloseTimeout: '15 seconds', retry: databaseRetry });

/**
 * The same steps as local activities (as in fundWallet): short, idempotent PostgreSQL writes
 * guarded by the payment's status, run inside the workflow task with no activity task round trip.
 * The wallet calls (create, execute) stay activities, so what decides exactly-once is unchanged.
 */
const localDatabase = proxyLocalActivities<DatabaseSteps>({
  startToCloseTimeout: '15 seconds',
  localRetryThreshold: '10 seconds',
  retry: databaseRetry,
});

/** The patch that moved the database steps to local activities; histories from before it replay the activity path. */
export const localDatabaseStepsPatch = 'pay-wallet-local-database-steps';

const create = proxyActivities<Pick<PayWalletActivities, 'createPayment'>>({
  startToCloseTimeout: payWalletActivityTimeouts.createMs,
  retry: {
    initialInterval: '1 second',
    backoffCoefficient: 2,
    maximumInterval: '60 seconds',
    maximumAttempts: 10,
    nonRetryableErrorTypes,
  },
});

/** One attempt per activity: the workflow itself decides whether to execute again. */
const execute = proxyActivities<Pick<PayWalletActivities, 'executePayment'>>({
  startToCloseTimeout: payWalletActivityTimeouts.executeMs,
  retry: { maximumAttempts: 1, nonRetryableErrorTypes },
});

/** The patch after which PAYMENT_ALREADY_EXECUTED for our own payment id ends it SUCCEEDED, not in review. */
export const alreadyExecutedSucceededPatch = 'pay-wallet-already-executed-succeeded';
/** The patch after which a run resumed in EXECUTING counts the earlier run's execute as unknown. */
export const resumedCountsUnknownPatch = 'pay-wallet-resumed-counts-unknown';

/** Execute attempts before an outcome that stays unknown goes to review. */
export const MAX_EXECUTE_ATTEMPTS = 4;
/** Execute calls the wallet certainly did not process (429, refused) before the payment gives up. */
export const MAX_NOT_SENT = 10;

/** Times a run takes the payment over again after another run's claim overtook it (as fundWallet). */
const MAX_TAKEOVERS = 5;

/**
 * Whether an activity (or a local activity, which may arrive unwrapped) failed because another run claimed the payment.
 */
const overtaken = (error: unknown): boolean => failedWith(error, paymentFailureTypes.ownerLost);

// Pinned (docs/changing-workflows.md): a run started on a versioned build finishes on it, so a
// change to its commands is a new build. The patched() gates in this file stay for the runs the
// previous release started before Worker Versioning: unversioned, they move to the current build at
// their next workflow task and replay here (test/replay/histories/archive/release-360981c). They go
// once `walletflow deploy status` shows no unversioned run open (docs/changing-workflows.md,
// "Retiring the previous release's gates").
setWorkflowOptions({ versioningBehavior: 'PINNED' }, payWallet);

export async function payWallet(input: PayWalletInput): Promise<PaymentResult> {
  const id = input.paymentId;
  const database = patched(localDatabaseStepsPatch) ? localDatabase : activityDatabase;
  let status = 'PENDING' as PaymentStatus;
  /**
   * This run's claim on the payment (loadPayment): every database step and wallet call carries it,
   * so an overtaken run writes nothing.
   */
  let fence: number | undefined = undefined;
  let resolved: { status: FinalPaymentStatus } | undefined;
  let resolving = false;
  setHandler(paymentStatusQuery, () => status);
  setHandler(
    resolvePaymentUpdate,
    async (resolution) => {
      // Set before the first await: a second resolve admitted meanwhile is refused by the validator.
      resolving = true;
      try {
        // With no fence: ops' word on a payment in review claims it as it moves it, whichever run holds it.
        const result = await database.resolvePayment(id, resolution);
        resolved = result;
        return result;
      } finally {
        // A resolve that failed does not block the next one.
        if (resolved === undefined) resolving = false;
      }
    },
    {
      validator: (resolution) => {
        if (status !== 'NEEDS_REVIEW') throw new Error(`payment is ${status}, not NEEDS_REVIEW`);
        if (resolving) throw new Error('the payment is already being resolved');
        if (resolution.outcome !== 'SUCCEEDED' && resolution.outcome !== 'FAILED')
          throw new Error('outcome must be SUCCEEDED or FAILED');
        if (!resolution.note || !resolution.resolvedBy)
          throw new Error('a resolution needs a note and who resolved it');
      },
    },
  );
  const setStatus = (next: PaymentStatus) => {
    status = next;
    upsertSearchAttributes([{ key: statusKey, value: next }]);
  };
  const finish = async (
    final: FinalPaymentStatus,
    code: string | null,
    requestReferenceNo: string | null,
    detail?: string,
  ): Promise<PaymentResult> => {
    const done = await database.finishPayment(
      id,
      { status: final, code, requestReferenceNo, ...(detail ? { detail } : {}) },
      fence,
    );
    setStatus(done.status);
    return { id, status: done.status, walletPaymentId: done.walletPaymentId, errorCode: done.errorCode };
  };
  const review = async (
    reason: string,
    attempts: ExecuteAttempt[],
    walletPaymentId: string | null,
  ): Promise<PaymentResult> => {
    const parked = await database.parkForReview(id, reason, attempts, fence);
    // Already final (another writer finished it): the run ends with that state. Histories from
    // before fencing answered nothing: parked.
    if (parked && !parked.parked) {
      setStatus(parked.status);
      return { id, status: parked.status, walletPaymentId: parked.walletPaymentId, errorCode: parked.errorCode };
    }
    setStatus('NEEDS_REVIEW');
    await condition(() => resolved !== undefined);
    setStatus(resolved!.status);
    return {
      id,
      status: resolved!.status,
      walletPaymentId,
      errorCode: resolved!.status === 'FAILED' ? 'RESOLVED_FAILED' : null,
    };
  };

  /** Every execute attempt behind a doubt, kept across takeovers (a re-claim keeps the evidence). */
  const attempts: ExecuteAttempt[] = [];
  let notSent = 0;
  let unknownExecutes = 0;
  /** One run's way through the payment, from its claim (loadPayment) on. */
  const run = async (): Promise<PaymentResult> => {
    const snapshot = await database.loadPayment(id);
    fence = snapshot.fence;
    upsertSearchAttributes([{ key: kindKey, value: 'PAYMENT' }]);
    setStatus(snapshot.status);
    if (isFinal(snapshot.status)) {
      return { id, status: snapshot.status, walletPaymentId: snapshot.walletPaymentId, errorCode: null };
    }
    if (snapshot.status === 'NEEDS_REVIEW') {
      await condition(() => resolved !== undefined);
      setStatus(resolved!.status);
      return {
        id,
        status: resolved!.status,
        walletPaymentId: snapshot.walletPaymentId,
        errorCode: resolved!.status === 'FAILED' ? 'RESOLVED_FAILED' : null,
      };
    }

    let walletPaymentId = snapshot.walletPaymentId;
    let createRequestReferenceNo: string | null = null;
    if (!walletPaymentId) {
      await database.markPaymentCreating(id, fence);
      setStatus('CREATING');
      let created;
      try {
        created = await create.createPayment(id, fence);
      } catch (error) {
        if (!(error instanceof ActivityFailure) || overtaken(error)) throw error;
        return finish('FAILED', 'CREATE_FAILED', null);
      }
      if (created.kind === 'refused') return finish('FAILED', created.code, created.requestReferenceNo);
      if (created.kind === 'mismatch') {
        // Nothing is executed; a person compares the wallet's payment with the request.
        const evidence: ExecuteAttempt = {
          at: new Date().toISOString(),
          operation: 'op.payments.create',
          requestReferenceNo: created.requestReferenceNo,
          httpStatus: 200,
          code: 'ANSWER_MISMATCH',
          outcome: 'mismatch',
        };
        return review(
          `the wallet's create answer does not match the request (${created.detail}); payment ${created.walletPaymentId} was not executed`,
          [evidence],
          null,
        );
      }
      walletPaymentId = created.walletPaymentId;
      createRequestReferenceNo = created.requestReferenceNo;
    }
    // Resumed in EXECUTING: an execute may already have been sent by an earlier run, so its outcome
    // counts as unknown: a later refusal may hide that execution.
    const resumedInExecuting = snapshot.status === 'EXECUTING';
    if (!resumedInExecuting) await database.beginPaymentExecute(id, createRequestReferenceNo, fence);
    setStatus('EXECUTING');

    if (resumedInExecuting && patched(resumedCountsUnknownPatch)) {
      attempts.push({
        at: new Date().toISOString(),
        operation: 'op.payments.execute',
        requestReferenceNo: null,
        httpStatus: null,
        code: 'RESUMED',
        outcome: 'unknown',
      });
    }
    // Counted across takeovers: the evidence and the limits are the payment's, not the run's.
    for (let attempt = 1 + unknownExecutes; attempt <= MAX_EXECUTE_ATTEMPTS;) {
      let outcome;
      try {
        outcome = await execute.executePayment(id, fence);
      } catch (error) {
        if (!(error instanceof ActivityFailure) || overtaken(error)) throw error;
        // The activity died (worker lost, time-out): the execute may or may not have been sent.
        outcome = {
          kind: 'unknown' as const,
          attempt: {
            at: new Date().toISOString(),
            requestReferenceNo: null,
            httpStatus: null,
            code: 'EXECUTE_ACTIVITY_FAILED',
            outcome: 'unknown',
          },
        };
      }
      switch (outcome.kind) {
        case 'succeeded':
          return finish('SUCCEEDED', null, outcome.requestReferenceNo);
        case 'failed':
          // A refusal after an unknown attempt may hide an execution: only INSUFFICIENT_BALANCE is
          // repeated faithfully by the wallet after a failed execute (contract section 5).
          if (attempts.length === 0 || outcome.code === 'INSUFFICIENT_BALANCE') {
            return finish('FAILED', outcome.code, outcome.attempt.requestReferenceNo);
          }
          attempts.push(outcome.attempt);
          return review(
            `execute refused (${outcome.code}) after an attempt with an unknown outcome`,
            attempts,
            walletPaymentId,
          );
        case 'already-executed':
          if (patched(alreadyExecutedSucceededPatch)) {
            // Only walletflow executes this payment id, and the wallet answers 409 only after an
            // execute that succeeded (contract section 5): ours executed. Proof, not a guess.
            const earlier = attempts.map((previous) => previous.requestReferenceNo ?? previous.code).join(', ');
            return finish(
              'SUCCEEDED',
              null,
              outcome.attempt.requestReferenceNo,
              `the wallet answered PAYMENT_ALREADY_EXECUTED after our execute${attempts.length > 0 ? ` (${earlier})` : ''} whose answer was lost: executed once`,
            );
          }
          attempts.push(outcome.attempt);
          return review(
            'the wallet says the payment was already executed, after an attempt whose outcome was unknown',
            attempts,
            walletPaymentId,
          );
        case 'not-sent':
          // Nothing reached the wallet (429, connection refused): not evidence of anything, so it
          // does not use up an attempt. After too many, the payment fails unless an earlier attempt
          // was unknown, which only review can resolve.
          notSent += 1;
          if (notSent >= MAX_NOT_SENT) {
            if (attempts.length === 0)
              return finish('FAILED', outcome.attempt.code, outcome.attempt.requestReferenceNo);
            attempts.push(outcome.attempt);
            return review(
              `the wallet stayed unavailable after an attempt whose outcome was unknown`,
              attempts,
              walletPaymentId,
            );
          }
          // When the wallet said when to come back (429 Retry-After), then; else a doubling backoff.
          await sleep(outcome.retryAfterMs ?? Math.min(30_000, 1000 * 2 ** (notSent - 1)));
          break;
        case 'unknown':
          attempts.push(outcome.attempt);
          unknownExecutes += 1;
          if (attempt < MAX_EXECUTE_ATTEMPTS) await sleep(1000 * 2 ** (attempt - 1));
          attempt += 1;
          break;
      }
    }
    return review(
      `the execute outcome stayed unknown after ${MAX_EXECUTE_ATTEMPTS} attempts`,
      attempts,
      walletPaymentId,
    );
  };

  for (let takeovers = 0; ; takeovers += 1) {
    try {
      return await run();
    } catch (error) {
      // Overtaken: take the payment over again (a fresh claim: EXECUTING counts as unknown), after a while.
      if (!overtaken(error) || takeovers >= MAX_TAKEOVERS) throw error;
      await sleep(1000 * (takeovers + 1));
    }
  }
}
