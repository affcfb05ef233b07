// The payments ops API (contract-decisions section 8): start a payment (Idempotency-Key, the same
// rules as fundings), read one, list them, and resolve one parked in NEEDS_REVIEW. When Temporal
// cannot take a payment's workflow call now, the answer is 503 WORKFLOW_UNAVAILABLE with
// Retry-After and words true for what the request left behind (ops-answers.ts).
import type { Router } from 'express';
import { z } from 'zod';
import { idempotencyKeySchema } from '../../domain/funding.ts';
import { createPaymentSchema, paymentSchema, paymentStatuses, resolvePaymentSchema } from '../../domain/payment.ts';
import { listQuerySchema } from '../../lib/list-page.ts';
import { pageSchema } from '../../lib/page-cursor.ts';
import type { PaymentService } from '../../payments/payment-service.ts';
import { clientGone } from '../http/client-gone.ts';
import { sendProblem } from '../http/problem.ts';
import { routesOn, strictRouter } from '../http/route-registration.ts';
import { defineRoute, jsonAnswer, named, problemAnswer, type AnyRouteSpec } from '../http/route-spec.ts';
import { opsKeyNameOf } from './ops-key.ts';
import { validationProblem } from '../http/validation.ts';
import { sendListPage } from './list-page-response.ts';
import { actorHeader, resolvedByOf } from './ops-actor.ts';
import { refusalWords, startedWords } from '../../lib/workflow-unavailable.ts';
import {
  badListQueryAnswer,
  idempotencyKeyHeader,
  listFilterDescriptions,
  malformedBodyCodes,
  sendWorkflowUnavailable,
  workflowUnavailableAnswer,
} from './ops-answers.ts';

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

const paymentComponent = named('Payment', paymentSchema);
const paymentIdParameter = {
  paymentId: {
    schema: paymentIdSchema,
    description: 'walletflow’s id of the payment (`id`), or the wallet’s payment id (`walletPaymentId`)',
  },
};
const noSuchPayment = problemAnswer('no such payment', ['PAYMENT_NOT_FOUND']);

const routes = {
  createPayment: defineRoute({
    method: 'post',
    path: '/ops/payments',
    operationId: 'createPayment',
    tag: 'payments',
    summary: 'Take a merchant payment from a linked wallet',
    access: { opsScope: 'pay' },
    headers: idempotencyKeyHeader,
    body: { mediaType: 'application/json', schema: named('CreatePayment', createPaymentSchema) },
    responses: {
      '200': jsonAnswer(paymentComponent, 'a repeated key with the same body: the same payment'),
      '202': jsonAnswer(
        paymentComponent,
        'a new key: the payment, started; the answer waits (up to 3 s) for the wallet’s create, so `paymentId` is the wallet’s id unless that create is slow (then null; `id` always works)',
      ),
      '400': problemAnswer('a missing or malformed key or body; nothing stored', [
        'IDEMPOTENCY_KEY_INVALID',
        'VALIDATION_ERROR',
        ...malformedBodyCodes,
      ]),
      '422': problemAnswer('the key was used with another body, `linkId` names no link, or the amount is not in PHP', [
        'IDEMPOTENCY_KEY_REUSED',
        'LINK_NOT_FOUND',
        'CURRENCY_NOT_ACCEPTED',
      ]),
      '503': workflowUnavailableAnswer(
        'the payment is stored (its id is in the detail) but its workflow could not be started (or its start was not answered: it may have started); the same request with the same key answers it and starts it (never a new key: that would be a second payment), and if none comes the sweep starts it once it is RECONCILE_AFTER_SECONDS old',
      ),
    },
  }),
  listPayments: defineRoute({
    method: 'get',
    path: '/ops/payments',
    operationId: 'listPayments',
    tag: 'payments',
    summary: 'Payments, newest first, a page at a time',
    access: { opsScope: 'read' },
    query: { schema: paymentListQuerySchema, descriptions: listFilterDescriptions },
    responses: { '200': jsonAnswer(named('PaymentPage', paymentPageSchema), 'a page'), '400': badListQueryAnswer },
  }),
  getPayment: defineRoute({
    method: 'get',
    path: '/ops/payments/{paymentId}',
    operationId: 'getPayment',
    tag: 'payments',
    summary: 'A payment, its timeline and any review',
    access: { opsScope: 'read' },
    params: paymentIdParameter,
    responses: { '200': jsonAnswer(paymentComponent, 'the payment'), '404': noSuchPayment },
  }),
  resolvePayment: defineRoute({
    method: 'post',
    path: '/ops/payments/{paymentId}/resolve',
    operationId: 'resolvePayment',
    tag: 'payments',
    summary: 'Resolve a payment parked in NEEDS_REVIEW, after checking with the wallet operator',
    access: { opsScope: 'resolve' },
    params: paymentIdParameter,
    headers: actorHeader(
      'who resolves (recorded with the key’s fingerprint in `review.resolution.by`); ignored when malformed',
    ),
    body: {
      mediaType: 'application/json',
      schema: named('ResolvePayment', resolveBodySchema),
      description: 'the outcome and why (plain text: no control characters or broken unicode)',
    },
    responses: {
      '200': jsonAnswer(paymentComponent, 'resolved'),
      '400': problemAnswer('a malformed body', ['VALIDATION_ERROR', ...malformedBodyCodes]),
      '404': noSuchPayment,
      '409': problemAnswer(
        'the payment is not in NEEDS_REVIEW, or SUCCEEDED for a payment walletflow never executed (no wallet payment of its own)',
        ['PAYMENT_NOT_IN_REVIEW', 'NEVER_EXECUTED'],
      ),
      '503': workflowUnavailableAnswer(
        'the payment is still NEEDS_REVIEW, not resolved (after a time-out its workflow may still take the resolution: read the payment first)',
      ),
    },
  }),
};

/** The payments routes, as the document lists them. */
export const paymentsRoutes: readonly AnyRouteSpec[] = Object.values(routes);

export function opsPaymentsRouter(deps: OpsPaymentsDependencies): Router {
  const router = strictRouter();
  const add = routesOn(router, '/ops');
  const notFound = (res: Parameters<typeof sendProblem>[0], id: string) =>
    sendProblem(res, { status: 404, code: 'PAYMENT_NOT_FOUND', title: 'Not Found', detail: `no payment ${id}` });

  add(routes.createPayment, async (req, res) => {
    const key = idempotencyKeySchema.safeParse(req.get('idempotency-key'));
    if (!key.success) {
      sendProblem(res, {
        status: 400,
        code: 'IDEMPOTENCY_KEY_INVALID',
        title: 'Bad Request',
        detail: key.error.issues[0]?.message ?? 'bad Idempotency-Key',
      });
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
        const payment =
          (await deps.payments.viewOnceCreated(result.payment.id, deps.walletIdWaitMs ?? 3000, clientGone(res))) ??
          result.payment;
        res.status(result.kind === 'created' ? 202 : 200).json(payment);
        return;
      }
      case 'not-started':
        sendWorkflowUnavailable(
          res,
          result.refusal,
          `${
            result.storedBy === 'this-request'
              ? `the payment ${result.payment.id} is stored but its workflow could not be started (${refusalWords[result.refusal.reason]}): ${startedWords(result.refusal, 'nothing was sent to the wallet yet.')}`
              : `the payment ${result.payment.id} was stored by the first request with this Idempotency-Key; its workflow could not be started or found running now (${refusalWords[result.refusal.reason]}).`
          } Send the same request with the same Idempotency-Key again after Retry-After: it answers this payment and starts it (a new key would be a second payment). If none comes, the sweep starts it.`,
        );
        return;
      case 'key-reused':
        sendProblem(res, {
          status: 422,
          code: 'IDEMPOTENCY_KEY_REUSED',
          title: 'Unprocessable Content',
          detail: 'this Idempotency-Key was used with a different request body',
        });
        return;
      case 'link-not-found':
        sendProblem(res, {
          status: 422,
          code: 'LINK_NOT_FOUND',
          title: 'Unprocessable Content',
          detail: 'linkId names no link',
        });
        return;
      case 'refused':
        sendProblem(res, { status: 422, code: result.code, title: 'Unprocessable Content', detail: result.detail });
        return;
    }
  });

  add(routes.getPayment, async (req, res) => {
    const id = paymentIdSchema.safeParse(req.params.paymentId);
    const view = id.success ? await deps.payments.view(id.data) : null;
    if (!view) {
      notFound(res, req.params.paymentId);
      return;
    }
    res.json(view);
  });

  add(routes.listPayments, async (req, res) => {
    const query = paymentListQuerySchema.safeParse(req.query);
    if (!query.success) {
      validationProblem(res, query.error);
      return;
    }
    sendListPage(res, await deps.payments.list(query.data));
  });

  add(routes.resolvePayment, async (req, res) => {
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
      case 'never-executed':
        sendProblem(res, {
          status: 409,
          code: 'NEVER_EXECUTED',
          title: 'Conflict',
          detail:
            'walletflow never sent an execute for this payment (it has no wallet payment of its own: the wallet’s create answer did not match the request), so nothing was moved: only FAILED resolves it',
        });
        return;
      case 'workflow-unavailable':
        sendWorkflowUnavailable(
          res,
          result.refusal,
          result.refusal.mayHaveBeenTaken
            ? `the payment's workflow did not confirm the resolution (${refusalWords[result.refusal.reason]}): it may still take it. Read the payment after Retry-After; while it is still NEEDS_REVIEW, send the same request again.`
            : `the payment's workflow cannot take a resolution now (${refusalWords[result.refusal.reason]}): nothing was changed, the payment is still NEEDS_REVIEW. Send the same request again after Retry-After.`,
        );
        return;
    }
  });

  return router;
}
