// fundWallet's contract: what its starters and the workflow itself agree on (type name, input and
// result, query and signal, workflow id, failure types) and the one start every starter uses.
// Imported by the workflow bundle: runtime imports from @temporalio/* and workflows/ only, and the
// workflow's signature declared here (the workflow file imports this one, never the reverse).
import type { Client } from '@temporalio/client';
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { WalletCallEvidence } from '../domain/review.ts';
import type { CreateFundingRequest, FinalFundingStatus, FundingResolutionOutcome, FundingResult, FundingStatus } from '../domain/funding.ts';
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
}

/** Ids and states only, never a token or a code. */
export type FundWalletResult = FundingResult;

/** fundWallet's signature: what starters type-check their arguments and results against. */
export type FundWalletWorkflow = (input: FundWalletInput) => Promise<FundWalletResult>;

/** The funding's status as the workflow sees it. Wire name 'status': stored histories carry it. */
export const fundingStatusQuery = defineQuery<FundingStatus>('status');
/** A nudge after the API cancelled the funding in the database (the database decides). Wire name 'cancelled'. */
export const fundingCancelledSignal = defineSignal('cancelled');

/** How a funding in NEEDS_REVIEW is settled (contract section 11): the outcome, why, and on whose word. */
export interface ResolveFundingUpdateInput {
  outcome: FundingResolutionOutcome;
  note: string;
  /** The ops key's name, or `reconciliation` when the sweep read the wallet's final state. */
  resolvedBy: string;
  /** A DECLINED read back from the wallet: its 60xx code. */
  code?: string | null;
  /** The retrieve that showed the wallet's final state, when the wallet settled it. */
  requestReferenceNo?: string | null;
}
/** Settles a funding parked in NEEDS_REVIEW. Wire name 'resolve' (as payWallet's). */
export const resolveFundingUpdate = defineUpdate<{ status: FinalFundingStatus }, [ResolveFundingUpdateInput]>('resolve');

/**
 * Start-to-close of fundWallet's wallet activities (ms). The worker checks WALLET_TIMEOUT_MS
 * against the execute's at start-up: an execute must always end before its activity can time out.
 */
export const fundWalletActivityTimeouts = {
  createMs: 25_000,
  executeMs: 20_000,
  retrieveMs: 20_000,
  /** The one pass (a local activity): the token vault's refresh lock (up to 50 s), a create, an execute and the writes. */
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
   * reconciliation sweep, which starts only after Temporal found no run with this id): the
   * server's default reuse policy, as the sweep has always sent it.
   */
  reusePolicy: 'reject-duplicate' | 'temporal-default';
}

/** Starts fundWallet, or finds it running (USE_EXISTING either way). */
export async function startFundWallet(client: Client, options: StartFundWalletOptions): Promise<void> {
  const args: [FundWalletInput] = [{ fundingId: options.fundingId }];
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
    await client.workflow.start<FundWalletWorkflow>(fundWalletWorkflowType, { ...start, workflowIdConflictPolicy: 'USE_EXISTING' });
    return;
  }
  await ignoringClosedRun(client.workflow.start<FundWalletWorkflow>(fundWalletWorkflowType, { ...start, ...startOncePolicies }));
}

/**
 * Why a funding whose create answer does not match the request waits for a person: the same words
 * whether the one pass (activities/funding.ts) or the workflow's step path parks it.
 */
export const mismatchReviewReason = (detail: string, transferId: string) =>
  `the wallet's create answer does not match the request (${detail}); transfer ${transferId} was not executed`;
