// Payments as a service shared by the ops API and the landing page: start one (idempotent on its
// key), read it (by walletflow's id or the wallet's payment id, also once the wallet has named it),
// list them, resolve one in NEEDS_REVIEW through the workflow's `resolve` update. The payment's
// rows change only through the payment record (payment-record.ts). When Temporal cannot take a
// call now (lib/workflow-unavailable.ts): a payment stored whose workflow could not be started is
// `not-started` (the same request with its key starts it; the sweep does otherwise), and a resolve
// its workflow could not take changed nothing.
import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import {
  isFinalPaymentStatus,
  paymentResolutions,
  type CreatePaymentRequest,
  type PaymentStatus,
  type PaymentView,
  type ResolvePaymentRequest,
} from '../domain/payment.ts';
import { currencyRefusal, CURRENCY_NOT_ACCEPTED, moneyOf, normaliseAmount } from '../domain/money.ts';
import type { Database } from '../lib/database.ts';
import type { ListPage, ListQuery } from '../lib/list-page.ts';
import type { Logger } from '../lib/logger.ts';
import { resolveReview } from '../reviews/resolve-review.ts';
import { workflowRefusalOf, type WorkflowRefusal } from '../lib/workflow-unavailable.ts';
import { createPaymentRecord, type PaymentWithEvents } from './payment-record.ts';
import { paymentView } from './payment-view.ts';
import { requestFingerprint, sha256Hex } from '../lib/idempotency.ts';
import { readBackDone } from '../lib/admission.ts';
import {
  paymentWorkflowId,
  resolvePaymentUpdate,
  startPayWallet,
  type ResolvePaymentUpdateInput,
} from '../workflows/pay-wallet.contract.ts';

export interface PaymentServiceDependencies {
  database: Database;
  temporal: Client;
  taskQueue: string;
  fingerprintKey: Buffer;
  logger: Logger;
}

export type StartPaymentResult =
  | { kind: 'created'; payment: PaymentView }
  | { kind: 'existing'; payment: PaymentView }
  /**
   * Stored, but Temporal could not be asked now to start its workflow. Stored by this request:
   * nothing was sent to the wallet. By an earlier one with its key: its workflow may run or not.
   * The same request with the same key answers it and starts it; else the sweep starts it once it
   * is RECONCILE_AFTER_SECONDS old.
   */
  | {
      kind: 'not-started';
      payment: PaymentView;
      refusal: WorkflowRefusal;
      storedBy: 'this-request' | 'an-earlier-request';
    }
  | { kind: 'key-reused' }
  | { kind: 'link-not-found' }
  /** 422: refused before anything is stored (an amount in another currency than walletflow moves). */
  | { kind: 'refused'; code: typeof CURRENCY_NOT_ACCEPTED; detail: string };

export type ResolvePaymentResult =
  | { kind: 'resolved'; payment: PaymentView }
  | { kind: 'not-found' }
  | { kind: 'not-in-review'; status: string }
  /** SUCCEEDED for a payment walletflow never sent an execute for (no wallet payment of its own). */
  | { kind: 'never-executed' }
  /**
   * Its workflow could not take the resolution now: the payment is still NEEDS_REVIEW (after a time-out, the resolution
   * may still be taken).
   */
  | { kind: 'workflow-unavailable'; refusal: WorkflowRefusal };

export function createPaymentService(deps: PaymentServiceDependencies) {
  const record = createPaymentRecord({ database: deps.database });
  const find = (id: string) => record.findByEitherIdWithEvents(id);

  /** Starts the payment's workflow; the refusal when Temporal cannot take the start now (anything else is thrown). */
  const startWorkflow = async (paymentId: string, workflowId: string): Promise<WorkflowRefusal | null> => {
    try {
      await startPayWallet(deps.temporal, { workflowId, taskQueue: deps.taskQueue, paymentId });
      return null;
    } catch (error) {
      const refusal = workflowRefusalOf(error);
      if (!refusal) throw error;
      deps.logger.warn(
        { paymentId, workflowId, reason: refusal.reason },
        'payment stored, its workflow not started: Temporal refused the start',
      );
      return refusal;
    }
  };

  return {
    /** By walletflow's id, or by the wallet service's payment id. */
    async view(id: string): Promise<PaymentView | null> {
      const payment = await find(id);
      return payment ? paymentView(payment) : null;
    },

    /** A page of GET /ops/payments, as the API shows payments. */
    async list(query: ListQuery<PaymentStatus>): Promise<ListPage<PaymentView>> {
      const page = await record.listPage(query);
      return page.kind === 'page' ? { ...page, items: page.items.map(paymentView) } : page;
    },

    /**
     * The payment once the wallet service has given it its paymentId (or once it never will: a
     * refused create is final), or as it stands after `waitMs` or once `gone` (its client left).
     */
    async viewOnceCreated(id: string, waitMs: number, gone?: AbortSignal): Promise<PaymentView | null> {
      const deadline = Date.now() + waitMs;
      for (;;) {
        const row = await record.find(id);
        if (!row) return null;
        if (row.walletPaymentId !== null || isFinalPaymentStatus(row.status) || Date.now() >= deadline || gone?.aborted)
          return this.view(id);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    },

    /** Validated input only (createPaymentSchema, idempotencyKeySchema). */
    async start(idempotencyKey: string, body: CreatePaymentRequest, actor?: string): Promise<StartPaymentResult> {
      /** As the store answers a key already taken, whatever the refusal before the store would have said. */
      const answerTakenKey = async (
        existing: PaymentWithEvents,
        fingerprint: string | null,
      ): Promise<StartPaymentResult> => {
        if (existing.requestFingerprint !== fingerprint) return { kind: 'key-reused' };
        // The first request may have stored the payment and died (or been refused) before starting its workflow.
        if (!isFinalPaymentStatus(existing.status)) {
          const refusal = await startWorkflow(existing.id, existing.workflowId);
          if (refusal)
            return { kind: 'not-started', storedBy: 'an-earlier-request', payment: paymentView(existing), refusal };
        }
        return { kind: 'existing', payment: paymentView(existing) };
      };
      /** `fingerprint` null: a body no payment was stored with (a currency walletflow does not take). */
      const unlessKeyTaken = async (
        refusal: StartPaymentResult,
        fingerprint: string | null,
      ): Promise<StartPaymentResult> => {
        const earlier = await record.findByIdempotencyKey(idempotencyKey);
        return earlier ? answerTakenKey(earlier, fingerprint) : refusal;
      };
      // Refused first: its amount may be one no fingerprint can read (GBP).
      const foreign = currencyRefusal(body.amount.currency);
      if (foreign) return unlessKeyTaken({ kind: 'refused', code: CURRENCY_NOT_ACCEPTED, detail: foreign }, null);
      const amount = normaliseAmount(body.amount);
      // PURCHASE (or none) fingerprints as before: existing keys keep matching.
      const purpose = body.purpose === 'DEPOSIT' ? ['DEPOSIT'] : [];
      const fingerprint = requestFingerprint(deps.fingerprintKey, [
        'PAYMENT',
        body.linkId.toLowerCase(),
        amount.currency,
        amount.value,
        ...purpose,
      ]);
      const link = await deps.database.link.findUnique({ where: { id: body.linkId }, select: { id: true } });
      if (!link) return unlessKeyTaken({ kind: 'link-not-found' }, fingerprint);
      const id = randomUUID();
      const workflowId = paymentWorkflowId(idempotencyKey, sha256Hex);
      const inserted = await record.insert({
        id,
        idempotencyKey,
        requestFingerprint: fingerprint,
        workflowId,
        linkId: body.linkId,
        amount: moneyOf(amount),
        purpose: body.purpose ?? 'PURCHASE',
        ...(actor ? { requestedBy: actor } : {}),
      });
      if (inserted) {
        const refusal = await startWorkflow(id, workflowId);
        if (refusal) return { kind: 'not-started', storedBy: 'this-request', payment: (await this.view(id))!, refusal };
        deps.logger.info({ paymentId: id, workflowId }, 'payment started');
        return { kind: 'created', payment: (await this.view(id))! };
      }
      return answerTakenKey(await record.getByIdempotencyKey(idempotencyKey), fingerprint);
    },

    /**
     * Resolves a payment in NEEDS_REVIEW through its workflow (a Temporal update), or the record when the workflow is
     * gone; audited.
     */
    async resolve(id: string, request: ResolvePaymentRequest, resolvedBy: string): Promise<ResolvePaymentResult> {
      const payment = await find(id);
      if (!payment) return { kind: 'not-found' };
      if (payment.status !== 'NEEDS_REVIEW') return { kind: 'not-in-review', status: payment.status };
      if (!paymentResolutions({ paymentId: payment.walletPaymentId }).includes(request.outcome))
        return { kind: 'never-executed' };
      const input: ResolvePaymentUpdateInput = { ...request, resolvedBy };
      const result = await resolveReview(deps.temporal, payment.workflowId, resolvePaymentUpdate, [input], {
        stillWaiting: async () => (await find(id))?.status === 'NEEDS_REVIEW',
        resolveWithoutWorkflow: async () => (await record.resolve(payment.id, input)).moved,
      });
      if (result.kind === 'workflow-unavailable') {
        deps.logger.warn(
          { paymentId: payment.id, reason: result.refusal.reason },
          'payment not resolved: its workflow cannot take the resolution now',
        );
        return { kind: 'workflow-unavailable', refusal: result.refusal };
      }
      if (result.kind === 'not-waiting')
        return { kind: 'not-in-review', status: (await find(id))?.status ?? payment.status };
      deps.logger.info({ paymentId: payment.id, outcome: request.outcome, resolvedBy }, 'payment resolved');
      return {
        kind: 'resolved',
        payment: (await readBackDone(`the payment was resolved ${request.outcome}`, () => this.view(payment.id)))!,
      };
    },
  };
}

export type PaymentService = ReturnType<typeof createPaymentService>;
