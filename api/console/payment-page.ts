// A payment's page: its state, amount and fee, the link it is paid from, its timeline with who
// acted, its review, the wallet calls behind it by Request-Reference-No, its ledger entries, its
// webhook deliveries, and its workflow in the Temporal UI. Resolve (the `resolve` scope, in
// NEEDS_REVIEW) goes through the payment service, as POST /ops/payments/{id}/resolve does, under
// the person's name.
import type { Router } from 'express';
import { z } from 'zod';
import { walletCallsByReference } from '../../audit/wallet-call-log.ts';
import { paymentResolutions, resolvePaymentSchema, type PaymentView } from '../../domain/payment.ts';
import { paymentFacts } from '../../payments/payment-lookup.ts';
import { defineRoute, htmlAnswer, redirectAnswer, retryAfterHeader, type AnyRouteSpec } from '../http/route-spec.ts';
import { consoleRoutesOn, personOf } from './console-auth.ts';
import { CONSOLE_PATH, escapeHtml, idCell, money, sendConsolePage, stateBadge, when } from './console-layout.ts';
import type { ConsoleServices } from './console-services.ts';
import {
  card,
  doneNotice,
  facts,
  formField,
  linkedId,
  may,
  segment,
  sendBack,
  sendNotFound,
  resolutionNotTakenWords,
  sendRefused,
  workflowLink,
} from './page-pieces.ts';
import { recordHistoryCards } from './record-pieces.ts';
import { resolveForm } from './review-pieces.ts';

export type PaymentPageDependencies = Pick<
  ConsoleServices,
  'database' | 'payments' | 'ledger' | 'webhooks' | 'timeZone' | 'temporalUi'
>;

/** walletflow's id or the wallet's payment id, as GET /ops/payments/{paymentId} takes it. */
const paymentIdSchema = z.string().regex(/^[A-Za-z0-9-]{1,100}$/, 'not a payment id');
const paymentIdParameter = {
  paymentId: { schema: paymentIdSchema, description: 'walletflow’s id of the payment, or the wallet’s payment id' },
};

const routes = {
  payment: defineRoute({
    method: 'get',
    path: '/console/payments/{paymentId}',
    operationId: 'consolePayment',
    tag: 'console',
    summary: 'A payment: state, amounts, timeline, review, wallet calls, ledger entries, webhook deliveries',
    access: { consoleScope: 'read' },
    params: paymentIdParameter,
    responses: { '200': htmlAnswer('the page'), '404': htmlAnswer('no such payment') },
  }),
  resolvePayment: defineRoute({
    method: 'post',
    path: '/console/payments/{paymentId}/resolve',
    operationId: 'consoleResolvePayment',
    tag: 'console',
    summary: 'Resolve a payment in NEEDS_REVIEW, with a note (POST /ops/payments/{paymentId}/resolve’s rules)',
    access: { consoleScope: 'resolve' },
    params: paymentIdParameter,
    responses: {
      '303': redirectAnswer('resolved: back to the payment or the review queue'),
      '400': htmlAnswer('no outcome, or no note'),
      '404': htmlAnswer('no such payment'),
      '409': htmlAnswer('not in NEEDS_REVIEW'),
      '503': htmlAnswer(
        'its workflow cannot take the resolution just now (Temporal unreachable or busy, or its workflow task failing): nothing was done, with Retry-After; or a page titled Done: resolved, only not read back under load (not to be sent again)',
        { 'Retry-After': retryAfterHeader },
      ),
    },
  }),
};

export const paymentRoutes: readonly AnyRouteSpec[] = Object.values(routes);

const paymentPath = (id: string) => `${CONSOLE_PATH}/payments/${segment(id)}`;

const doneMessages = { resolved: 'Resolved: the outcome and your note are recorded under your name.' };

const referencesOf = (payment: PaymentView): string[] =>
  [
    ...payment.events.map((event) => event.requestReferenceNo),
    ...(payment.review?.attempts.map((attempt) => attempt.requestReferenceNo) ?? []),
  ].filter((reference): reference is string => reference !== null);

export function addPaymentRoutes(router: Router, deps: PaymentPageDependencies): void {
  const add = consoleRoutesOn(router);

  add(routes.payment, async (req, res) => {
    const person = personOf(res);
    const id = paymentIdSchema.safeParse(req.params.paymentId);
    const [payment, stored] = id.success
      ? await Promise.all([deps.payments.view(id.data), paymentFacts(deps.database, id.data)])
      : [null, null];
    if (!payment || !stored) {
      sendNotFound(res, person, 'search', `payment ${req.params.paymentId}`);
      return;
    }
    const [calls, entries, deliveries] = await Promise.all([
      walletCallsByReference(deps.database, referencesOf(payment)),
      deps.ledger.entriesOf(deps.database, { paymentId: payment.id }),
      deps.webhooks.deliveriesOf({ paymentId: payment.id }),
    ]);
    const tz = deps.timeZone;
    const temporal = workflowLink(deps.temporalUi, stored.workflowId);
    const resolving =
      payment.status === 'NEEDS_REVIEW' && may(person, 'resolve')
        ? card(
            'resolve',
            'Resolve',
            resolveForm(person, {
              action: `${paymentPath(payment.id)}/resolve`,
              id: payment.id,
              outcomes: paymentResolutions(payment),
              returnTo: 'record',
            }),
            true,
          )
        : '';
    const body = [
      doneNotice(req, res, doneMessages),
      card(
        'payment',
        'The payment',
        facts([
          ['Payment id (walletflow)', idCell(payment.id, 'payment id')],
          [
            'Wallet payment id',
            payment.paymentId ? idCell(payment.paymentId, 'wallet payment id') : '<span class="muted">none yet</span>',
          ],
          ['State', stateBadge(payment.status)],
          ['Amount', money(payment.amount)],
          ['Fee', payment.fee ? money(payment.fee) : '<span class="muted">none</span>'],
          ['Purpose', escapeHtml(payment.purpose)],
          ['Paid from', linkedId(`${CONSOLE_PATH}/links/${payment.linkId}`, payment.linkId, 'link id')],
          ['Idempotency key', idCell(stored.idempotencyKey, 'idempotency key')],
          [
            'Error',
            payment.error
              ? `${escapeHtml(payment.error.code)}: ${escapeHtml(payment.error.message)}`
              : '<span class="muted">none</span>',
          ],
          ['Requested', when(payment.createdAt, tz)],
          ['Last change', when(payment.updatedAt, tz)],
          [
            'Workflow',
            temporal
              ? `<a href="${escapeHtml(temporal)}">${escapeHtml(stored.workflowId)} in the Temporal UI</a>`
              : idCell(stored.workflowId, 'workflow id'),
          ],
        ]),
      ),
      resolving,
      ...recordHistoryCards(
        {
          noun: 'payment',
          status: payment.status,
          review: payment.review ?? null,
          events: payment.events,
          calls,
          entries,
          deliveries,
        },
        tz,
      ),
    ].join('\n');
    sendConsolePage(res, 200, { title: `Payment ${payment.id.slice(0, 8)}`, section: 'search', person, body });
  });

  add(routes.resolvePayment, async (req, res) => {
    const person = personOf(res);
    const returnTo = formField(req, 'return') === 'review' ? 'review' : 'record';
    const back =
      returnTo === 'review'
        ? { href: `${CONSOLE_PATH}/review`, label: 'Back to the review queue' }
        : { href: paymentPath(req.params.paymentId), label: 'Back to the payment' };
    const id = paymentIdSchema.safeParse(req.params.paymentId);
    if (!id.success) {
      sendNotFound(res, person, 'review', `payment ${req.params.paymentId}`);
      return;
    }
    const parsed = resolvePaymentSchema.safeParse({ outcome: formField(req, 'outcome'), note: formField(req, 'note') });
    if (!parsed.success) {
      const problems = parsed.error.issues.map((issue) => issue.message).join('; ');
      sendRefused(res, 400, {
        person,
        section: 'review',
        title: 'Not resolved',
        message: `Not resolved: ${problems}. Nothing was done.`,
        back,
      });
      return;
    }
    const result = await deps.payments.resolve(id.data, parsed.data, person.name);
    switch (result.kind) {
      case 'resolved':
        if (returnTo === 'review') sendBack(res, `${CONSOLE_PATH}/review`, 'resolved', { item: result.payment.id });
        else sendBack(res, paymentPath(result.payment.id), 'resolved');
        return;
      case 'not-found':
        sendNotFound(res, person, 'review', `payment ${id.data}`);
        return;
      case 'not-in-review':
        sendRefused(res, 409, {
          person,
          section: 'review',
          title: 'Not resolved',
          message: `The payment is ${result.status}: only a payment in NEEDS_REVIEW can be resolved. Nothing was done.`,
          back,
        });
        return;
      case 'never-executed':
        sendRefused(res, 409, {
          person,
          section: 'review',
          title: 'Not resolved',
          message:
            'walletflow never sent an execute for this payment (the wallet’s create answer did not match the request): nothing was moved, so it cannot be SUCCEEDED. Resolve it FAILED. Nothing was done.',
          back,
        });
        return;
      case 'workflow-unavailable':
        res.setHeader('Retry-After', String(result.refusal.retryAfterSeconds));
        sendRefused(res, 503, {
          person,
          section: 'review',
          title: 'Not resolved',
          message: resolutionNotTakenWords('payment', result.refusal),
          back,
        });
        return;
    }
  });
}
