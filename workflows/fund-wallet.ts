// fundWallet: one funding, exactly one executed transfer at most. The story, top to bottom:
//   1. begin (`begin`): a fresh funding runs its one pass (`onePassPath`: claim, create, execute in
//      one local activity); a funding the pass handed over, a run continued as new, a run taking
//      the funding over again and every run from before the one pass take the steps (`stepPath`:
//      claim, create unless a transfer is stored, begin the execute, execute once).
//   2. follow through (`followThrough`): the execute's outcome to the end. An unknown outcome →
//      RECONCILING, then retrieve (never a new intent); PROCESSING or unknown: a durable sleep with
//      backoff, then retrieve; CREATED after an unknown execute: execute again, a bounded number
//      of times.
//   3. end: APPROVED | DECLINED (60xx) | REJECTED (M133, 1096, CODE_INVALID) | FAILED (a reason,
//      only when nothing was executed or the wallet says so); once an execute's outcome was
//      unknown, only the wallet's final state or NEEDS_REVIEW and a resolve (`FundingRun`).
// Inputs, results, queries and search attributes carry ids and states only.
import {
  ActivityFailure,
  ApplicationFailure,
  condition,
  continueAsNew,
  patched,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  setWorkflowOptions,
  sleep,
  upsertSearchAttributes,
} from '@temporalio/workflow';
import type { FinalFundingStatus, FundingResult, FundingStatus } from '../domain/funding.ts';
import type { WalletCallEvidence } from '../domain/review.ts';
import {
  fundingCancelledSignal,
  fundingFailureTypes,
  fundingStatusQuery,
  fundWalletActivityTimeouts,
  mismatchReviewReason,
  resolveFundingUpdate,
  type FundWalletActivities,
  type FundWalletInput,
  type OnePassOutcome,
  type TransferProgress,
} from './fund-wallet.contract.ts';
import { firstCallAfterBeginExecute, stepPathStart } from './fund-wallet-takeover.ts';
import { kindKey, recipientTypeKey, statusKey } from './search-attribute-keys.ts';
import { failedWith } from './activity-failure.ts';

const nonRetryableErrorTypes = [
  fundingFailureTypes.notFound,
  fundingFailureTypes.corrupt,
  fundingFailureTypes.ownerLost,
];

/**
 * The final statuses. Workflows import domain/ as types only (it brings zod and is not part of
 * the deterministic bundle), so the list is spelled here, and the compiler holds it to domain's
 * transition table: a status added to or removed from the final ones fails to type-check here.
 */
const finalStatuses: Record<FinalFundingStatus, true> = {
  APPROVED: true,
  DECLINED: true,
  REJECTED: true,
  FAILED: true,
};
const isFinal = (status: FundingStatus): status is FinalFundingStatus => Object.hasOwn(finalStatuses, status);

const databaseRetry = {
  initialInterval: '500 milliseconds',
  backoffCoefficient: 2,
  maximumInterval: '30 seconds',
  nonRetryableErrorTypes,
};

type DatabaseSteps = Pick<
  FundWalletActivities,
  | 'loadFunding'
  | 'markCreating'
  | 'beginExecute'
  | 'markReconciling'
  | 'finishFunding'
  | 'parkFundingForReview'
  | 'resolveFunding'
>;

/** The database steps as activities: how fundings started before `localDatabaseSteps` run. */
const activityDatabase = proxyActivities<DatabaseSteps>({ startToCloseTimeout: '15 seconds', retry: databaseRetry });

/**
 * The same steps as local activities: short, idempotent PostgreSQL writes run by the worker inside
 * the workflow task, with no activity task round trip through Temporal (a funding's history goes
 * from about 40 events and 7 workflow tasks to about 25 and 3). The wallet calls stay activities.
 */
const localDatabase = proxyLocalActivities<DatabaseSteps>({
  startToCloseTimeout: '15 seconds',
  localRetryThreshold: '10 seconds',
  retry: databaseRetry,
});

/** The patch that moved the database steps to local activities; histories from before it replay the activity path. */
export const localDatabaseStepsPatch = 'fund-wallet-local-database-steps';

/**
 * A fresh funding's whole happy path as one local activity (activities/funding.ts fundInOnePass):
 * one workflow task, no activity task, when the wallet answers at once. It makes a single attempt
 * (a failure hands over to the step-by-step path below, which reads the record); its time-out
 * covers a token refresh's lock, a create and an execute, and it starts no wallet call that could
 * outlive it.
 */
const onePassStep = proxyLocalActivities<Pick<FundWalletActivities, 'fundInOnePass'>>({
  startToCloseTimeout: fundWalletActivityTimeouts.onePassMs,
  retry: { maximumAttempts: 1 },
});

/**
 * The patch that runs a fresh funding in one pass and writes the status search attribute only for
 * the states an operator searches by (the start sets kind, recipient type and PENDING); histories
 * from before it replay the step-by-step path with a search attribute write per state.
 */
export const onePassPatch = 'fund-wallet-one-pass';

/**
 * The statuses written to the WalletflowStatus search attribute on the one-pass path: the ones an operator looks for.
 */
const searchedStatuses: Record<FundingStatus, boolean> = {
  PENDING: false,
  CREATING: false,
  EXECUTING: false,
  RECONCILING: true,
  NEEDS_REVIEW: true,
  APPROVED: true,
  DECLINED: true,
  REJECTED: true,
  FAILED: true,
};

/** create: a retried create may leave an unexecuted intent behind (harmless); give up after ~10 minutes. */
const create = proxyActivities<Pick<FundWalletActivities, 'createTransfer'>>({
  startToCloseTimeout: fundWalletActivityTimeouts.createMs,
  retry: {
    initialInterval: '1 second',
    backoffCoefficient: 2,
    maximumInterval: '60 seconds',
    maximumAttempts: 15,
    nonRetryableErrorTypes,
  },
});

/**
 * execute: retried only when nothing happened (429, refused connection) or the worker died; a
 * repeated execute is refused by the wallet (409), which reads as unknown and leads to retrieve.
 */
const execute = proxyActivities<Pick<FundWalletActivities, 'executeTransfer'>>({
  startToCloseTimeout: fundWalletActivityTimeouts.executeMs,
  retry: {
    initialInterval: '1 second',
    backoffCoefficient: 2,
    maximumInterval: '30 seconds',
    maximumAttempts: 5,
    nonRetryableErrorTypes,
  },
});

/** retrieve: a read, retried until the wallet answers. */
const retrieve = proxyActivities<Pick<FundWalletActivities, 'retrieveTransfer'>>({
  startToCloseTimeout: fundWalletActivityTimeouts.retrieveMs,
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '60 seconds', nonRetryableErrorTypes },
});

/**
 * Times a run takes the funding over again after another run's claim overtook it (a stale copy
 * of this workflow on a paused worker claims as it replays, until Temporal refuses its task),
 * each after a durable timer; past them, the run fails and the sweep repairs the funding.
 */
const MAX_TAKEOVERS = 5;

/**
 * Whether an activity (or a local activity, which may arrive unwrapped) failed because another run claimed the funding.
 */
const overtaken = (error: unknown): boolean => failedWith(error, fundingFailureTypes.ownerLost);

/** Re-executes allowed when retrieve shows the transfer still CREATED after an unknown execute. */
const MAX_EXECUTE_ATTEMPTS = 4;
/** Polls per run before continue-as-new keeps the history short. */
const POLLS_PER_RUN = 200;

function pollDelayMs(poll: number): number {
  return Math.min(1000 * 2 ** Math.min(poll, 10), 60_000);
}

/**
 * The patch after which a run that takes over a transfer it did not create itself (stored by
 * another run, or by an earlier attempt of its create) retrieves it before any execute
 * (workflows/fund-wallet-takeover.ts).
 */
export const takeOverTrustsNothingPatch = 'fund-wallet-take-over-trusts-nothing';

/** The patch that sends a funding whose executes all stayed unknown to review instead of FAILED. */
export const reviewAfterUnknownPatch = 'fund-wallet-review-after-unknown';

/** Retrieves refused in a row (404 TRANSFER_NOT_FOUND, 401) before a funding goes to review: about 10 minutes. */
const MAX_REFUSED_RETRIEVES = 12;
/** Evidence entries kept for a review (the latest ones): enough to follow every execute. */
const MAX_EVIDENCE = 30;

// Pinned (docs/changing-workflows.md): a run started on a versioned build finishes on it, so a
// change to its commands is a new build. The patched() gates in this file stay for the runs the
// previous release started before Worker Versioning: unversioned, they move to the current build at
// their next workflow task and replay here (test/replay/histories/archive/release-360981c). They go
// once `walletflow deploy status` shows no unversioned run open (docs/changing-workflows.md,
// "Retiring the previous release's gates").
setWorkflowOptions({ versioningBehavior: 'PINNED' }, fundWallet);

/**
 * The workflow: begin, then follow the execute through to the end (the story in this file's
 * header). A run another run overtook takes the funding over again through the steps, after a
 * durable timer, at most MAX_TAKEOVERS times.
 */
export async function fundWallet(input: FundWalletInput): Promise<FundingResult> {
  // One marker on a new run: the one-pass path uses the local database steps too.
  const onePass = patched(onePassPatch);
  const database = onePass || patched(localDatabaseStepsPatch) ? localDatabase : activityDatabase;
  const run = new FundingRun(input, onePass, database);
  run.handleMessages();

  for (let takeovers = 0; ; takeovers += 1) {
    try {
      return await followThrough(run, await begin(run, takeovers === 0));
    } catch (error) {
      // Overtaken: take the funding over again (a fresh claim, trusting nothing), after a while.
      if (!overtaken(error) || takeovers >= MAX_TAKEOVERS) throw error;
      await sleep(1000 * (takeovers + 1));
    }
  }
}

/**
 * Where the run begins: a fresh funding's first attempt tries the one pass; the steps go on
 * wherever the pass handed over, and take every other run (continued as new, taking over, or from
 * before the one pass).
 */
async function begin(run: FundingRun, firstAttempt: boolean): Promise<Executed | FundingResult> {
  if (firstAttempt && run.onePass && !run.input.reconcile) {
    const passed = await onePassPath(run);
    if (passed !== undefined) return passed;
  }
  // Handed over after the wallet said "later" (its Retry-After): a durable timer first. Only runs
  // started with it have it, so the histories of runs without it replay as before.
  if (firstAttempt && run.input.waitBeforeMs !== undefined) await sleep(run.input.waitBeforeMs);
  return stepPath(run);
}

/** Where the transfer stands after an execute (or a resumed run), for the loop that follows it to the end. */
interface Executed {
  transferId: string;
  progress: TransferProgress;
}

/** The one-pass path of a fresh funding; undefined: the step path goes on from the record. */
async function onePassPath(run: FundingRun): Promise<Executed | FundingResult | undefined> {
  let pass: OnePassOutcome;
  try {
    pass = await onePassStep.fundInOnePass(run.fundingId);
  } catch (error) {
    // Nothing is assumed about what the pass did: the record says it, and the steps read it. A
    // local activity's own failure can arrive unwrapped (an ApplicationFailure, not an ActivityFailure).
    if (!(error instanceof ActivityFailure) && !(error instanceof ApplicationFailure)) throw error;
    return undefined;
  }
  if ('fence' in pass) run.fence = pass.fence;
  switch (pass.kind) {
    case 'finished':
      run.setStatus(pass.status);
      return { fundingId: run.fundingId, status: pass.status, transferId: pass.transferId, errorCode: pass.errorCode };
    case 'mismatch':
      return run.reviewMismatch(pass);
    case 'execute':
      run.setStatus('EXECUTING');
      // Nothing was sent: as the execute activity's retry would, after the wallet's Retry-After.
      if (pass.retryAfterMs !== null) await sleep(pass.retryAfterMs);
      return { transferId: pass.transferId, progress: await run.executeOnce(pass.transferId) };
    case 'executed':
      run.setStatus('EXECUTING');
      if (pass.progress.kind === 'unknown') {
        const { requestReferenceNo, httpStatus, code } = pass.progress;
        run.noteEvidence('transfers.execute', {
          requestReferenceNo,
          httpStatus: httpStatus ?? null,
          code,
          outcome: 'unknown',
        });
      }
      return { transferId: pass.transferId, progress: pass.progress };
    case 'create-later':
      // As the create activity's retry policy would: after the wallet's Retry-After, else its first interval.
      await sleep(pass.retryAfterMs ?? 1000);
      return undefined;
    case 'steps':
      return undefined;
  }
}

/**
 * The step path: every step its own (local) activity. Its first step claims the funding
 * (loadFunding), and it goes on from the state the claim saw, trusting nothing it did not
 * write itself (workflows/fund-wallet-takeover.ts): create, begin the execute, execute.
 */
async function stepPath(run: FundingRun): Promise<Executed | FundingResult> {
  const { fundingId, input, database } = run;
  const snapshot = await database.loadFunding(fundingId);
  run.fence = snapshot.fence;
  if (!run.onePass) {
    upsertSearchAttributes([
      { key: kindKey, value: 'FUNDING' },
      { key: recipientTypeKey, value: snapshot.recipientType },
    ]);
  }
  run.setStatus(snapshot.status);
  if (isFinal(snapshot.status)) {
    return run.finish(snapshot.status, null, null);
  }
  if (snapshot.status === 'NEEDS_REVIEW') return run.awaitResolution(snapshot.transferId);

  if (input.reconcile) {
    // Continued as new during a long reconciliation: only retrieve may tell.
    return {
      transferId: input.reconcile.transferId,
      progress: { kind: 'unknown', code: 'RESUMED', requestReferenceNo: null },
    };
  }
  const start = stepPathStart(snapshot);
  let transferId: string;
  let createRequestReferenceNo: string | null = null;
  switch (start.kind) {
    case 'final':
    case 'review':
      throw new Error('unreachable: final and review states are handled above');
    case 'retrieve':
      // An execute may already have been sent: only retrieve may tell.
      return { transferId: start.transferId, progress: { kind: 'unknown', code: 'RESUMED', requestReferenceNo: null } };
    case 'take-over-transfer':
      transferId = start.transferId;
      break;
    case 'create': {
      if (!(await database.markCreating(fundingId, run.fence))) {
        // Cancelled, or (since the one pass) moved on by another run of this funding: the record
        // says which; FAILED/CANCELLED is written only when it is what the record shows.
        if (run.onePass && !run.rereadOnce) {
          run.rereadOnce = true;
          return stepPath(run);
        }
        return run.finishBeforeExecute('FAILED', 'CANCELLED', null);
      }
      run.setStatus('CREATING');
      let created;
      try {
        created = await create.createTransfer(fundingId, run.fence);
      } catch (error) {
        if (!(error instanceof ActivityFailure) || overtaken(error)) throw error;
        return run.finishBeforeExecute(
          'FAILED',
          'CREATE_FAILED',
          null,
          'the wallet service could not create the transfer; nothing was executed',
        );
      }
      if (created.kind === 'refused')
        return run.finishBeforeExecute(created.status, created.code, created.requestReferenceNo);
      if (created.kind === 'cancelled') return run.finishBeforeExecute('FAILED', 'CANCELLED', null);
      if (created.kind === 'mismatch') return run.reviewMismatch(created);
      transferId = created.transferId;
      createRequestReferenceNo = created.requestReferenceNo;
      break;
    }
  }
  if (run.cancelNudged || !(await database.beginExecute(fundingId, createRequestReferenceNo, run.fence)))
    return run.finishBeforeExecute('FAILED', 'CANCELLED', null);
  run.setStatus('EXECUTING');
  if (
    firstCallAfterBeginExecute({ requestReferenceNo: createRequestReferenceNo }) === 'retrieve' &&
    patched(takeOverTrustsNothingPatch)
  ) {
    // Not this run's own fresh intent: read it back before any execute (the loop executes it
    // when the wallet shows it still CREATED).
    return { transferId, progress: { kind: 'unknown', code: 'TAKEN_OVER', requestReferenceNo: null } };
  }
  return { transferId, progress: await run.executeOnce(transferId) };
}

/** From where the run began (the pass, or the steps) to the funding's end: the execute's outcome followed through. */
async function followThrough(run: FundingRun, begun: Executed | FundingResult): Promise<FundingResult> {
  if (!('progress' in begun)) return begun;
  const { fundingId, input, database } = run;
  const { transferId } = begun;
  let { progress } = begun;
  let polls = input.reconcile?.polls ?? 0;
  const pollsAtRunStart = polls;

  const executedTransferId: string = transferId;
  // Counted across takeovers (the run's, not the attempt's): a re-claim does not buy more executes.
  let executeAttempts = run.executeAttemptsSoFar;
  let refusedRetrieves = 0;
  /** Once an execute's outcome was unknown, only the wallet's final state or a person ends the funding. */
  const review = (reason: string): Promise<FundingResult> => run.parkAndAwait(reason, executedTransferId);
  for (;;) {
    switch (progress.kind) {
      case 'final':
        return run.finish(progress.status, progress.declineCode, progress.requestReferenceNo);
      case 'expired':
        return run.finish('FAILED', 'TRANSFER_EXPIRED', progress.requestReferenceNo);
      case 'not-executed':
        refusedRetrieves = 0;
        if (executeAttempts >= MAX_EXECUTE_ATTEMPTS) {
          if (patched(reviewAfterUnknownPatch)) {
            run.noteEvidence('transfers.retrieve', {
              requestReferenceNo: progress.requestReferenceNo,
              httpStatus: 200,
              code: 'CREATED',
              outcome: 'ok',
            });
            return review(
              `the outcome of ${executeAttempts} executes stayed unknown and the transfer still shows CREATED: an execute queued at the wallet may still be processed`,
            );
          }
          return run.finish(
            'FAILED',
            'EXECUTE_FAILED',
            progress.requestReferenceNo,
            'the transfer was never executed; nothing was moved',
          );
        }
        // Retrieve says nothing executed: executing again is safe, the wallet executes a transfer once.
        executeAttempts += 1;
        run.executeAttemptsSoFar = executeAttempts;
        progress = await run.executeOnce(executedTransferId);
        continue;
      case 'refused':
        // The wallet will not show the transfer we created (404, 401): not an answer, so not a
        // state; after a bound, a person looks, with the evidence.
        refusedRetrieves += 1;
        run.noteEvidence('transfers.retrieve', {
          requestReferenceNo: progress.requestReferenceNo,
          httpStatus: progress.httpStatus,
          code: progress.code,
          outcome: 'rejected',
        });
        if (refusedRetrieves >= MAX_REFUSED_RETRIEVES) {
          return review(
            `the wallet refused ${refusedRetrieves} retrieves of the transfer in a row (${progress.code}) after an execute whose outcome was unknown`,
          );
        }
        break;
      case 'unknown':
        if (run.status !== 'RECONCILING') {
          await database.markReconciling(
            fundingId,
            progress.requestReferenceNo,
            `execute outcome unknown (${progress.code}): retrieving`,
            run.fence,
          );
          run.setStatus('RECONCILING');
        }
        break;
      case 'processing':
        refusedRetrieves = 0;
        break;
    }
    // Counted per run: a continued run starts with the total so far, and must poll before it continues again.
    if (polls - pollsAtRunStart >= POLLS_PER_RUN) {
      await continueAsNew<typeof fundWallet>({
        fundingId,
        reconcile: { transferId: executedTransferId, polls, executeAttempts, evidence: run.evidence },
      });
    }
    // A durable timer: it survives worker restarts.
    await sleep(pollDelayMs(polls));
    polls += 1;
    progress = await retrieve.retrieveTransfer(fundingId, executedTransferId);
  }
}

/**
 * What one run of fundWallet keeps across its paths and takeovers: the status its query answers,
 * its claim on the funding, the messages it received, the evidence a review shows, and the steps
 * every path ends with (finish, park for review, execute).
 */
class FundingRun {
  readonly fundingId: string;
  status: FundingStatus = 'PENDING';
  /**
   * This run's claim on the funding (the one pass's, or its step path's loadFunding): every
   * database step carries it, and the record refuses it once another run claimed the funding.
   * Undefined in histories from before fencing.
   */
  fence: number | undefined = undefined;
  cancelNudged = false;
  resolved: { status: FinalFundingStatus; errorCode: string | null } | undefined;
  resolving = false;
  /** The wallet calls behind a doubt, for a review: executes with no known outcome, retrieves that saw none. */
  readonly evidence: WalletCallEvidence[];
  /** Whether the step path already read the record again after a refused markCreating (it does so once). */
  rereadOnce = false;
  /** Executes sent so far, across takeovers and continue-as-new. */
  executeAttemptsSoFar: number;

  constructor(
    readonly input: FundWalletInput,
    /** Whether this run is past onePassPatch: the one pass, and status search attributes for searched states only. */
    readonly onePass: boolean,
    readonly database: DatabaseSteps,
  ) {
    this.fundingId = input.fundingId;
    this.evidence = [...(input.reconcile?.evidence ?? [])];
    this.executeAttemptsSoFar = input.reconcile?.executeAttempts ?? 1;
  }

  /** The status query, the cancel signal and the resolve update (accepted only in NEEDS_REVIEW). */
  handleMessages(): void {
    setHandler(fundingStatusQuery, () => this.status);
    setHandler(fundingCancelledSignal, () => {
      this.cancelNudged = true;
    });
    setHandler(
      resolveFundingUpdate,
      async (resolution) => {
        // Set before the first await: a second resolve admitted meanwhile is refused by the validator.
        this.resolving = true;
        try {
          // With no fence: a resolution is ops' (or the wallet's) word on a funding in review, and
          // claims it as it moves it, whichever run holds it now.
          this.resolved = await this.database.resolveFunding(this.fundingId, resolution);
        } finally {
          // A resolve that failed does not block the next one.
          if (this.resolved === undefined) this.resolving = false;
        }
        return { status: this.resolved.status };
      },
      {
        validator: (resolution) => {
          if (this.status !== 'NEEDS_REVIEW') throw new Error(`funding is ${this.status}, not NEEDS_REVIEW`);
          if (this.resolving) throw new Error('the funding is already being resolved');
          if (!['APPROVED', 'DECLINED', 'FAILED'].includes(resolution.outcome))
            throw new Error('outcome must be APPROVED, DECLINED or FAILED');
          if (!resolution.note || !resolution.resolvedBy)
            throw new Error('a resolution needs a note and who resolved it');
        },
      },
    );
  }

  setStatus(next: FundingStatus): void {
    const changed = next !== this.status;
    this.status = next;
    if (!this.onePass) upsertSearchAttributes([{ key: statusKey, value: next }]);
    else if (changed && searchedStatuses[next]) upsertSearchAttributes([{ key: statusKey, value: next }]);
  }

  async finish(
    final: FinalFundingStatus,
    code: string | null,
    requestReferenceNo: string | null,
    detail?: string,
  ): Promise<FundingResult> {
    const done = await this.database.finishFunding(
      this.fundingId,
      { status: final, code, requestReferenceNo, detail: detail ?? code },
      this.fence,
    );
    this.setStatus(done.status);
    return { fundingId: this.fundingId, status: done.status, transferId: done.transferId, errorCode: done.errorCode };
  }

  /** A final state that says nothing was sent (a refused or cancelled create): never written over an execute. */
  async finishBeforeExecute(
    final: FinalFundingStatus,
    code: string,
    requestReferenceNo: string | null,
    detail?: string,
  ): Promise<FundingResult> {
    const done = await this.database.finishFunding(
      this.fundingId,
      { status: final, code, requestReferenceNo, detail: detail ?? code, beforeExecute: true },
      this.fence,
    );
    this.setStatus(done.status);
    return { fundingId: this.fundingId, status: done.status, transferId: done.transferId, errorCode: done.errorCode };
  }

  /**
   * → NEEDS_REVIEW, then waits for the resolve update; a funding another writer already finished
   * is not parked, and the run ends with its state. Histories from before that answered nothing:
   * parked.
   */
  async parkAndAwait(reason: string, transferId: string | null): Promise<FundingResult> {
    const parked = await this.database.parkFundingForReview(this.fundingId, reason, this.evidence, this.fence);
    if (parked && !parked.parked) {
      this.setStatus(parked.status);
      return {
        fundingId: this.fundingId,
        status: parked.status,
        transferId: parked.transferId,
        errorCode: parked.errorCode,
      };
    }
    return this.awaitResolution(transferId);
  }

  /** Waits in NEEDS_REVIEW for the resolve update (ops, or the sweep reading the wallet's final state). */
  async awaitResolution(transferId: string | null): Promise<FundingResult> {
    this.setStatus('NEEDS_REVIEW');
    await condition(() => this.resolved !== undefined);
    this.setStatus(this.resolved!.status);
    return {
      fundingId: this.fundingId,
      status: this.resolved!.status,
      transferId,
      errorCode: this.resolved!.errorCode,
    };
  }

  noteEvidence(
    operation: 'transfers.create' | 'transfers.execute' | 'transfers.retrieve',
    entry: Omit<WalletCallEvidence, 'at' | 'operation'>,
  ): void {
    this.evidence.push({ at: new Date().toISOString(), operation, ...entry });
    if (this.evidence.length > MAX_EVIDENCE) this.evidence.splice(0, this.evidence.length - MAX_EVIDENCE);
  }

  async executeOnce(id: string): Promise<TransferProgress> {
    let outcome: TransferProgress;
    try {
      outcome = await execute.executeTransfer(this.fundingId, id, this.fence);
    } catch (error) {
      if (!(error instanceof ActivityFailure) || overtaken(error)) throw error;
      outcome = { kind: 'unknown', code: 'EXECUTE_ACTIVITY_FAILED', requestReferenceNo: null };
    }
    if (outcome.kind === 'unknown') {
      this.noteEvidence('transfers.execute', {
        requestReferenceNo: outcome.requestReferenceNo,
        httpStatus: outcome.httpStatus ?? null,
        code: outcome.code,
        outcome: 'unknown',
      });
    }
    return outcome;
  }

  /** A created intent that is not what was asked: never executed; a person compares it with the request. */
  async reviewMismatch(created: Extract<OnePassOutcome, { kind: 'mismatch' }>): Promise<FundingResult> {
    this.noteEvidence('transfers.create', {
      requestReferenceNo: created.requestReferenceNo,
      httpStatus: 201,
      code: 'ANSWER_MISMATCH',
      outcome: 'mismatch',
    });
    return this.parkAndAwait(mismatchReviewReason(created.detail, created.transferId), null);
  }
}
