// fundWallet's contract: what its starters and the workflow itself agree on (type name, input and
// result, query and signal, workflow id, failure types) and the one start every starter uses.
// Imported by the workflow bundle: runtime imports from @temporalio/* and workflows/ only, and the
// workflow's signature declared here (the workflow file imports this one, never the reverse).
import type { Client } from '@temporalio/client';
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { WalletCallEvidence } from '../domain/review.ts';
import type {
  CreateFundingRequest,
  FinalFundingStatus,
  FundingResolutionOutcome,
  FundingResult,
  FundingStatus,
} from '../domain/funding.ts';
import { idempotentWorkflowId, ignoringClosedRun, startOncePolicies, type Sha256Hex } from './idempotent-start.ts';
import { kindKey, recipientTypeKey, statusKey } from './search-attribute-keys.ts';

/** The workflow type: the name Temporal and every stored history know it by (the function's name). */
export const fundWalletWorkflowType = 'fundWallet';

export interface FundWalletInput {
  fundingId: string;
  /**
   * Set by continue-as-new during a long reconciliation: skip straight to retrieve, with the
   * executes so far and the evidence a review would need.
   */
  reconcile?: { transferId: string; polls: number; executeAttempts?: number; evidence?: WalletCallEvidence[] };
  /**
   * Set by a shared run (a batch's runner, a lane) that hands the funding over after the wallet said
   * "later" to its create or its execute (a 429, nothing sent): the run waits this long (the
   * wallet's Retry-After) before its first step, as its own one pass would have.
   */
  waitBeforeMs?: number;
}

/** Ids and states only, never a token or a code. */
export type FundWalletResult = FundingResult;

/** fundWallet's signature: what starters type-check their arguments and results against. */
export type FundWalletWorkflow = (input: FundWalletInput) => Promise<FundWalletResult>;

/** The funding's status as the workflow sees it. Wire name 'status': stored histories carry it. */
export const fundingStatusQuery = defineQuery<FundingStatus>('status');
/** A nudge after the API cancelled the funding in the database (the database decides). Wire name 'cancelled'. */
export const fundingCancelledSignal = defineSignal('cancelled');

/** How a funding in NEEDS_REVIEW is resolved (contract section 11): the outcome, why, and on whose word. */
export interface ResolveFundingUpdateInput {
  outcome: FundingResolutionOutcome;
  note: string;
  /** The ops key's name, or `reconciliation` when the sweep read the wallet's final state. */
  resolvedBy: string;
  /** A DECLINED read back from the wallet: its 60xx code. */
  code?: string | null;
  /** The retrieve that showed the wallet's final state, when the wallet decided it. */
  requestReferenceNo?: string | null;
}
/** Resolves a funding parked in NEEDS_REVIEW. Wire name 'resolve' (as payWallet's). */
export const resolveFundingUpdate = defineUpdate<{ status: FinalFundingStatus }, [ResolveFundingUpdateInput]>(
  'resolve',
);

/**
 * Start-to-close of fundWallet's wallet activities (ms). The worker checks WALLET_TIMEOUT_MS
 * against the execute's at start-up: an execute must always end before its activity can time out.
 */
export const fundWalletActivityTimeouts = {
  createMs: 25_000,
  executeMs: 20_000,
  retrieveMs: 20_000,
  /**
   * The one pass (a local activity): the token vault's refresh lock (up to 50 s), a create, an execute and the writes.
   */
  onePassMs: 120_000,
} as const;

/** The ApplicationFailure types the funding activities throw and fundWallet never retries. */
export const fundingFailureTypes = {
  /** No funding row with this id. */
  notFound: 'FundingNotFound',
  /** The row cannot be acted on (no amount, no cash-in code, no link, no final state). */
  corrupt: 'FundingCorrupt',
  /**
   * Another run claimed the funding since this one did (docs/architecture.md, who owns a
   * funding): the overtaken run writes and calls nothing more. A workflow run that gets it is a
   * stale copy (its commands are refused), or was taken over by ops' resolve or the sweep.
   */
  ownerLost: 'FundingOwnerLost',
} as const;

/** The funding's workflow id for an Idempotency-Key; stored on the funding row, which later starts use. */
export function fundingWorkflowId(idempotencyKey: string, sha256Hex: Sha256Hex): string {
  return idempotentWorkflowId('funding', idempotencyKey, sha256Hex);
}

export interface StartFundWalletOptions {
  /** The id stored on the funding row (fundingWorkflowId). */
  workflowId: string;
  taskQueue: string;
  fundingId: string;
  /** The funding's status and recipient now: the search attributes the run starts with. */
  status: FundingStatus;
  recipientType: CreateFundingRequest['recipient']['type'];
  /**
   * What a closed run with this id does to the start. 'reject-duplicate' (the API): the request
   * already ran, so nothing is started and no error is raised. 'temporal-default' (the
   * sweep, which starts only after Temporal found no run with this id): the
   * server's default reuse policy, as the sweep has always sent it.
   */
  reusePolicy: 'reject-duplicate' | 'temporal-default';
  /** FundWalletInput.waitBeforeMs: a hand-over after the wallet said "later". */
  waitBeforeMs?: number;
}

/** Starts fundWallet, or finds it running (USE_EXISTING either way). */
export async function startFundWallet(client: Client, options: StartFundWalletOptions): Promise<void> {
  const args: [FundWalletInput] = [
    {
      fundingId: options.fundingId,
      ...(options.waitBeforeMs === undefined ? {} : { waitBeforeMs: options.waitBeforeMs }),
    },
  ];
  const start = {
    taskQueue: options.taskQueue,
    workflowId: options.workflowId,
    args,
    searchAttributes: {
      [statusKey.name]: [options.status],
      [kindKey.name]: ['FUNDING'],
      [recipientTypeKey.name]: [options.recipientType],
    },
  };
  if (options.reusePolicy === 'temporal-default') {
    await client.workflow.start<FundWalletWorkflow>(fundWalletWorkflowType, {
      ...start,
      workflowIdConflictPolicy: 'USE_EXISTING',
    });
    return;
  }
  await ignoringClosedRun(
    client.workflow.start<FundWalletWorkflow>(fundWalletWorkflowType, { ...start, ...startOncePolicies }),
  );
}

/**
 * Why a funding whose create answer does not match the request waits for a person: the same words
 * whether the one pass (activities/funding.ts) or the workflow's step path parks it.
 */
export const mismatchReviewReason = (detail: string, transferId: string) =>
  `the wallet's create answer does not match the request (${detail}); transfer ${transferId} was not executed`;

// The activities fundWallet schedules (activities/funding.ts implements them): their signatures
// and the results they answer with are the workflow's, declared here; the activities take them
// from this contract, never the reverse. Results are data: ids, states and codes, never a token
// or a code. `fence` is the run's claim from loadFunding: a step that carries it is refused once
// another run claimed the funding (optional only for the previous release's runs from before
// fencing: FundingSnapshot.fence says why, and when it goes).

/** Where a funding stands when a run takes it on (loadFunding). */
export interface FundingSnapshot {
  fundingId: string;
  status: FundingStatus;
  recipientType: 'CODE' | 'TOKEN';
  transferId: string | null;
  /**
   * The run's claim (loadFunding takes the funding on): every later step of the run passes it,
   * and is refused once another run claimed the funding. Optional because the previous release
   * (360981c) still schedules steps without it: its runs from before fencing, replayed behind
   * their patched() gates (test/replay/histories/archive/release-360981c/before-*), and an activity
   * task such a run left scheduled, which this build's worker runs after the upgrade. It goes with
   * those gates (docs/changing-workflows.md, Retiring the previous release's gates).
   */
  fence?: number;
}

/**
 * What a park for review found: parked (now or by this run before), or the final state another writer had already
 * reached.
 */
export type ParkOutcome =
  { parked: true } | { parked: false; status: FinalFundingStatus; errorCode: string | null; transferId: string | null };

export type CreateOutcome =
  | { kind: 'created'; transferId: string; requestReferenceNo: string | null }
  | { kind: 'refused'; status: 'REJECTED' | 'FAILED'; code: string; requestReferenceNo: string | null }
  | { kind: 'cancelled' }
  /** The wallet's answer names another amount, currency or recipient type than asked: never executed. */
  | { kind: 'mismatch'; transferId: string; requestReferenceNo: string; detail: string };

/** Where a transfer stands, as the workflow needs it. */
export type TransferProgress =
  | { kind: 'final'; status: 'APPROVED' | 'DECLINED'; declineCode: string | null; requestReferenceNo: string }
  | { kind: 'processing'; requestReferenceNo: string }
  | { kind: 'not-executed'; requestReferenceNo: string }
  | { kind: 'expired'; requestReferenceNo: string | null }
  | { kind: 'unknown'; code: string; requestReferenceNo: string | null; httpStatus?: number | null }
  /** Retrieve refused (404 TRANSFER_NOT_FOUND, 401): no state; after a bound the workflow asks for review. */
  | { kind: 'refused'; code: string; requestReferenceNo: string; httpStatus: number | null };

/**
 * What one pass of a funding (fundInOnePass) got to. Everything it wrote went through the record,
 * as the step-by-step activities write it; the workflow goes on from here.
 */
export type OnePassOutcome =
  /** Final: this pass finished it (approved, declined, refused, cancelled, expired). */
  | { kind: 'finished'; status: FinalFundingStatus; transferId: string | null; errorCode: string | null }
  /**
   * An execute was sent and the transfer is not final yet (or its outcome is unknown): the workflow's loop takes it on,
   * with the pass's claim.
   */
  | { kind: 'executed'; transferId: string; progress: TransferProgress; fence?: number }
  /**
   * EXECUTING with no execute sent (the wallet said try again later): the execute activity sends it, after
   * `retryAfterMs` when the wallet said when.
   */
  | { kind: 'execute'; transferId: string; retryAfterMs: number | null; fence?: number }
  /** The wallet's create answer does not match the request: kept unexecuted, parked for review by the pass. */
  | { kind: 'mismatch'; transferId: string; requestReferenceNo: string; detail: string; fence?: number }
  /**
   * The wallet said try the create again later (429, refused connection): the create activity does, after
   * `retryAfterMs` when it said when.
   */
  | { kind: 'create-later'; retryAfterMs: number | null; rateLimited?: boolean }
  /**
   * Not a fresh PENDING funding, out of time, or overtaken by another run's claim: the
   * step-by-step path goes on from the record (and claims it).
   */
  | { kind: 'steps' };

/** The final state finishFunding writes. */
export interface FinishInput {
  status: FinalFundingStatus;
  code?: string | null;
  requestReferenceNo?: string | null;
  detail?: string | null;
  /** A state that says nothing was sent (a refused create): written only while no execute can have been. */
  beforeExecute?: boolean;
}

/** The activities fundWallet schedules, as activities or local activities. */
export interface FundWalletActivities {
  /**
   * A fresh funding in one pass, run by the workflow as one local activity: PENDING → CREATING,
   * create (transferId stored before anything can execute it), → EXECUTING unless cancelled,
   * the one execute, and the final state, each written through the record as the step-by-step
   * activities write them. Each move counts only if this pass made it: wherever the record says
   * someone else got there first (a cancel, another run of the funding), or the pass would wait
   * or retry, it stops and the workflow goes on from the record. Run again (the workflow task
   * failed after it), it finds the funding past PENDING and does nothing. It never starts a
   * wallet call that could outlive its own time-out: a pass that timed out is not still calling.
   */
  fundInOnePass(fundingId: string): Promise<OnePassOutcome>;
  /**
   * Takes the funding on for a run of its workflow and answers where it stands: from here on,
   * whatever an earlier run (an orphaned pass, a stale copy of the workflow) still tries to
   * write is refused.
   */
  loadFunding(fundingId: string): Promise<FundingSnapshot>;
  /** PENDING → CREATING; false when the funding was cancelled (or is otherwise past creating). */
  markCreating(fundingId: string, fence?: number): Promise<boolean>;
  /**
   * Creates the transfer intent and stores its transferId before anything can execute it. A
   * stored transferId is returned as is: a retried activity never creates a second intent for
   * a funding that already has one.
   */
  createTransfer(fundingId: string, fence?: number): Promise<CreateOutcome>;
  /**
   * CREATING → EXECUTING unless cancelled: after this, cancel is refused. The event carries the
   * create call's Request-Reference-No: the created intent is what moved the funding on. True
   * also when this run moved it already (a retried step); never for another run's move.
   */
  beginExecute(fundingId: string, createRequestReferenceNo: string | null, fence?: number): Promise<boolean>;
  /**
   * The one execute of the funding's transfer. An unknown outcome is reported, not retried. A
   * retried attempt (the worker died, the activity timed out) may follow an execute that reached
   * the wallet: it asks retrieve first, and sends execute again only when the transfer still
   * shows CREATED. No call starts that could outlive the attempt:
   * an execute still open when the next attempt starts would race it.
   */
  executeTransfer(fundingId: string, transferId: string, fence?: number): Promise<TransferProgress>;
  /** Reads the transfer back; transient failures are retried by Temporal (a read is safe). */
  retrieveTransfer(fundingId: string, transferId: string): Promise<TransferProgress>;
  /** EXECUTING → RECONCILING: the execute's outcome is unknown and retrieve will learn it. */
  markReconciling(fundingId: string, requestReferenceNo: string | null, detail: string, fence?: number): Promise<void>;
  /**
   * → NEEDS_REVIEW with why and the wallet calls behind the doubt; the funding keeps what it
   * holds. A funding another writer already finished is not parked: its final state is
   * answered, for the workflow to end with.
   */
  parkFundingForReview(
    fundingId: string,
    reason: string,
    evidence: WalletCallEvidence[],
    fence?: number,
  ): Promise<ParkOutcome>;
  /** Resolves a funding in NEEDS_REVIEW (the workflow's resolve update), with who and why. */
  resolveFunding(
    fundingId: string,
    input: ResolveFundingUpdateInput,
  ): Promise<{ status: FinalFundingStatus; errorCode: string | null }>;
  /** Writes the final state once; a funding already final keeps its state (returned). */
  finishFunding(
    fundingId: string,
    input: FinishInput,
    fence?: number,
  ): Promise<{ status: FinalFundingStatus; errorCode: string | null; transferId: string | null }>;
}
