// The payment record: the one module that writes the payment and payment_event tables. Every
// status change is a move that domain's transition table allows, guarded in SQL by the statuses
// it may come from, and written with its timeline event in the same transaction; the insert is
// idempotent on the key; the wallet's payment id and fee are stored once, before any execute.
import { Prisma, type Payment, type PaymentEvent } from '../generated/prisma/client.ts';
import type { PaymentPurpose } from '../domain/ledger.ts';
import { fromNumeric, thousandthsIn, toNumeric, type Amount, type Money } from '../domain/money.ts';
import { createLedger, type Ledger } from '../ledger/ledger.ts';
import {
  paymentErrorMessage,
  paymentTransitions,
  reviewStatus,
  type ExecuteAttempt,
  type FinalPaymentStatus,
  type PaymentStatus,
} from '../domain/payment.ts';
import { sourcesOf } from '../domain/transitions.ts';
import type { Database } from '../lib/database.ts';
import { readListPage, type ListPage, type ListQuery, type SweepCursor } from '../lib/list-page.ts';
import type { Metrics } from '../lib/metrics.ts';
import { paymentWebhookEventType } from '../domain/webhook.ts';
import { emitWebhookEvent } from '../webhooks/outbox.ts';
import { paymentView } from './payment-view.ts';
import { isUuid } from '../domain/ids.ts';
import { actorWords } from '../domain/actor.ts';
import { executesOfTarget, withRecordedExecutes } from '../reviews/execute-evidence.ts';

export const withPaymentEvents = { events: { orderBy: { id: 'asc' as const } } };
export type PaymentWithEvents = Payment & { events: PaymentEvent[] };

export interface NewPayment {
  id: string;
  idempotencyKey: string;
  requestFingerprint: string;
  workflowId: string;
  linkId: string;
  /** Read once at the edge (domain/money.ts). */
  amount: Money;
  /** The ops key's name when ops asked (contract section 12), for the first event. */
  requestedBy?: string;
  /** Where it lands in the ledger once SUCCEEDED; absent: PURCHASE. */
  purpose?: PaymentPurpose;
}

export interface Resolution {
  outcome: FinalPaymentStatus;
  note: string;
  resolvedBy: string;
}

export interface FinishPayment {
  status: FinalPaymentStatus;
  code: string | null;
  requestReferenceNo: string | null;
  /** The timeline event's detail; absent: the code. */
  detail?: string | null;
}

/** The payment as it stands after a finish or a resolution, and whether that call moved it. */
export interface FinishedPayment {
  moved: boolean;
  status: PaymentStatus;
  errorCode: string | null;
  walletPaymentId: string | null;
  /** The payment's owner fence now: a writer whose claim is not this one was overtaken. */
  ownerFence: number;
}

/**
 * A run's claim on a payment, as for fundings (fundings/funding-record.ts Fence): the value of
 * owner_fence the run raised it to; `undefined` is a write by no owning run (a resolve, ops'
 * word on a payment in review).
 */
export type PaymentFence = number | undefined;

/** What a claim saw, atomically with raising the fence. */
export interface ClaimedPayment {
  fence: number;
  status: PaymentStatus;
  walletPaymentId: string | null;
}

export interface PaymentRecordDependencies {
  database: Database;
  /** Counts payments by final state, once, by whoever moved them there; absent: not counted. */
  metrics?: Pick<Metrics, 'paymentFinished'>;
  /** The partner's ledger; absent: a default one. */
  ledger?: Ledger;
}

interface MoveGuard {
  /** Only some of the legal moves: the table's sources narrowed by this, never widened. */
  among?: (from: PaymentStatus) => boolean;
  data?: Prisma.PaymentUpdateManyMutationInput;
  /** More to write, read in the move's transaction under the row's lock, before the move. */
  lockedData?: (tx: Prisma.TransactionClient) => Promise<Prisma.PaymentUpdateManyMutationInput>;
  /** The writer's claim: the move happens only while the payment's owner_fence still has it. */
  fence?: PaymentFence;
}

const fenced = (fence: PaymentFence): Prisma.PaymentWhereInput => (fence === undefined ? {} : { ownerFence: fence });

/** A payment id as the ops API takes it: walletflow's own (a UUID) or the wallet service's. */

export function createPaymentRecord(deps: PaymentRecordDependencies) {
  const { database } = deps;
  const ledger = deps.ledger ?? createLedger();

  /**
   * Every execute call of a payment's wallet payment the wallet call audit has (reviews/execute-evidence.ts), one its
   * workflow never saw the answer of too (an activity's first try, cut off); none before the wallet payment exists.
   */
  async function executesSent(id: string): Promise<ExecuteAttempt[]> {
    const { walletPaymentId } = await database.payment.findUniqueOrThrow({
      where: { id },
      select: { walletPaymentId: true },
    });
    return walletPaymentId === null ? [] : executesOfTarget(database, 'op.payments.execute', walletPaymentId);
  }

  /**
   * A payment that SUCCEEDED lands in the ledger in the transaction of that move (finish or a
   * resolution): PURCHASE in MERCHANT_REVENUE, DEPOSIT on the link's partner user. Once per payment.
   */
  async function landInLedger(tx: Prisma.TransactionClient, id: string): Promise<void> {
    const payment = await tx.payment.findUniqueOrThrow({
      where: { id },
      select: { purpose: true, linkId: true, amount: true, currency: true },
    });
    const link = await tx.link.findUnique({ where: { id: payment.linkId }, select: { partnerUserId: true } });
    await ledger.payment(tx, {
      paymentId: id,
      purpose: payment.purpose,
      partnerUserId: link?.partnerUserId ?? `unknown-link:${payment.linkId}`,
      currency: payment.currency,
      amount: fromNumeric(payment.amount),
    });
  }

  /**
   * The webhook a move emits (contract-decisions section 13): SUCCEEDED, FAILED or NEEDS_REVIEW
   * writes its event to the outbox in the move's own transaction, with the payment as the ops API shows it.
   */
  async function announce(tx: Prisma.TransactionClient, id: string, status: PaymentStatus): Promise<void> {
    const type = paymentWebhookEventType(status);
    if (!type) return;
    const payment = await tx.payment.findUniqueOrThrow({ where: { id }, include: withPaymentEvents });
    await emitWebhookEvent(tx, { type, paymentId: id, data: paymentView(payment) });
  }

  /** Moves the payment to `to` if the table allows it from where it stands, with its event (and its webhook). */
  function move(
    id: string,
    to: PaymentStatus,
    requestReferenceNo: string | null,
    detail: string | null,
    guard: MoveGuard = {},
  ): Promise<boolean> {
    const from = sourcesOf(paymentTransitions, to).filter((status) => !guard.among || guard.among(status));
    return database.$transaction(async (tx) => {
      const locked = guard.lockedData ? await guard.lockedData(tx) : {};
      const moved = await tx.payment.updateMany({
        where: { id, status: { in: from }, ...fenced(guard.fence) },
        data: { status: to, ...guard.data, ...locked },
      });
      if (moved.count === 1) {
        await tx.paymentEvent.create({
          data: { paymentId: id, status: to, requestReferenceNo, detail, fence: guard.fence ?? null },
        });
        if (to === 'SUCCEEDED') await landInLedger(tx, id);
        await announce(tx, id, to);
      }
      return moved.count === 1;
    });
  }

  /** Reads back a payment a finish or a resolution meant to end, and counts it if that call moved it. */
  async function readFinished(id: string, moved: boolean, status: FinalPaymentStatus): Promise<FinishedPayment> {
    const payment = await database.payment.findUniqueOrThrow({
      where: { id },
      select: { status: true, errorCode: true, walletPaymentId: true, createdAt: true, ownerFence: true },
    });
    // Counted by whoever moved it: a retried activity is not counted twice.
    if (moved) deps.metrics?.paymentFinished(status, payment.createdAt);
    return {
      moved,
      status: payment.status,
      errorCode: payment.errorCode,
      walletPaymentId: payment.walletPaymentId,
      ownerFence: payment.ownerFence,
    };
  }

  return {
    find: (id: string) => database.payment.findUnique({ where: { id } }),
    get: (id: string) => database.payment.findUniqueOrThrow({ where: { id } }),
    /** By walletflow's id, or by the wallet service's payment id. */
    findByEitherIdWithEvents: (id: string): Promise<PaymentWithEvents | null> =>
      database.payment.findFirst({
        where: isUuid(id) ? { OR: [{ id }, { walletPaymentId: id }] } : { walletPaymentId: id },
        include: withPaymentEvents,
      }),
    /** The payment stored under a key: called after an insert found the key taken. */
    getByIdempotencyKey: (idempotencyKey: string): Promise<PaymentWithEvents> =>
      database.payment.findUniqueOrThrow({ where: { idempotencyKey }, include: withPaymentEvents }),
    /** The payment stored under a key, if any: called before a refusal that comes before the store. */
    findByIdempotencyKey: (idempotencyKey: string): Promise<PaymentWithEvents | null> =>
      database.payment.findUnique({ where: { idempotencyKey }, include: withPaymentEvents }),

    /** A page of GET /ops/payments, newest first. */
    listPage: (query: ListQuery<PaymentStatus>): Promise<ListPage<PaymentWithEvents>> =>
      readListPage(query, (read) => database.payment.findMany({ ...read, include: withPaymentEvents })),

    /**
     * Payments not final and not in review, created before `createdBefore`, a page at a time from the cursor on: the
     * sweep's work. Read through payment_sweep_candidates_idx, which holds only them in (created_at, id) order, its
     * statuses constants in the text so that the planner can match its predicate (parameters it cannot).
     */
    async listUnfinished({
      createdBefore,
      after,
      limit,
    }: {
      createdBefore: Date;
      after?: SweepCursor;
      limit: number;
    }): Promise<Payment[]> {
      const fromCursor = after
        ? Prisma.sql`AND (p.created_at, p.id) > (${after.createdAt}, ${after.id}::uuid)`
        : Prisma.empty;
      // The order is the columns' (p.id a uuid), not the text id the statement answers.
      const rows = await database.$queryRaw<Array<{ id: string }>>`
        SELECT p.id::text AS id FROM payment p
        WHERE p.status IN ('PENDING', 'CREATING', 'EXECUTING') AND p.created_at < ${createdBefore} ${fromCursor}
        ORDER BY p.created_at, p.id LIMIT ${limit}`;
      if (rows.length === 0) return [];
      return database.payment.findMany({
        where: { id: { in: rows.map((row) => row.id) } },
        orderBy: [{ createdAt: 'asc' }, { id: 'asc' }],
      });
    },

    /** Payments waiting for a person, longest waiting first: the sweep lists the first of them for ops. */
    listInReview: (limit: number) =>
      database.payment.findMany({ where: { status: reviewStatus }, orderBy: { updatedAt: 'asc' }, take: limit }),
    /** How many payments wait for a person. */
    countInReview: () => database.payment.count({ where: { status: reviewStatus } }),

    /** Stores a new payment in PENDING with its first event; false when the key is taken (as fundings). */
    async insert(payment: NewPayment): Promise<boolean> {
      const { id, amount } = payment;
      const inserted = await database.$transaction(async (tx) => {
        const count = await tx.$executeRaw`
          INSERT INTO payment (id, idempotency_key, request_fingerprint, workflow_id, status, link_id, purpose, currency, amount, updated_at)
          VALUES (${id}::uuid, ${payment.idempotencyKey}, ${payment.requestFingerprint}, ${payment.workflowId}, 'PENDING'::"PaymentStatus", ${payment.linkId}::uuid,
                  ${payment.purpose ?? 'PURCHASE'}::"PaymentPurpose", ${amount.currency}, ${toNumeric(amount.thousandths)}::numeric, now())
          ON CONFLICT (idempotency_key) DO NOTHING`;
        if (count === 1)
          await tx.paymentEvent.create({
            data: {
              paymentId: id,
              status: 'PENDING',
              detail: payment.requestedBy
                ? `payment requested by ${actorWords(payment.requestedBy)}`
                : 'payment requested',
            },
          });
        return count;
      });
      return inserted === 1;
    },

    /**
     * Takes the payment on for a run of its workflow (raises its owner fence) and answers where it
     * stands, in one statement; null when there is no such payment.
     */
    async claim(id: string): Promise<ClaimedPayment | null> {
      const rows = await database.$queryRaw<
        Array<{ fence: number; status: PaymentStatus; wallet_payment_id: string | null }>
      >`
        UPDATE payment SET owner_fence = owner_fence + 1 WHERE id = ${id}::uuid
        RETURNING owner_fence AS fence, status::text AS status, wallet_payment_id`;
      const row = rows[0];
      return row ? { fence: row.fence, status: row.status, walletPaymentId: row.wallet_payment_id } : null;
    },

    /** The payment's owner fence now: whether a claim still stands. */
    fenceOf: async (id: string): Promise<number> =>
      (await database.payment.findUniqueOrThrow({ where: { id }, select: { ownerFence: true } })).ownerFence,

    markCreating: (id: string, fence?: PaymentFence) => move(id, 'CREATING', null, 'creating the payment', { fence }),

    /**
     * Stores the wallet's payment id and fee once, by the payment's owner, while the payment is CREATING. When a
     * concurrent attempt stored its payment first, that one is the payment (answered) and this one is never executed;
     * when the payment moved on meanwhile (an attempt answered late, after its run's next attempt sent it to review or
     * ended it), nothing is stored: a payment in review with no wallet payment id may be resolved only FAILED, and an
     * id stored late would offer SUCCEEDED for a payment never executed.
     */
    async storeCreated(
      id: string,
      created: { walletPaymentId: string; fee: Amount },
      fence?: PaymentFence,
    ): Promise<{ stored: boolean; walletPaymentId: string | null; status: PaymentStatus }> {
      const stored = await database.payment.updateMany({
        where: { id, walletPaymentId: null, status: 'CREATING', ...fenced(fence) },
        data: {
          walletPaymentId: created.walletPaymentId,
          feeCurrency: created.fee.currency,
          fee: toNumeric(thousandthsIn(created.fee.value)),
        },
      });
      if (stored.count === 1) return { stored: true, walletPaymentId: created.walletPaymentId, status: 'CREATING' };
      const current = await database.payment.findUniqueOrThrow({
        where: { id },
        select: { walletPaymentId: true, status: true },
      });
      return { stored: false, walletPaymentId: current.walletPaymentId, status: current.status };
    },

    /** → EXECUTING; the event carries the create call's Request-Reference-No. */
    async beginExecute(id: string, createRequestReferenceNo: string | null, fence?: PaymentFence): Promise<boolean> {
      const payment = await database.payment.findUniqueOrThrow({ where: { id }, select: { walletPaymentId: true } });
      return move(id, 'EXECUTING', createRequestReferenceNo, `payment ${payment.walletPaymentId} created; executing`, {
        fence,
      });
    },

    /** → NEEDS_REVIEW with the evidence: every execute attempt and why no state could be known. */
    async parkForReview(
      id: string,
      reason: string,
      attempts: ExecuteAttempt[],
      fence?: PaymentFence,
    ): Promise<boolean> {
      const last = attempts[attempts.length - 1];
      // The parker's attempts, and every execute of its wallet payment the audit has (reviews/execute-evidence.ts).
      const all = withRecordedExecutes(attempts, await executesSent(id));
      const data = { reviewReason: reason.slice(0, 500), reviewEvidence: all as unknown as Prisma.InputJsonValue };
      // From CREATING: the one park before any execute (a create answer that does not match the request). A wallet
      // payment an earlier attempt stored meanwhile (its answer came late) was never executed either: it is not kept
      // as the payment's, so the review offers FAILED only, never SUCCEEDED for money never taken.
      return move(id, reviewStatus, last?.requestReferenceNo ?? null, reason.slice(0, 500), {
        data,
        lockedData: async (tx) => {
          const [row] = await tx.$queryRaw<Array<{ status: string; wallet_payment_id: string | null }>>`
            SELECT status::text AS status, wallet_payment_id FROM payment WHERE id = ${id}::uuid FOR UPDATE`;
          if (row?.status !== 'CREATING' || !row.wallet_payment_id) return {};
          const unexecuted = `; payment ${row.wallet_payment_id}, created by an earlier attempt, was not executed either`;
          return {
            walletPaymentId: null,
            fee: null,
            feeCurrency: null,
            reviewReason: `${reason.slice(0, 500 - unexecuted.length)}${unexecuted}`,
          };
        },
        fence,
      });
    },

    /**
     * A person's resolution: the only way out of NEEDS_REVIEW, with who and why. Through the
     * waiting workflow it carries that run's fence; without one it claims the payment as it moves it.
     */
    async resolve(id: string, resolution: Resolution, fence?: PaymentFence): Promise<FinishedPayment> {
      const status = resolution.outcome;
      const resolved = await move(
        id,
        status,
        null,
        `resolved ${resolution.outcome} by ${resolution.resolvedBy}: ${resolution.note}`.slice(0, 500),
        {
          among: (from) => from === reviewStatus,
          data: {
            resolvedOutcome: resolution.outcome,
            resolvedBy: resolution.resolvedBy.slice(0, 128),
            resolvedNote: resolution.note.slice(0, 500),
            resolvedAt: new Date(),
            ...(status === 'FAILED'
              ? { errorCode: 'RESOLVED_FAILED', errorMessage: paymentErrorMessage('RESOLVED_FAILED') }
              : {}),
            ...(fence === undefined ? { ownerFence: { increment: 1 } } : {}),
          },
          fence,
        },
      );
      return readFinished(id, resolved, status);
    },

    /**
     * The workflow's own final state, written once by the payment's owner; a payment in review is left to its
     * resolution.
     */
    async finish(id: string, input: FinishPayment, fence?: PaymentFence): Promise<FinishedPayment> {
      const finished = await move(id, input.status, input.requestReferenceNo, input.detail ?? input.code, {
        among: (from) => from !== reviewStatus,
        data: { errorCode: input.code, errorMessage: input.code ? paymentErrorMessage(input.code) : null },
        fence,
      });
      return readFinished(id, finished, input.status);
    },

    /**
     * A timeline entry that changes nothing (the sweep started or restarted its workflow), written only while the
     * payment's owner fence is still `whileFence`: once the run it started claimed the payment, a late entry (its
     * writer paused) would stand after that run's moves, and is dropped.
     */
    recordEvent: (id: string, status: PaymentStatus, detail: string, whileFence: number) =>
      database.$executeRaw`
        INSERT INTO payment_event (payment_id, status, detail)
        SELECT id, ${status}::"PaymentStatus", ${detail} FROM payment
        WHERE id = ${id}::uuid AND owner_fence = ${whileFence}`.then(() => undefined),
  };
}

export type PaymentRecord = ReturnType<typeof createPaymentRecord>;
