// Fundings as a service shared by the ops API and the landing page: start one (idempotent on its
// key: one funding and one workflow per key), read it, list them, cancel one before it executes,
// resolve one in NEEDS_REVIEW.
// The funding's rows change only through the funding record (funding-record.ts).
// When Temporal cannot take a call now (lib/workflow-unavailable.ts), the answer says what is true:
// a funding stored whose workflow could not be started is `not-started` (the same request with
// its key starts it; the sweep does otherwise), a resolve its workflow could not take changed
// nothing, and a cancel is done in the database whether or not its workflow hears of it.
import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import {
  fundingResolutions,
  fundingReviewStatus,
  isFinalFundingStatus,
  type CreateFundingRequest,
  type FundingStatus,
  type FundingView,
  type ResolveFundingRequest,
} from '../domain/funding.ts';
import { currencyRefusal, CURRENCY_NOT_ACCEPTED, moneyOf, normaliseAmount } from '../domain/money.ts';
import type { Database } from '../lib/database.ts';
import type { ListPage, ListQuery } from '../lib/list-page.ts';
import type { Logger } from '../lib/logger.ts';
import { resolveReview } from '../reviews/resolve-review.ts';
import type { Metrics } from '../lib/metrics.ts';
import { workflowRefusalOf, type WorkflowRefusal } from '../lib/workflow-unavailable.ts';
import type { TokenCipher } from '../lib/token-cipher.ts';
import type { FundingRefusalCode } from '../domain/ledger.ts';
import { ownerOfLink } from '../domain/link.ts';
import { InsufficientFundsError, type Ledger } from '../ledger/ledger.ts';
import { LimitRefusal, type FundingLimits } from '../ledger/limits.ts';
import { createFundingRecord, type FundingWithEvents } from './funding-record.ts';
import { createTreasuryFundingsRecord } from './treasury-fundings-record.ts';
import type { FundingPaths } from './funding-paths.ts';
import { LANE_COUNT } from '../workflows/fund-lane.contract.ts';
import { fundingView } from './funding-view.ts';
import { requestFingerprint, sha256Hex } from '../lib/idempotency.ts';
import { readBackDone } from '../lib/admission.ts';
import {
  fundingCancelledSignal,
  fundingWorkflowId,
  resolveFundingUpdate,
  startFundWallet,
  type ResolveFundingUpdateInput,
} from '../workflows/fund-wallet.contract.ts';

export interface FundingServiceDependencies {
  database: Database;
  temporal: Client;
  taskQueue: string;
  cipher: TokenCipher;
  /** HMAC key for request fingerprints (a cash-in code is never stored or hashed bare). */
  fingerprintKey: Buffer;
  logger: Logger;
  /** Counts fundings cancelled here (FAILED) among the finished ones, and those started by path; absent: none. */
  metrics?: Pick<Metrics, 'fundingFinished' | 'fundingStarted'>;
  /** Which run carries a new funding (FUNDING_LANES); absent: its own workflow, always. */
  paths?: FundingPaths;
  /** The partner's ledger (with TREASURY_LIMIT); absent: one with no treasury limit. */
  ledger?: Ledger;
  /** Section 10's limits; absent: none. */
  limits?: FundingLimits;
}

export type StartFundingResult =
  | { kind: 'created'; funding: FundingView }
  | { kind: 'existing'; funding: FundingView }
  /**
   * Stored, with its hold, but Temporal could not be asked now to start its workflow. Stored by this
   * request: nothing runs yet. By an earlier one with its key: its workflow may run or not (that
   * request may have started it). The same request with the same key answers it and starts it;
   * else the sweep starts it once it has been idle RECONCILE_AFTER_SECONDS.
   */
  | {
      kind: 'not-started';
      funding: FundingView;
      refusal: WorkflowRefusal;
      storedBy: 'this-request' | 'an-earlier-request';
    }
  | { kind: 'key-reused' }
  | { kind: 'link-not-found' }
  /**
   * Refused before anything was stored (422): not enough available, or a limit; `detail` says which and what is left.
   */
  | { kind: 'refused'; code: FundingRefusalCode; detail: string }
  /**
   * A USER_BALANCE source for a recipient that is not that user's own wallet, by a caller who may not pay one user's
   * balance to another.
   */
  | { kind: 'source-not-recipient' };

/** What the caller may do beyond funding (from the ops key's scopes). */
export interface FundingAuthority {
  /** Draw a partner user's balance for a recipient other than that user's own wallet (the `admin` scope). */
  mayPayOthersBalance?: boolean;
}

export type CancelFundingResult =
  { kind: 'cancelled'; funding: FundingView } | { kind: 'not-found' } | { kind: 'not-cancellable'; status: string };

export type ResolveFundingResult =
  | { kind: 'resolved'; funding: FundingView }
  | { kind: 'not-found' }
  | { kind: 'not-in-review'; status: string }
  /** APPROVED for a funding walletflow never sent an execute for (no transfer of its own: its create was refused). */
  | { kind: 'never-executed' }
  /**
   * Its workflow could not take the resolution now: the funding is still NEEDS_REVIEW (after a time-out, the resolution
   * may still be taken).
   */
  | { kind: 'workflow-unavailable'; refusal: WorkflowRefusal };

export function createFundingService(deps: FundingServiceDependencies) {
  const record = createFundingRecord({
    database: deps.database,
    cipher: deps.cipher,
    ...(deps.metrics ? { metrics: deps.metrics } : {}),
    ...(deps.ledger ? { ledger: deps.ledger } : {}),
    ...(deps.limits ? { limits: deps.limits } : {}),
  });
  // Treasury fundings accepted together are stored together (fundings/treasury-fundings-record.ts).
  const treasuryFundings = createTreasuryFundingsRecord({
    database: deps.database,
    cipher: deps.cipher,
    ...(deps.ledger ? { ledger: deps.ledger } : {}),
    ...(deps.limits ? { limits: deps.limits } : {}),
    insertAlone: record.insert,
  });
  const fingerprint = (body: CreateFundingRequest) => {
    const amount = normaliseAmount(body.amount);
    // A body without a source fingerprints as before (existing keys keep matching); a user source adds itself.
    const source = body.source?.type === 'USER_BALANCE' ? ['USER_BALANCE', body.source.partnerUserId] : [];
    return requestFingerprint(
      deps.fingerprintKey,
      body.recipient.type === 'CODE'
        ? ['CODE', body.recipient.code, amount.currency, amount.value, ...source]
        : ['TOKEN', body.recipient.linkId.toLowerCase(), amount.currency, amount.value, ...source],
    );
  };

  /** What is left on the account a refusal names, for its detail. */
  const insufficient = async (error: InsufficientFundsError): Promise<StartFundingResult> => {
    const view = deps.ledger ? await deps.ledger.account(deps.database, error.account, error.currency) : null;
    const left = view ? `; ${view.available.value} ${view.available.currency} available` : '';
    return {
      kind: 'refused',
      code: 'INSUFFICIENT_FUNDS',
      detail: `${error.account} does not cover this funding${left}`,
    };
  };

  /** Starts the funding's workflow; the refusal when Temporal cannot take the start now (anything else is thrown). */
  const startWorkflow = async (
    fundingId: string,
    workflowId: string,
    recipientType: 'CODE' | 'TOKEN',
  ): Promise<WorkflowRefusal | null> => {
    try {
      await startFundWallet(deps.temporal, {
        workflowId,
        taskQueue: deps.taskQueue,
        fundingId,
        status: 'PENDING',
        recipientType,
        reusePolicy: 'reject-duplicate',
      });
      return null;
    } catch (error) {
      const refusal = workflowRefusalOf(error);
      if (!refusal) throw error;
      deps.logger.warn(
        { fundingId, workflowId, reason: refusal.reason },
        'funding stored, its workflow not started: Temporal refused the start',
      );
      return refusal;
    }
  };

  const view = async (fundingId: string) => {
    const funding = await record.findWithEvents(fundingId);
    return funding ? fundingView(funding) : null;
  };

  return {
    view,

    /** A page of GET /ops/fundings, as the API shows fundings. */
    async list(query: ListQuery<FundingStatus>): Promise<ListPage<FundingView>> {
      const page = await record.listPage(query);
      return page.kind === 'page' ? { ...page, items: page.items.map(fundingView) } : page;
    },

    /** Validated input only (createFundingSchema, idempotencyKeySchema). */
    async start(
      idempotencyKey: string,
      body: CreateFundingRequest,
      actor?: string,
      authority: FundingAuthority = {},
    ): Promise<StartFundingResult> {
      /**
       * A key already taken is answered as the store would answer it (its funding, or IDEMPOTENCY_KEY_REUSED for
       * another body), whatever the refusal before the store would have said: read only on the way to one, so a
       * funding that passes costs no extra read. `requestFingerprint` null: a body no funding was stored with (a
       * currency walletflow does not take, whose amount no fingerprint may read).
       */
      const unlessKeyTaken = async (
        refusal: StartFundingResult,
        requestFingerprint: string | null,
      ): Promise<StartFundingResult> => {
        const earlier = await record.findByIdempotencyKey(idempotencyKey);
        return earlier ? answerTakenKey(earlier, requestFingerprint) : refusal;
      };
      const answerTakenKey = async (
        existing: FundingWithEvents,
        requestFingerprint: string | null,
      ): Promise<StartFundingResult> => {
        if (existing.requestFingerprint !== requestFingerprint) return { kind: 'key-reused' };
        // The first request may have stored the funding and died (or been refused) before starting its workflow.
        if (!isFinalFundingStatus(existing.status)) {
          // A lane's funding is its lane's (or, once the lane handed it over, its own workflow's,
          // which the hand-over started): the lane is started if it is not running, nothing else.
          // With lanes off, or a lane no longer run, its own workflow (its claim is atomic against a lane's).
          const refusal =
            existing.lane !== null && deps.paths && deps.paths.mode !== 'off' && existing.lane < LANE_COUNT
              ? await deps.paths.ensureLane(existing.lane)
              : await startWorkflow(existing.id, existing.workflowId, existing.recipientType);
          if (refusal)
            return { kind: 'not-started', storedBy: 'an-earlier-request', funding: fundingView(existing), refusal };
        }
        return { kind: 'existing', funding: fundingView(existing) };
      };
      const foreign = currencyRefusal(body.amount.currency);
      if (foreign) return unlessKeyTaken({ kind: 'refused', code: CURRENCY_NOT_ACCEPTED, detail: foreign }, null);
      const requestFingerprint = fingerprint(body);
      const workflowId = fundingWorkflowId(idempotencyKey, sha256Hex);
      let recipientOwner: string | null = null;
      if (body.recipient.type === 'TOKEN') {
        const link = await deps.database.link.findUnique({
          where: { id: body.recipient.linkId },
          select: { status: true, partnerUserId: true, kind: true },
        });
        if (!link) return unlessKeyTaken({ kind: 'link-not-found' }, requestFingerprint);
        recipientOwner = ownerOfLink(link);
      }
      // A user's balance goes to that user's own wallet (a fund key may not pay it elsewhere),
      // unless the caller may pay one user's balance to another (the admin scope).
      if (
        body.source?.type === 'USER_BALANCE' &&
        !authority.mayPayOthersBalance &&
        recipientOwner !== body.source.partnerUserId
      ) {
        return unlessKeyTaken({ kind: 'source-not-recipient' }, requestFingerprint);
      }
      const fundingId = randomUUID();
      const recipient = body.recipient;
      // Under load, a lane's run carries it (one user's fundings share a lane); else its own workflow.
      const path = deps.paths
        ? await deps.paths.choose(recipient.type === 'TOKEN' ? recipient.linkId.toLowerCase() : fundingId)
        : ({ kind: 'workflow' } as const);
      let inserted: boolean;
      try {
        const insert = body.source?.type === 'USER_BALANCE' ? record.insert : treasuryFundings.insert;
        inserted = await insert({
          id: fundingId,
          idempotencyKey,
          requestFingerprint,
          workflowId,
          recipient,
          amount: moneyOf(body.amount),
          ...(body.source ? { source: body.source } : {}),
          ...(actor ? { requestedBy: actor } : {}),
          ...(path.kind === 'lane' ? { lane: path.lane } : {}),
        });
      } catch (error) {
        // Refused in the storing transaction: nothing was stored and no workflow starts.
        if (error instanceof InsufficientFundsError) return insufficient(error);
        if (error instanceof LimitRefusal) return { kind: 'refused', code: error.code, detail: error.detail };
        throw error;
      }
      if (inserted) {
        deps.paths?.accepted(path);
        const refusal =
          path.kind === 'lane'
            ? await deps.paths!.ensureLane(path.lane)
            : await startWorkflow(fundingId, workflowId, recipient.type);
        if (refusal)
          return { kind: 'not-started', storedBy: 'this-request', funding: (await view(fundingId))!, refusal };
        deps.metrics?.fundingStarted(path.kind);
        deps.logger.info(
          {
            fundingId,
            workflowId,
            recipientType: recipient.type,
            ...(path.kind === 'lane' ? { lane: path.lane } : {}),
          },
          'funding started',
        );
        return { kind: 'created', funding: (await view(fundingId))! };
      }
      return answerTakenKey(await record.getByIdempotencyKey(idempotencyKey), requestFingerprint);
    },

    /** `actor`: the ops key's name (recorded in the funding's events). */
    async cancel(fundingId: string, actor?: string): Promise<CancelFundingResult> {
      const funding = await record.find(fundingId);
      if (!funding) return { kind: 'not-found' };
      // The database decides the race with the workflow's beginExecute: only one of them wins.
      if (!(await record.cancel(funding, actor)))
        return { kind: 'not-cancellable', status: (await view(funding.id))?.status ?? funding.status };
      await deps.temporal.workflow
        .getHandle(funding.workflowId)
        .signal(fundingCancelledSignal)
        .catch((error: Error) =>
          deps.logger.warn({ fundingId: funding.id, err: error.message }, 'could not nudge the workflow after cancel'),
        );
      return { kind: 'cancelled', funding: (await readBackDone('the funding was cancelled', () => view(funding.id)))! };
    },

    /**
     * Resolves a funding in NEEDS_REVIEW (contract section 11) through its workflow's resolve update;
     * when the workflow is gone, through the record directly. Either way audited: who, how, why.
     */
    async resolve(
      fundingId: string,
      request: ResolveFundingRequest,
      resolvedBy: string,
    ): Promise<ResolveFundingResult> {
      const funding = await record.find(fundingId);
      if (!funding) return { kind: 'not-found' };
      if (funding.status !== fundingReviewStatus) return { kind: 'not-in-review', status: funding.status };
      if (!fundingResolutions(funding).includes(request.outcome)) return { kind: 'never-executed' };
      const input: ResolveFundingUpdateInput = { ...request, resolvedBy };
      const result = await resolveReview(deps.temporal, funding.workflowId, resolveFundingUpdate, [input], {
        stillWaiting: async () => (await record.find(fundingId))?.status === fundingReviewStatus,
        resolveWithoutWorkflow: async () => (await record.resolve(funding.id, input)).moved,
      });
      if (result.kind === 'workflow-unavailable') {
        deps.logger.warn(
          { fundingId, reason: result.refusal.reason },
          'funding not resolved: its workflow cannot take the resolution now',
        );
        return { kind: 'workflow-unavailable', refusal: result.refusal };
      }
      if (result.kind === 'not-waiting') return { kind: 'not-in-review', status: (await view(fundingId))!.status };
      const resolved = (await readBackDone(`the funding was resolved ${request.outcome}`, () => view(fundingId)))!;
      deps.logger.info(
        { fundingId, outcome: request.outcome, resolvedBy, through: result.through },
        'funding resolved',
      );
      return { kind: 'resolved', funding: resolved };
    },
  };
}

export type FundingService = ReturnType<typeof createFundingService>;
