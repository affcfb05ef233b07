// The sweep: fundings and payments that are not final long after they started are
// checked against their workflow and the wallet, and repaired when their workflow can no longer
// finish them, paging through every candidate; a funding in review is resolved by the wallet's own
// final state when it has one; recent FAILED fundings with a transfer are checked once more
// (contract-decisions section 11: no FAILED after money may have moved). Every repair goes through
// the records (fundings/, payments/) with its event.
import { ApplicationFailure, CancelledFailure, Context } from '@temporalio/activity';
import type { Client } from '@temporalio/client';
import { fundingReviewStatus, type FundingStatus } from '../domain/funding.ts';
import type { WalletCallEvidence } from '../domain/review.ts';
import type { FundingRecord } from '../fundings/funding-record.ts';
import type { BatchRecord } from '../fundings/batch-record.ts';
import type { Funding, Payment } from '../generated/prisma/client.ts';
import type { SweepCursor } from '../lib/list-page.ts';
import { resolveReview } from '../reviews/resolve-review.ts';
import type { Logger } from '../lib/logger.ts';
import { RECONCILIATION_ACTOR } from '../lib/ops-keys.ts';
import type { Metrics } from '../lib/metrics.ts';
import { workflowRunState } from '../lib/temporal.ts';
import type { PaymentRecord } from '../payments/payment-record.ts';
import { isUnreadableAnswer, isWalletError, type WalletClient } from '../wallet/index.ts';
import {
  resolveFundingUpdate,
  startFundWallet,
  type ResolveFundingUpdateInput,
} from '../workflows/fund-wallet.contract.ts';
import { startPayWallet } from '../workflows/pay-wallet.contract.ts';
import { startFundBatch } from '../workflows/fund-batch.contract.ts';
import { LANE_COUNT, laneWorkflowId, startFundLane } from '../workflows/fund-lane.contract.ts';
import { readFrom, type SweepMarks, type SweepRound } from '../fundings/sweep-marks.ts';
import { isRateLimited, isWalletTransient, walletRetry } from './wallet-retry.ts';
import {
  MAX_SWEEP_LISTED,
  type SweepActivities,
  type RepairAction,
  type SweepInput,
  type SweepReport,
} from '../workflows/sweep.contract.ts';
import { createSweepTally, type SweepTally } from './sweep-tally.ts';

export interface SweepDependencies {
  /** Finishes the fundings it repairs, counting them by final state (fundings/funding-record.ts). */
  fundings: FundingRecord;
  /** How far its passes over recently finished fundings have gone (fundings/sweep-marks.ts). */
  marks: SweepMarks;
  payments: PaymentRecord;
  /** Whether the lanes run (FUNDING_LANES is not `off`): a lane's run that closed is started again. */
  lanes?: boolean;
  /**
   * Whether this worker's build is the deployment's current version (worker/main.ts asks Temporal); absent: it is. A
   * sweep on another build (a ramped or not yet promoted one) starts no lane: a lane it started would go to the current
   * version's workers, which may be a release's with no fundLane, and fail every task (the worker's own start of the
   * lanes waits for its build to be current for the same reason).
   */
  buildIsCurrent?: () => Promise<boolean>;
  /** Batches under way, whose runner the sweep starts again when it is gone; absent: not looked at. */
  batches?: { listActive: BatchRecord['listActive']; maxInFlight: number };
  wallet: Pick<WalletClient, 'retrieveTransfer'>;
  temporal: Client;
  taskQueue: string;
  logger: Logger;
  /** Counts repairs; absent: not counted. */
  metrics?: Pick<Metrics, 'sweepRepair'>;
  /**
   * The database's clock (lib/database.ts databaseNow): the sweep's "idle since" is measured on it, never on the
   * worker's.
   */
  databaseNow: () => Promise<Date>;
  /** How long the pass over every hold goes on in one sweep (PASS_BUDGET_MS); tests set less. */
  passBudgetMs?: number;
}

const DAY_SECONDS = 86_400;
const DAY_MS = DAY_SECONDS * 1000;
/** How long the sweep waits for a review's workflow to take a resolution (the API waits RESOLVE_DEADLINE_MS). */
const SWEEP_RESOLVE_DEADLINE_MS = 3000;
/** Ledger transactions read per range by the daily pass over every hold (a heartbeat between ranges). */
const OPEN_HOLD_RANGE = 50_000n;
/**
 * How long one sweep goes on with the pass over every hold, whose work grows with the history (at least a page): the
 * rest is the next sweep's, from where this one stopped. Far below the attempt's five minutes, so an attempt ends with
 * the pass's progress kept and its other repairs done.
 */
const PASS_BUDGET_MS = 60_000;
/** Retrieves in a row the wallet could not answer now (a 5xx, no answer) after which a pass asks it nothing more. */
const TRANSIENT_IN_A_ROW = 3;

/** What one sweep learned that changes how it goes on. */
interface SweepPassState {
  /** A resolution timed out: the runs of reviews are not being taken up (no worker for their build). */
  resolveTimedOut: boolean;
  /** Why the wallet is asked about no more transfers in this pass (it could not answer one now); null: it is asked. */
  unasked: string | null;
  /** When asking the wallet about reviews stops in this pass (its budget from the first asked); null: none yet. */
  reviewsUntil: number | null;
  /** Reviews asked of the wallet in this pass. */
  reviewsAsked: number;
  /** Retrieves in a row the wallet could not answer now. */
  transientInARow: number;
}
/**
 * A lane's run whose workflow task is on this attempt or later has failed it again and again: it is not working
 * (laneIsWorking). One failed attempt is a worker lost mid-task, which the next worker's attempt gets past.
 */
const FAILING_TASK_ATTEMPTS = 3;

export function createSweepActivities(deps: SweepDependencies): SweepActivities {
  const { fundings, payments, marks, logger } = deps;
  const passBudget = deps.passBudgetMs ?? PASS_BUDGET_MS;

  const workflowState = async (workflowId: string) => (await workflowRunState(deps.temporal, workflowId)).state;

  /** Whether a lane's run is open and working: not one whose workflow task keeps failing (FAILING_TASK_ATTEMPTS). */
  async function laneIsWorking(workflowId: string): Promise<boolean> {
    const { state, taskAttempt } = await workflowRunState(deps.temporal, workflowId);
    return state === 'running' && taskAttempt < FAILING_TASK_ATTEMPTS;
  }

  /** Every row a page reader yields, oldest first, a page at a time: newer rows never starve behind older ones. */
  async function* everyRow<Row extends SweepCursor>(
    read: (after: SweepCursor | undefined) => Promise<Row[]>,
  ): AsyncGenerator<Row> {
    let after: SweepCursor | undefined;
    for (;;) {
      const page = await read(after);
      yield* page;
      const last = page.at(-1);
      if (!last) return;
      after = { createdAt: last.createdAt, id: last.id };
    }
  }

  /**
   * The wallet's word on a transfer: its record, or the refusal; transient failures retry the sweep.
   * `unreadableAsRefusal`: a 2xx whose JSON is off the contract is the wallet's way of showing nothing usable, as a
   * refusal (a funding whose execute's outcome is unknown goes to review with it, never left to be asked for ever);
   * else it is a transient failure, as a body that is not JSON always is.
   */
  async function readTransfer(transferId: string, unreadableAsRefusal = false) {
    try {
      const { data, requestReferenceNo } = await deps.wallet.retrieveTransfer(transferId);
      return {
        kind: 'read' as const,
        status: data.status,
        declineCode: data.decline?.code ?? null,
        requestReferenceNo,
      };
    } catch (error) {
      if (!isWalletError(error)) throw error;
      if (error.outcome !== 'rejected' && !(unreadableAsRefusal && isUnreadableAnswer(error)))
        throw walletRetry(error, `retrieve ${error.code}`);
      return {
        kind: 'refused' as const,
        code: error.code,
        httpStatus: error.httpStatus,
        requestReferenceNo: error.requestReferenceNo,
        offContract: error.offContract,
      };
    }
  }

  /**
   * The wallet's word on a funding's transfer in the pass over stuck fundings, or why it was not asked (`tried`: it was
   * asked, and could not answer now). A wallet that answers a 429, or could not answer TRANSIENT_IN_A_ROW retrieves in
   * a row (a 5xx, no answer), is asked nothing more in this pass: the fundings are left as they are for a later sweep
   * (their holds kept), and the repairs after the pass run. Before, one such failure failed the sweep's attempt, and
   * each attempt began again at the oldest candidate: one transfer the wallet could not show stopped every sweep.
   */
  async function askInPass(transferId: string, pass: SweepPassState) {
    if (pass.unasked !== null) return { kind: 'unasked' as const, why: pass.unasked, tried: false };
    try {
      const read = await readTransfer(transferId, true);
      // An answer off the contract counts toward stopping too: a wallet that answers every retrieve so (an interface
      // changed under us) sends a few fundings to review a sweep, not every funding in doubt at once.
      if (read.kind === 'refused' && read.offContract) {
        pass.transientInARow += 1;
        if (pass.transientInARow >= TRANSIENT_IN_A_ROW)
          pass.unasked = `the wallet answered ${TRANSIENT_IN_A_ROW} retrieves in a row off the contract (${read.code})`;
      } else pass.transientInARow = 0;
      return read;
    } catch (error) {
      if (!isWalletTransient(error)) throw error;
      const why = `the wallet could not answer now (${(error as Error).message})`;
      pass.transientInARow += 1;
      if (isRateLimited(error as ApplicationFailure) || pass.transientInARow >= TRANSIENT_IN_A_ROW) pass.unasked = why;
      logger.warn(
        { err: (error as Error).message, askingStops: pass.unasked !== null },
        'sweep: the wallet could not answer a retrieve now; asked again in a later sweep',
      );
      return { kind: 'unasked' as const, why, tried: true };
    }
  }

  /**
   * A review's transfer asked of the wallet, within the pass's budget for reviews (PASS_BUDGET_MS from the first: at
   * least one a sweep); none once a resolution timed out in this sweep (it could not be resolved now).
   */
  async function askAboutReview(funding: Funding & { transferId: string }, pass: SweepPassState) {
    const now = Date.now();
    pass.reviewsUntil ??= now + passBudget;
    if (pass.resolveTimedOut)
      return { kind: 'unasked' as const, why: 'a resolution timed out in this sweep', tried: false };
    if (pass.reviewsAsked > 0 && now >= pass.reviewsUntil)
      return { kind: 'unasked' as const, why: 'the sweep’s budget for asking about reviews is spent', tried: false };
    pass.reviewsAsked += 1;
    return askInPass(funding.transferId, pass);
  }

  /**
   * Ends a review from the wallet's final state: through the waiting workflow, or the record when it
   * is gone. A workflow that cannot take it now (its task failing, Temporal busy) leaves the funding
   * in review for the next sweep, and the sweep goes on with the others.
   */
  async function resolveFromWallet(
    funding: Funding,
    outcome: 'APPROVED' | 'DECLINED',
    declineCode: string | null,
    requestReferenceNo: string,
    pass: SweepPassState,
  ): Promise<boolean> {
    // A run no worker takes up answers only at the deadline: after one, this sweep leaves the other reviews to the next
    // (dozens of them each waiting out a deadline outlived the sweep's attempt, and nothing after them ran).
    if (pass.resolveTimedOut) return false;
    const input: ResolveFundingUpdateInput = {
      outcome,
      note: `the wallet shows the transfer ${outcome}`,
      resolvedBy: RECONCILIATION_ACTOR,
      code: outcome === 'DECLINED' ? (declineCode ?? 'DECLINED') : null,
      requestReferenceNo,
    };
    const result = await resolveReview(
      deps.temporal,
      funding.workflowId,
      resolveFundingUpdate,
      [input],
      {
        stillWaiting: async () => (await fundings.find(funding.id))?.status === fundingReviewStatus,
        resolveWithoutWorkflow: async () => (await fundings.resolve(funding.id, input)).moved,
      },
      SWEEP_RESOLVE_DEADLINE_MS,
    );
    if (result.kind === 'workflow-unavailable' && result.refusal.reason === 'timed-out') pass.resolveTimedOut = true;
    if (result.kind === 'workflow-unavailable')
      logger.warn(
        { fundingId: funding.id, reason: result.refusal.reason },
        'sweep: the wallet shows a final state, but the funding’s workflow cannot take the resolution now; left in review',
      );
    return result.kind === 'resolved';
  }

  async function sweepFunding(
    funding: Funding,
    idleSince: Date,
    tally: SweepTally,
    pass: SweepPassState,
  ): Promise<void> {
    const note = (action: RepairAction, detail: string, repaired: boolean) =>
      tally.funding({ fundingId: funding.id, status: funding.status, action, detail }, repaired);
    let fence: number | undefined = undefined;
    const parkForReview = async (reason: string, evidence: WalletCallEvidence[], detail: string) => {
      if (!(await fundings.parkForReview(funding.id, reason, evidence, fence))) {
        note('left-for-ops', `not sent to review: another writer moved it first (${detail})`, false);
        return;
      }
      note('sent-to-review', detail, true);
    };
    /** A repair counts only if the record took it (a fence or another writer may have refused it). */
    const finished = (moved: boolean, action: RepairAction, detail: string) =>
      moved
        ? note(action, detail, true)
        : note('left-for-ops', `not repaired: another writer moved it first (${detail})`, false);
    if (funding.status === fundingReviewStatus) {
      // A queued execute may have landed since: the wallet's final word resolves the review.
      const read = funding.transferId
        ? await askAboutReview({ ...funding, transferId: funding.transferId }, pass)
        : null;
      if (read?.kind === 'read' && (read.status === 'APPROVED' || read.status === 'DECLINED')) {
        if (await resolveFromWallet(funding, read.status, read.declineCode, read.requestReferenceNo, pass)) {
          note('resolved-from-wallet', `the wallet says ${read.status}`, true);
          return;
        }
      }
      // Asked, and in review still (by the wallet's word, its refusal, no answer, or a final word its run could not
      // take now): seen, so the next sweeps ask the reviews not asked since first, each about every
      // RECONCILE_AFTER_SECONDS; thousands after an incident are asked over several sweeps, and one that cannot be
      // settled now (the wallet can never show it, its run is taken up by no worker) does not stop each sweep's asking
      // at it, the oldest.
      if (read && (read.kind !== 'unasked' || read.tried)) await fundings.seeReviewAsked(funding.id);
      note(
        'left-for-ops',
        `in review: ${
          read?.kind === 'read'
            ? `the wallet says ${read.status}`
            : read?.kind === 'refused'
              ? `retrieve refused: ${read.code}`
              : read
                ? `${read.tried ? 'no answer now' : 'not asked in this sweep'}: ${read.why}`
                : 'no transfer to read'
        }`,
        false,
      );
      return;
    }
    // The wallet is asked nothing more in this pass: a funding its transfer must be read for is not claimed (a claim
    // keeps it from the next sweeps for RECONCILE_AFTER_SECONDS).
    if (pass.unasked !== null && funding.transferId !== null) {
      note('left-for-ops', `not asked in this sweep: ${pass.unasked}`, false);
      return;
    }
    // Waiting in a lane whose run is working (a backlog, or a lane slowed by the wallet's 429s): left
    // to it. A lane no longer run (FUNDING_LANES=off, fewer lanes), or one open that cannot work (its
    // workflow task failing: a build without fundLane, a rollback across a change to it), leaves it to
    // the repair below; the claim keeps the lane from taking it too, should it work again.
    if (funding.status === 'PENDING' && funding.lane !== null && deps.lanes && funding.lane < LANE_COUNT) {
      if (await laneIsWorking(laneWorkflowId(deps.taskQueue, funding.lane))) {
        note('workflow-running', 'waiting in its lane, whose run is working', false);
        return;
      }
    }
    const state = await workflowState(funding.workflowId);
    if (state === 'running') {
      note('workflow-running', 'its workflow is still working on it', false);
      return;
    }
    // Its workflow is gone: the sweep claims the funding, only while its owner (a batch chunk, an
    // earlier run) still shows nothing, and decides from what its claim saw, not from the page it
    // listed; an older sweep attempt still running writes nothing. A cut-off attempt learns it at
    // its next heartbeat: it asks before it claims anything.
    heartbeat();
    stopIfCancelled();
    const claimed = await fundings.claimIdle(funding.id, idleSince);
    if (!claimed) {
      note('owner-active', 'its owner showed it is working on it since it was listed', false);
      return;
    }
    fence = claimed.fence;
    const { transferId } = claimed;
    if (claimed.status !== funding.status) {
      note('left-for-ops', `moved on to ${claimed.status} since it was listed; checked again next sweep`, false);
      return;
    }
    if (state === 'missing' && !transferId && (funding.status === 'PENDING' || funding.status === 'CREATING')) {
      // Stored, but the API died before starting its workflow: start it now.
      await startFundWallet(deps.temporal, {
        workflowId: funding.workflowId,
        taskQueue: deps.taskQueue,
        fundingId: funding.id,
        status: funding.status,
        recipientType: funding.recipientType,
        reusePolicy: 'temporal-default',
      });
      // Under the sweep's claim: once the run started claims the funding, a late entry is dropped.
      await fundings.recordEvent(funding.id, funding.status, 'reconciliation: workflow started', fence);
      note('workflow-started', 'the funding had no workflow', true);
      return;
    }
    if (!transferId) {
      // No transfer was ever stored, so nothing can have been executed for this funding.
      const done = await fundings.finish(funding.id, {
        status: 'FAILED',
        code: 'CREATE_FAILED',
        requestReferenceNo: null,
        detail: 'reconciliation: workflow ended without a transfer; nothing executed',
        fence,
      });
      finished(done.moved, 'failed-not-executed', 'no transfer was stored');
      return;
    }
    /** EXECUTING or RECONCILING: an execute may have been sent whose outcome nobody knows. */
    const executeMayBeInDoubt = funding.status !== 'PENDING' && funding.status !== 'CREATING';
    const read = await askInPass(transferId, pass);
    stopIfCancelled();
    if (read.kind === 'unasked') {
      // Claimed, and left as it is: the next sweep claims it again once it is idle again.
      note('left-for-ops', `not asked in this sweep: ${read.why}`, false);
      return;
    }
    if (read.kind === 'refused') {
      if (!executeMayBeInDoubt) {
        note('left-for-ops', `retrieve refused: ${read.code}`, false);
        return;
      }
      const evidence: WalletCallEvidence = {
        at: new Date().toISOString(),
        operation: 'transfers.retrieve',
        requestReferenceNo: read.requestReferenceNo,
        httpStatus: read.httpStatus,
        code: read.code,
        outcome: read.offContract ? 'off-contract' : 'rejected',
      };
      await parkForReview(
        `reconciliation: its workflow ended with the execute's outcome unknown, and the wallet ${read.offContract ? 'answers off the contract about' : 'refuses to show'} the transfer (${read.code})`,
        [evidence],
        `retrieve refused: ${read.code}`,
      );
      return;
    }
    switch (read.status) {
      case 'APPROVED':
      case 'DECLINED': {
        const done = await fundings.finish(funding.id, {
          status: read.status,
          code: read.status === 'DECLINED' ? (read.declineCode ?? 'DECLINED') : null,
          requestReferenceNo: read.requestReferenceNo,
          detail: 'reconciliation: state read back from the wallet',
          fence,
        });
        finished(done.moved, 'finished-from-wallet', `the wallet says ${read.status}`);
        return;
      }
      case 'EXPIRED': {
        // A final wallet state: the intent can no longer execute.
        const done = await fundings.finish(funding.id, {
          status: 'FAILED',
          code: 'TRANSFER_EXPIRED',
          requestReferenceNo: read.requestReferenceNo,
          detail: 'reconciliation: transfer expired unexecuted',
          fence,
        });
        finished(done.moved, 'failed-not-executed', 'the wallet says EXPIRED');
        return;
      }
      case 'CREATED':
        if (!executeMayBeInDoubt) {
          // Its workflow is gone before any execute was sent: nothing moved, nothing can.
          const done = await fundings.finish(funding.id, {
            status: 'FAILED',
            code: 'EXECUTE_FAILED',
            requestReferenceNo: read.requestReferenceNo,
            detail: 'reconciliation: transfer never executed',
            fence,
          });
          finished(done.moved, 'failed-not-executed', 'the wallet says CREATED and no execute was sent');
          return;
        }
        // An execute may still be queued at the wallet: CREATED now is no proof it never will be.
        await parkForReview(
          'reconciliation: its workflow ended with an execute whose outcome was unknown; the transfer still shows CREATED',
          [
            {
              at: new Date().toISOString(),
              operation: 'transfers.retrieve',
              requestReferenceNo: read.requestReferenceNo,
              httpStatus: 200,
              code: 'CREATED',
              outcome: 'ok',
            },
          ],
          'the wallet says CREATED after an execute whose outcome is unknown',
        );
        return;
      case 'PROCESSING':
        note('left-for-ops', 'the wallet says PROCESSING; checked again next sweep', false);
        return;
    }
  }

  /** A FAILED funding must have moved nothing: the wallet is asked again for those that had a transfer. */
  async function recheckFailed(funding: Funding & { transferId: string }, tally: SweepTally): Promise<void> {
    const read = await readTransfer(funding.transferId);
    if (read.kind !== 'read' || (read.status !== 'APPROVED' && read.status !== 'PROCESSING')) return;
    tally.failedButExecuted({ fundingId: funding.id, transferId: funding.transferId, walletStatus: read.status });
    logger.error(
      { fundingId: funding.id, transferId: funding.transferId, walletStatus: read.status },
      'a FAILED funding whose transfer the wallet shows executed: do not fund it again; ops must look',
    );
  }

  async function sweepPayment(payment: Payment, tally: SweepTally): Promise<void> {
    const state = await workflowState(payment.workflowId);
    const note = (action: RepairAction, detail: string, repaired: boolean) =>
      tally.payment({ id: payment.id, status: payment.status, action, detail }, repaired);
    if (state === 'running') {
      note('workflow-running', 'its workflow is still working on it', false);
      return;
    }
    // Stored but never started (the API died), or its run ended unfinished: a new run resumes it
    // from the record; in EXECUTING it counts the earlier execute as one whose outcome is unknown. The owner as it
    // stands right before the start (the page was listed a while ago): the entry below is written while it still is.
    const now = await payments.get(payment.id);
    if (now.status !== payment.status) {
      note('left-for-ops', `moved on to ${now.status} since it was listed; checked again next sweep`, false);
      return;
    }
    await startPayWallet(deps.temporal, {
      workflowId: payment.workflowId,
      taskQueue: deps.taskQueue,
      paymentId: payment.id,
      status: payment.status,
      reusePolicy: 'temporal-default',
    });
    // While the payment's owner is the one read right before the start: once the run started claims it, a late entry
    // is dropped.
    await payments.recordEvent(
      payment.id,
      payment.status,
      `reconciliation: workflow ${state === 'missing' ? 'started' : 'restarted'}`,
      now.ownerFence,
    );
    note(
      'workflow-started',
      state === 'missing' ? 'the payment had no workflow' : 'its workflow ended before the payment was final',
      true,
    );
  }

  /**
   * One sweep's share of the FAILED re-check's round (`round`, as the mark holds it): the FAILED fundings with a
   * transfer updated since the round's mark (less its margin), oldest update first from the round's position, each
   * asked of the wallet, until the budget is spent (at least one funding; it is looked at before each) or the last is
   * asked, the position kept after each page and when it stops: then the round is over, and its mark moves to when it
   * began, or to the oldest it could not ask about (a 5xx, no answer) if older, which the next round asks again.
   * After a 429 the wallet is asked nothing more in this sweep, and the next reads on from that funding. Before, each
   * attempt asked every one from the first: an incident's thousands took more than the attempt's five minutes, every
   * attempt began again, and the repairs after it never ran.
   */
  async function recheckFailedRound(
    round: SweepRound,
    now: Date,
    limit: number,
    windowSeconds: number | undefined,
    tally: SweepTally,
  ): Promise<void> {
    const since = readFrom(round.through, new Date(now.getTime() - (windowSeconds ?? DAY_SECONDS) * 1000));
    const until = Date.now() + passBudget;
    let position = round.afterRow;
    // How far the round's mark may move when it ends: to when the round began (a round of many sweeps: a FAILED
    // funding written late, or stamped by a host's clock behind the database's, just behind the position is then read
    // again within the next round's margin), or to the oldest funding it could not ask about, if older.
    let markAtMost = round.afterRow ? (round.unaskedSince ?? round.through ?? now) : now;
    let unasked = 0;
    let done = 0;
    const keep = async (rateLimited: boolean) => {
      if (position) await marks.keepRowPosition('failed-recheck', position, markAtMost, round.through);
      if (rateLimited || unasked > 0)
        logger.warn(
          { unasked, rateLimited },
          'FAILED fundings the wallet could not be asked about now: asked again by the next sweep or round',
        );
    };
    for (;;) {
      const page = await fundings.listFailedWithTransfer({ since, after: position, limit });
      for (const funding of page) {
        stopIfCancelled();
        // The budget, looked at before each funding (a slow wallet's page could take the attempt's five minutes).
        if (done > 0 && Date.now() >= until) return keep(false);
        if (funding.transferId) {
          try {
            await recheckFailed({ ...funding, transferId: funding.transferId }, tally);
          } catch (error) {
            if (!isWalletTransient(error)) throw error;
            // Asked nothing more in this sweep; the next reads on from this funding.
            if (error instanceof ApplicationFailure && isRateLimited(error)) return keep(true);
            unasked += 1;
            if (funding.updatedAt < markAtMost) markAtMost = funding.updatedAt;
          }
        }
        position = { at: funding.updatedAt, id: funding.id };
        done += 1;
        heartbeat();
      }
      if (page.length < limit) break;
      // After each page: an attempt cut off mid-round loses at most a page.
      await marks.keepRowPosition('failed-recheck', position!, markAtMost, round.through);
    }
    await marks.advance('failed-recheck', markAtMost < now ? markAtMost : now, round.through);
    if (unasked > 0)
      logger.warn({ unasked }, 'FAILED fundings the wallet could not be asked about now: asked again next round');
  }

  /**
   * One sweep's share of the round over every hold (`round`, as the mark holds it): from its position (or the first
   * hold), a page of a range at a time, each range beginning at the next id a transaction took, until the budget is
   * spent (at least one page) or the last hold is read: then the round is over, and its mark is `now`.
   */
  async function passOverEveryHold(
    round: { through: Date | null; afterId: bigint | null },
    now: Date,
    limit: number,
    settleOpen: (open: Array<{ id: string; status: FundingStatus }>) => Promise<boolean>,
  ): Promise<void> {
    const until = Date.now() + passBudget;
    /** The range from the first id a transaction took after `after` on; null past the last: the round is over. */
    const rangeAfter = async (after: bigint) => {
      const next = await fundings.ledgerTransactionIdAfter(after);
      return next === null ? null : { after: next - 1n, through: next - 1n + OPEN_HOLD_RANGE };
    };
    let range = await rangeAfter(round.afterId ?? 0n);
    while (range) {
      const page = await fundings.listFinalWithOpenHoldAmong({ ...range, limit });
      await settleOpen(page);
      range = page.length < limit ? await rangeAfter(range.through) : { ...range, after: page.at(-1)!.holdId };
      if (!range) break;
      await marks.keepPosition('open-holds-full', range.after, round.through);
      if (Date.now() >= until) return;
    }
    await marks.advance('open-holds-full', now, round.through);
  }

  return {
    async sweepStuckFundings(input: SweepInput): Promise<SweepReport> {
      // A funding is swept when its owner has shown nothing for this long (its age does not count);
      // a payment, when it is this old.
      // On the database's clock: every time compared is one it stored (owner_seen_at, created_at).
      const now = await deps.databaseNow();
      const before = new Date(now.getTime() - input.olderThanSeconds * 1000);
      const limit = input.limit ?? 200;
      // Counts of everything, lists of the first few: the report is one Temporal payload (sweep-tally.ts).
      const tally = createSweepTally({ logger, metrics: deps.metrics });
      const { report } = tally;
      const pass: SweepPassState = {
        resolveTimedOut: false,
        unasked: null,
        reviewsUntil: null,
        reviewsAsked: 0,
        transientInARow: 0,
      };
      for (const candidates of [fundings.listUnfinished, fundings.listStrayBatchItems]) {
        for await (const funding of everyRow((after) =>
          candidates({ idleSince: before, limit, ...(after ? { after } : {}) }),
        )) {
          stopIfCancelled();
          report.checked += 1;
          await sweepFunding(funding, before, tally, pass);
          heartbeat();
        }
      }
      // FAILED fundings that had a transfer, each asked of the wallet again in the sweeps of the hour after it failed
      // (from the pass's mark, fundings/sweep-marks.ts), not in every sweep of a day: a round at a time, for the pass's
      // budget a sweep (recheckFailedRound).
      await recheckFailedRound(await marks.roundOf('failed-recheck'), now, limit, input.recheckFailedSeconds, tally);
      for await (const payment of everyRow((after) =>
        payments.listUnfinished({ createdBefore: before, limit, ...(after ? { after } : {}) }),
      )) {
        stopIfCancelled();
        report.checked += 1;
        await sweepPayment(payment, tally);
        heartbeat();
      }
      // The ledger's side: a final funding's hold is settled in the same transaction as its final
      // state, so an open one is a crash or a hand-made repair; settle it by the funding's status.
      // The fundings finished since the pass's mark each sweep (a read that found a page's worth leaves its mark: the
      // next sweep reads on); every hold ever written once a day, last (below).
      const settleOpen = async (open: Array<{ id: string; status: FundingStatus }>) => {
        for (const { id, status } of open) {
          stopIfCancelled();
          tally.holdSettled({ fundingId: id, status, action: await fundings.settleFinalHold(id) });
        }
        heartbeat();
        return open.length < limit;
      };
      const openMark = await marks.through('open-holds');
      const openSince = readFrom(openMark, new Date(now.getTime() - DAY_MS));
      if (await settleOpen(await fundings.listFinalWithOpenHold({ since: openSince, limit })))
        await marks.advance('open-holds', now, openMark);
      // Batches: a RUNNING or PAUSED batch has a runner; one that never started (the start failed
      // after the batch was stored or approved) or that closed is started again. The runner only
      // dispatches PENDING items, each once, so a second runner adds nothing twice.
      for (const batch of (await deps.batches?.listActive()) ?? []) {
        if (batch.state === 'AWAITING_APPROVAL') continue;
        const runner = await workflowState(batch.workflowId);
        if (runner === 'running') continue;
        await startFundBatch(deps.temporal, {
          taskQueue: deps.taskQueue,
          input: { batchId: batch.id, maxInFlight: deps.batches!.maxInFlight },
          again: runner === 'closed',
        });
        tally.batchRunner({
          batchId: batch.id,
          state: batch.state,
          detail: runner === 'missing' ? 'no runner: started' : 'its runner had closed: started again',
        });
        logger.warn({ batchId: batch.id, state: batch.state, runner }, 'batch runner started by the sweep');
      }
      // Lanes (workflows/fund-lane.ts) run for good: one that is gone (terminated, failed) is started
      // again. A lane's funding left PENDING meanwhile is started on its own above once it is idle.
      // Not known (Temporal did not answer the question): left to the next sweep, the repairs above kept.
      const startsLanes =
        deps.lanes === true &&
        (await (deps.buildIsCurrent?.() ?? Promise.resolve(true)).catch((error: Error) => {
          logger.warn({ err: error.message }, 'lanes: could not tell whether this build is current');
          return false;
        }));
      if (deps.lanes && !startsLanes)
        logger.info('lanes: left to the current build’s sweep (this build is not current)');
      for (let lane = 0; startsLanes && lane < LANE_COUNT; lane += 1) {
        const run = await workflowState(laneWorkflowId(deps.taskQueue, lane));
        if (run === 'running') continue;
        await startFundLane(deps.temporal, { taskQueue: deps.taskQueue, lane });
        logger.warn({ lane, run }, 'lane started by the sweep');
      }
      // Every hold ever written (a repair in SQL may leave updated_at as it was), once a day, last: a range of ids at a
      // time from where the last sweep stopped, its position kept after each page, for the pass's budget. A ledger of
      // years is read over several sweeps; before, each attempt began again at the first hold, and one that took more
      // than the attempt's five minutes never ended, nor let the repairs after it run.
      const holdRound = await marks.roundOf('open-holds-full');
      if ((holdRound.through ?? new Date(0)) <= new Date(now.getTime() - DAY_MS))
        await passOverEveryHold(holdRound, now, limit, settleOpen);
      // Every funding and payment in review, whichever this sweep asked the wallet about: the first of each, and how
      // many.
      const fundingReviews = await fundings.listInReview(MAX_SWEEP_LISTED);
      tally.fundingsNeedingReview(
        fundingReviews.map((funding) => ({
          fundingId: funding.id,
          transferId: funding.transferId,
          since: funding.updatedAt.toISOString(),
          reason: funding.reviewReason,
        })),
        fundingReviews.length < MAX_SWEEP_LISTED ? fundingReviews.length : await fundings.countInReview(),
      );
      const review = await payments.listInReview(MAX_SWEEP_LISTED);
      tally.paymentsNeedingReview(
        review.map((payment) => ({
          id: payment.id,
          walletPaymentId: payment.walletPaymentId,
          paymentId: payment.walletPaymentId,
          since: payment.updatedAt.toISOString(),
          reason: payment.reviewReason,
        })),
        review.length < MAX_SWEEP_LISTED ? review.length : await payments.countInReview(),
      );
      const { counts } = report;
      const attention = counts.paymentsNeedingReview + counts.fundingsNeedingReview + counts.failedButExecuted;
      if (report.repaired > 0 || attention > 0) {
        logger.warn(
          {
            checked: report.checked,
            repaired: report.repaired,
            needsReview: counts.paymentsNeedingReview,
            fundingsNeedReview: counts.fundingsNeedingReview,
            failedButExecuted: counts.failedButExecuted,
            fundings: counts.fundings,
            payments: counts.payments,
          },
          'sweep',
        );
      }
      return report;
    },
  };
}

/**
 * An attempt Temporal cut off (its heartbeat timed out, so another attempt may start) or
 * cancelled stops before its next item: two attempts never repair side by side.
 */
function stopIfCancelled(): void {
  let signal: AbortSignal;
  try {
    signal = Context.current().cancellationSignal;
  } catch {
    return; // Not inside an activity (a test calling the sweep directly).
  }
  if (signal.aborted) throw new CancelledFailure('the sweep attempt was cancelled: it writes nothing more');
}

/** Tells Temporal the sweep is alive, when it runs as an activity (a long sweep is not a hung one). */
function heartbeat(): void {
  try {
    Context.current().heartbeat();
  } catch {
    // Not inside an activity (a test calling the sweep directly): nothing to tell.
  }
}
