// payWallet's contract: what its starters and the workflow itself agree on (type name, input and
// result, query and update, workflow id, failure types) and the one start every starter uses.
// Imported by the workflow bundle: runtime imports from @temporalio/* and workflows/ only, and the
// workflow's signature declared here (the workflow file imports this one, never the reverse).
import type { Client } from '@temporalio/client';
import { defineQuery, defineUpdate } from '@temporalio/workflow';
import type { ExecuteAttempt, FinalPaymentStatus, PaymentResult, PaymentStatus } from '../domain/payment.ts';
import { idempotentWorkflowId, ignoringClosedRun, startOncePolicies, type Sha256Hex } from './idempotent-start.ts';
import { kindKey, statusKey } from './search-attribute-keys.ts';

/** The workflow type: the name Temporal and every stored history know it by (the function's name). */
export const payWalletWorkflowType = 'payWallet';

export interface PayWalletInput {
  paymentId: string;
}

/** Ids and states only, never a token. */
export type PayWalletResult = PaymentResult;

/** payWallet's signature: what starters type-check their arguments and results against. */
export type PayWalletWorkflow = (input: PayWalletInput) => Promise<PayWalletResult>;

/** The payment's status as the workflow sees it (what the resolve validator reads). Wire name 'status'. */
export const paymentStatusQuery = defineQuery<PaymentStatus>('status');

/** How ops resolve a payment in NEEDS_REVIEW: the outcome, why, and who. */
export interface ResolvePaymentUpdateInput {
  outcome: 'SUCCEEDED' | 'FAILED';
  note: string;
  resolvedBy: string;
}
/** Resolves a payment parked in NEEDS_REVIEW. Wire name 'resolve': stored histories carry it. */
export const resolvePaymentUpdate = defineUpdate<{ status: FinalPaymentStatus }, [ResolvePaymentUpdateInput]>(
  'resolve',
);

/** Start-to-close of payWallet's wallet activities (ms); the worker checks WALLET_TIMEOUT_MS against the execute's. */
export const payWalletActivityTimeouts = { createMs: 25_000, executeMs: 25_000 } as const;

/** The ApplicationFailure types the payment activities throw and payWallet never retries. */
export const paymentFailureTypes = {
  /** No payment row with this id. */
  notFound: 'PaymentNotFound',
  /** The row cannot be acted on (no wallet payment id, no final state). */
  corrupt: 'PaymentCorrupt',
  /** Another run claimed the payment since this one did: the overtaken run writes and calls nothing more. */
  ownerLost: 'PaymentOwnerLost',
} as const;

/** The payment's workflow id for an Idempotency-Key; stored on the payment row, which later starts use. */
export function paymentWorkflowId(idempotencyKey: string, sha256Hex: Sha256Hex): string {
  return idempotentWorkflowId('payment', idempotencyKey, sha256Hex);
}

export interface StartPayWalletOptions {
  /** The id stored on the payment row (paymentWorkflowId). */
  workflowId: string;
  taskQueue: string;
  paymentId: string;
  /** The payment's status now (the run's first search attribute); absent: PENDING. */
  status?: PaymentStatus;
  /**
   * 'reject-duplicate' (the API, the default): a closed run means the request already ran.
   * 'temporal-default' (the sweep, for a payment left unfinished by a run that ended): a new run
   * resumes it from its record.
   */
  reusePolicy?: 'reject-duplicate' | 'temporal-default';
}

/**
 * Starts payWallet, or finds it running; a closed run with this id means the request already ran,
 * so nothing is started and no error is raised. The run starts with status PENDING and kind PAYMENT.
 */
export async function startPayWallet(client: Client, options: StartPayWalletOptions): Promise<void> {
  const start = {
    taskQueue: options.taskQueue,
    workflowId: options.workflowId,
    args: [{ paymentId: options.paymentId }] as [PayWalletInput],
    searchAttributes: { [statusKey.name]: [options.status ?? 'PENDING'], [kindKey.name]: ['PAYMENT'] },
  };
  if (options.reusePolicy === 'temporal-default') {
    await client.workflow.start<PayWalletWorkflow>(payWalletWorkflowType, {
      ...start,
      workflowIdConflictPolicy: 'USE_EXISTING',
    });
    return;
  }
  await ignoringClosedRun(
    client.workflow.start<PayWalletWorkflow>(payWalletWorkflowType, { ...start, ...startOncePolicies }),
  );
}

// The activities payWallet schedules (activities/payment.ts implements them): their signatures and
// the results they answer with are the workflow's, declared here; the activities take them from
// this contract, never the reverse. Results carry ids, states and codes only. `fence` is the run's
// claim from loadPayment: a step that carries it is refused once another run claimed the payment
// (absent in histories from before fencing).

/** Where a payment stands when a run takes it on (loadPayment). */
export interface PaymentSnapshot {
  id: string;
  status: PaymentStatus;
  walletPaymentId: string | null;
  /** The run's claim (loadPayment takes the payment on); absent in histories from before fencing. */
  fence?: number;
}

/** What a park for review found: parked, or the final state another writer had already reached. */
export type PaymentParkOutcome =
  | { parked: true }
  | { parked: false; status: FinalPaymentStatus; errorCode: string | null; walletPaymentId: string | null };

export type CreatePaymentOutcome =
  | { kind: 'created'; walletPaymentId: string; requestReferenceNo: string | null }
  | { kind: 'refused'; code: string; requestReferenceNo: string | null }
  /** The wallet's answer names another amount, currency or merchant than asked: never executed. */
  | { kind: 'mismatch'; walletPaymentId: string; requestReferenceNo: string; detail: string };

export type ExecutePaymentOutcome =
  | { kind: 'succeeded'; requestReferenceNo: string }
  | { kind: 'failed'; code: string; attempt: ExecuteAttempt }
  | { kind: 'already-executed'; attempt: ExecuteAttempt }
  | { kind: 'unknown'; attempt: ExecuteAttempt }
  /**
   * The wallet certainly did not process it (429, connection refused): safe to send again, after
   * `retryAfterMs` when the wallet said so (Retry-After, bounded).
   */
  | { kind: 'not-sent'; attempt: ExecuteAttempt; retryAfterMs?: number };

/** The activities payWallet schedules, as activities or local activities. */
export interface PayWalletActivities {
  /**
   * Takes the payment on for a run of its workflow and answers where it stands; every later step
   * carries the claim as its fence (docs/architecture.md, who owns a funding).
   */
  loadPayment(id: string): Promise<PaymentSnapshot>;
  markPaymentCreating(id: string, fence?: number): Promise<void>;
  /** Creates the wallet payment (no debit) and stores its id and fee before any execute. */
  createPayment(id: string, fence?: number): Promise<CreatePaymentOutcome>;
  beginPaymentExecute(id: string, createRequestReferenceNo: string | null, fence?: number): Promise<void>;
  /**
   * One execute attempt; the workflow decides what an unknown or repeated one means. The execute
   * is sent only while it can still end before this activity's time-out (a refresh may have used
   * the time up): an activity that timed out with its execute in flight would be followed by
   * another execute the first may still be racing.
   */
  executePayment(id: string, fence?: number): Promise<ExecutePaymentOutcome>;
  /** NEEDS_REVIEW with the evidence: every execute attempt and why no state could be known. */
  parkForReview(id: string, reason: string, attempts: ExecuteAttempt[], fence?: number): Promise<PaymentParkOutcome>;
  /** Resolves a payment in NEEDS_REVIEW, with who and why. */
  resolvePayment(id: string, input: ResolvePaymentUpdateInput): Promise<{ status: FinalPaymentStatus }>;
  finishPayment(
    id: string,
    input: {
      status: FinalPaymentStatus;
      code: string | null;
      requestReferenceNo: string | null;
      detail?: string | null;
    },
    fence?: number,
  ): Promise<{ status: FinalPaymentStatus; errorCode: string | null; walletPaymentId: string | null }>;
}
