// The review queue: every funding and payment parked in NEEDS_REVIEW (contract-decisions section
// 11), newest first, a page at a time (the lists of GET /ops/fundings?status=NEEDS_REVIEW and
// GET /ops/payments?status=NEEDS_REVIEW, through the same services), each with its evidence: why
// no outcome could be known and every wallet call behind the doubt. A person with the `resolve`
// scope resolves one here with a note (required); the form posts to the funding's or the
// payment's resolve and comes back here.
import type { Router } from 'express';
import { fundingResolutions, type FundingView } from '../../domain/funding.ts';
import { paymentResolutions, type PaymentView } from '../../domain/payment.ts';
import { defineRoute, htmlAnswer, type AnyRouteSpec } from '../http/route-spec.ts';
import { consoleRoutesOn, personOf } from './console-auth.ts';
import {
  CONSOLE_PATH,
  escapeHtml,
  money,
  notice,
  sendConsolePage,
  when,
  type SignedInPerson,
} from './console-layout.ts';
import type { ConsoleServices } from './console-services.ts';
import { card, consoleUrl, doneOf, linkedId, may, pager, queryText } from './page-pieces.ts';
import { resolveForm, reviewDetails } from './review-pieces.ts';

export type ReviewPageDependencies = Pick<ConsoleServices, 'fundings' | 'payments' | 'timeZone'>;

const routes = {
  review: defineRoute({
    method: 'get',
    path: '/console/review',
    operationId: 'consoleReview',
    tag: 'console',
    summary: 'The review queue: fundings and payments in NEEDS_REVIEW with their evidence, and their resolve forms',
    access: { consoleScope: 'read' },
    responses: { '200': htmlAnswer('the page') },
  }),
};

export const reviewRoutes: readonly AnyRouteSpec[] = Object.values(routes);

/** Items per page of each list. */
const PAGE_SIZE = 20;

function fundingItem(funding: FundingView, person: SignedInPerson, timeZone: string): string {
  const recipient =
    funding.recipient.type === 'CODE' ? `cash-in code ${escapeHtml(funding.recipient.masked)}` : 'a linked wallet';
  const source =
    funding.source.type === 'TREASURY' ? 'the treasury' : `${escapeHtml(funding.source.partnerUserId)}’s balance`;
  return `<article class="card attention" aria-label="Funding ${escapeHtml(funding.fundingId)}">
<h3>Funding ${linkedId(`${CONSOLE_PATH}/fundings/${funding.fundingId}`, funding.fundingId, 'funding id')}</h3>
<p>${money(funding.amount)} from ${source} to ${recipient}; requested ${when(funding.createdAt, timeZone)}, in review since ${when(funding.updatedAt, timeZone)}.</p>
${funding.review ? reviewDetails(funding.review, timeZone) : ''}
${may(person, 'resolve') ? resolveForm(person, { action: `${CONSOLE_PATH}/fundings/${funding.fundingId}/resolve`, id: funding.fundingId, outcomes: fundingResolutions(funding), returnTo: 'review' }) : ''}
</article>`;
}

function paymentItem(payment: PaymentView, person: SignedInPerson, timeZone: string): string {
  return `<article class="card attention" aria-label="Payment ${escapeHtml(payment.id)}">
<h3>Payment ${linkedId(`${CONSOLE_PATH}/payments/${payment.id}`, payment.id, 'payment id')}</h3>
<p>${money(payment.amount)} (${escapeHtml(payment.purpose)}) from link ${linkedId(`${CONSOLE_PATH}/links/${payment.linkId}`, payment.linkId, 'link id')}; requested ${when(payment.createdAt, timeZone)}, in review since ${when(payment.updatedAt, timeZone)}.</p>
${payment.review ? reviewDetails(payment.review, timeZone) : ''}
${may(person, 'resolve') ? resolveForm(person, { action: `${CONSOLE_PATH}/payments/${payment.id}/resolve`, id: payment.id, outcomes: paymentResolutions(payment), returnTo: 'review' }) : ''}
</article>`;
}

export function addReviewRoutes(router: Router, deps: ReviewPageDependencies): void {
  const add = consoleRoutesOn(router);

  add(routes.review, async (req, res) => {
    const person = personOf(res);
    const fundingCursor = queryText(req, 'fundings', 200);
    const paymentCursor = queryText(req, 'payments', 200);
    const [fundings, payments] = await Promise.all([
      deps.fundings.list({ status: 'NEEDS_REVIEW', limit: PAGE_SIZE, cursor: fundingCursor }),
      deps.payments.list({ status: 'NEEDS_REVIEW', limit: PAGE_SIZE, cursor: paymentCursor }),
    ]);
    const tz = deps.timeZone;
    // Only an id is echoed back (a crafted link cannot put words in the notice).
    const item = queryText(req, 'item', 100);
    const resolved =
      doneOf(req, res) === 'resolved' && item !== undefined && /^[A-Za-z0-9-]+$/.test(item) ? item : undefined;
    const fundingList =
      fundings.kind === 'invalid-cursor'
        ? notice('That page of fundings is not one this console gave: start again from the first.', 'error')
        : fundings.items.length === 0
          ? '<p class="muted">No funding waits for a person.</p>'
          : `${fundings.items.map((funding) => fundingItem(funding, person, tz)).join('\n')}${pager(fundings.nextCursor ? consoleUrl(`${CONSOLE_PATH}/review`, { fundings: fundings.nextCursor, payments: paymentCursor }) : null, 'Older fundings')}`;
    const paymentList =
      payments.kind === 'invalid-cursor'
        ? notice('That page of payments is not one this console gave: start again from the first.', 'error')
        : payments.items.length === 0
          ? '<p class="muted">No payment waits for a person.</p>'
          : `${payments.items.map((payment) => paymentItem(payment, person, tz)).join('\n')}${pager(payments.nextCursor ? consoleUrl(`${CONSOLE_PATH}/review`, { fundings: fundingCursor, payments: payments.nextCursor }) : null, 'Older payments')}`;
    const body = [
      resolved ? notice(`Resolved ${resolved}: the outcome and your note are recorded under your name.`, 'ok') : '',
      may(person, 'resolve') ? '' : '<p class="muted">Resolving needs the resolve scope.</p>',
      '<p>Each item waits because no one can know whether the wallet moved the money, or because the wallet answered a create with something else than was asked (walletflow executed nothing: FAILED only). Check with the wallet operator (the Request-Reference-Nos below name each call), then resolve it with what they confirmed.</p>',
      card('review-fundings', 'Fundings in review', fundingList),
      card('review-payments', 'Payments in review', paymentList),
    ].join('\n');
    sendConsolePage(res, 200, { title: 'Review', section: 'review', person, body });
  });
}
