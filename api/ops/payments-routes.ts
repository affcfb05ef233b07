// The payments ops API (contract-decisions section 8): start a payment (Idempotency-Key, the same
// rules as fundings), read one, list them, and resolve one parked in NEEDS_REVIEW.
import { Router } from 'express';
import { z } from 'zod';
import { idempotencyKeySchema } from '../../domain/funding.ts';
import { createPaymentSchema, paymentSchema, paymentStatuses, resolvePaymentSchema } from '../../domain/payment.ts';
import { listQuerySchema } from '../../lib/list-page.ts';
import { pageSchema } from '../../lib/page-cursor.ts';
import type { PaymentService } from '../../payments/payment-service.ts';
import { sendProblem } from '../http/problem.ts';
import { opsKeyNameOf } from './ops-auth.ts';
import { validationProblem } from '../http/validation.ts';
import { sendListPage } from './list-page-response.ts';
import { resolvedByOf } from './ops-actor.ts';

export interface OpsPaymentsDependencies {
  payments: PaymentService;
  /**
   * How long POST /ops/payments waits for the wallet service's create, so that its answer carries
   * the wallet's `paymentId` (the contract's handle for a payment); absent: 3000 ms. The create
   * debits nothing and is one call; under faults the answer goes out without it (`paymentId:
   * null`, the payment's own `id` always works).
   */
  walletIdWaitMs?: number;
}

/** GET /ops/payments: filters and paging. */
export const paymentListQuerySchema = listQuerySchema(paymentStatuses);

/** A page of GET /ops/payments. */
export const paymentPageSchema = pageSchema(paymentSchema);

/** A payment id in a path: anything else is an unknown payment (404). */
export const paymentIdSchema = z.string().regex(/^[A-Za-z0-9-]{1,100}$/, 'not a payment id');
/** The body of POST /ops/payments/{id}/resolve (its note: well-formed text, domain/review.ts). */
export const resolveBodySchema = resolvePaymentSchema;

export function opsPaymentsRouter(deps: OpsPaymentsDependencies): Router {
  const router = Router();
  const notFound = (res: Parameters<typeof sendProblem>[0], id: string) =>
    sendProblem(res, { status: 404, code: 'PAYMENT_NOT_FOUND', title: 'Not Found', detail: `no payment ${id}` });

  router.post('/payments', async (req, res) => {
    const key = idempotencyKeySchema.safeParse(req.get('idempotency-key'));
    if (!key.success) {
      sendProblem(res, { status: 400, code: 'IDEMPOTENCY_KEY_INVALID', title: 'Bad Request', detail: key.error.issues[0]?.message ?? 'bad Idempotency-Key' });
      return;
    }
    const parsed = createPaymentSchema.safeParse(req.body);
    if (!parsed.success) {
      validationProblem(res, parsed.error);
      return;
    }
    const result = await deps.payments.start(key.data, parsed.data, opsKeyNameOf(res.locals));
    switch (result.kind) {
      case 'created':
      case 'existing': {
        const payment = (await deps.payments.viewOnceCreated(result.payment.id, deps.walletIdWaitMs ?? 3000)) ?? result.payment;
        res.status(result.kind === 'created' ? 202 : 200).json(payment);
        return;
      }
      case 'key-reused':
        sendProblem(res, {
          status: 422,
          code: 'IDEMPOTENCY_KEY_REUSED',
          title: 'Unprocessable Content',
          detail: 'this Idempotency-Key was used with a different request body',
        });
        return;
      case 'link-not-found':
        sendProblem(res, { status: 422, code: 'LINK_NOT_FOUND', title: 'Unprocessable Content', detail: 'linkId names no link' });
        return;
    }
  });

  router.get('/payments/:paymentId', async (req, res) => {
    const id = paymentIdSchema.safeParse(req.params.paymentId);
    const view = id.success ? await deps.payments.view(id.data) : null;
    if (!view) {
      notFound(res, req.params.paymentId);
      return;
    }
    res.json(view);
  });

  router.get('/payments', async (req, res) => {
    const query = paymentListQuerySchema.safeParse(req.query);
    if (!query.success) {
      validationProblem(res, query.error);
      return;
    }
    sendListPage(res, await deps.payments.list(query.data));
  });

  router.post('/payments/:paymentId/resolve', async (req, res) => {
    const id = paymentIdSchema.safeParse(req.params.paymentId);
    if (!id.success) {
      notFound(res, req.params.paymentId);
      return;
    }
    const parsed = resolveBodySchema.safeParse(req.body);
    if (!parsed.success) {
      validationProblem(res, parsed.error);
      return;
    }
    const result = await deps.payments.resolve(id.data, parsed.data, resolvedByOf(req, res));
    switch (result.kind) {
      case 'resolved':
        res.json(result.payment);
        return;
      case 'not-found':
        notFound(res, id.data);
        return;
      case 'not-in-review':
        sendProblem(res, {
          status: 409,
          code: 'PAYMENT_NOT_IN_REVIEW',
          title: 'Conflict',
          detail: `the payment is ${result.status}: only a payment in NEEDS_REVIEW can be resolved`,
        });
        return;
    }
  });

  return router;
}
