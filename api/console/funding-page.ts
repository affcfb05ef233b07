// A funding's page: its state, amount, source and (masked) recipient, its timeline with who acted,
// its review, the wallet calls behind it by Request-Reference-No, its ledger entries, its webhook
// deliveries, and its workflow in the Temporal UI. Cancel (the `fund` scope, before it executes)
// and resolve (the `resolve` scope, in NEEDS_REVIEW) go through the funding service, as the ops
// API's POST …/cancel and …/resolve do, under the person's name.
import { idSchema } from '../../domain/ids.ts';
import type { Router } from 'express';
import { walletCallsByReference } from '../../audit/wallet-call-log.ts';
import {
  cancellableFundingStatuses,
  fundingResolutions,
  resolveFundingSchema,
  type FundingView,
} from '../../domain/funding.ts';
import { fundingFacts } from '../../fundings/funding-lookup.ts';
import { defineRoute, htmlAnswer, redirectAnswer, retryAfterHeader, type AnyRouteSpec } from '../http/route-spec.ts';
import { consoleRoutesOn, personOf } from './console-auth.ts';
import {
  CONSOLE_PATH,
  csrfField,
  escapeHtml,
  idCell,
  money,
  sendConsolePage,
  stateBadge,
  when,
} from './console-layout.ts';
import type { ConsoleServices } from './console-services.ts';
import {
  card,
  doneNotice,
  facts,
  formField,
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

export type FundingPageDependencies = Pick<
  ConsoleServices,
  'database' | 'fundings' | 'ledger' | 'webhooks' | 'timeZone' | 'temporalUi'
>;

const fundingIdParameter = { fundingId: { schema: idSchema, description: 'the funding’s id' } };

const routes = {
  funding: defineRoute({
    method: 'get',
    path: '/console/fundings/{fundingId}',
    operationId: 'consoleFunding',
    tag: 'console',
    summary: 'A funding: state, amounts, timeline, review, wallet calls, ledger entries, webhook deliveries',
    access: { consoleScope: 'read' },
    params: fundingIdParameter,
    responses: { '200': htmlAnswer('the page'), '404': htmlAnswer('no such funding') },
  }),
  cancelFunding: defineRoute({
    method: 'post',
    path: '/console/fundings/{fundingId}/cancel',
    operationId: 'consoleCancelFunding',
    tag: 'console',
    summary: 'Cancel a funding that has not started executing (POST /ops/fundings/{fundingId}/cancel’s rules)',
    access: { consoleScope: 'fund' },
    params: fundingIdParameter,
    responses: {
      '303': redirectAnswer('cancelled: back to the funding'),
      '404': htmlAnswer('no such funding'),
      '409': htmlAnswer('executing or final'),
    },
  }),
  resolveFunding: defineRoute({
    method: 'post',
    path: '/console/fundings/{fundingId}/resolve',
    operationId: 'consoleResolveFunding',
    tag: 'console',
    summary: 'Resolve a funding in NEEDS_REVIEW, with a note (POST /ops/fundings/{fundingId}/resolve’s rules)',
    access: { consoleScope: 'resolve' },
    params: fundingIdParameter,
    responses: {
      '303': redirectAnswer('resolved: back to the funding or the review queue'),
      '400': htmlAnswer('no outcome, or no note'),
      '404': htmlAnswer('no such funding'),
      '409': htmlAnswer('not in NEEDS_REVIEW'),
      '503': htmlAnswer(
        'its workflow cannot take the resolution just now (Temporal unreachable or busy, or its workflow task failing): nothing was done, with Retry-After; or a page titled Done: resolved, only not read back under load (not to be sent again)',
        { 'Retry-After': retryAfterHeader },
      ),
    },
  }),
};

export const fundingRoutes: readonly AnyRouteSpec[] = Object.values(routes);

const fundingPath = (fundingId: string) => `${CONSOLE_PATH}/fundings/${segment(fundingId)}`;

const doneMessages = {
  cancelled: 'Cancelled: the funding ended FAILED (CANCELLED) and its hold was released.',
  resolved: 'Resolved: the outcome and your note are recorded under your name.',
};

/** Every Request-Reference-No the funding's record names: its events' and its review's. */
const referencesOf = (funding: FundingView): string[] =>
  [
    ...funding.events.map((event) => event.requestReferenceNo),
    ...(funding.review?.attempts.map((attempt) => attempt.requestReferenceNo) ?? []),
  ].filter((reference): reference is string => reference !== null);

export function addFundingRoutes(router: Router, deps: FundingPageDependencies): void {
  const add = consoleRoutesOn(router);

  add(routes.funding, async (req, res) => {
    const person = personOf(res);
    const id = idSchema.safeParse(req.params.fundingId);
    const [funding, stored] = id.success
      ? await Promise.all([deps.fundings.view(id.data), fundingFacts(deps.database, id.data)])
      : [null, null];
    if (!funding || !stored) {
      sendNotFound(res, person, 'search', `funding ${req.params.fundingId}`);
      return;
    }
    const [calls, entries, deliveries] = await Promise.all([
      walletCallsByReference(deps.database, referencesOf(funding)),
      deps.ledger.entriesOf(deps.database, { fundingId: funding.fundingId }),
      deps.webhooks.deliveriesOf({ fundingId: funding.fundingId }),
    ]);
    const tz = deps.timeZone;
    const temporal = workflowLink(deps.temporalUi, stored.workflowId);
    // Carried by a lane's or a batch's run: the run that took it through its one pass.
    const source =
      funding.source.type === 'TREASURY'
        ? `<a href="${CONSOLE_PATH}/accounts/TREASURY">TREASURY</a>`
        : `<a href="${CONSOLE_PATH}/accounts/${escapeHtml(segment(funding.source.partnerUserId))}">USER_BALANCE of ${escapeHtml(funding.source.partnerUserId)}</a>`;
    const recipient =
      funding.recipient.type === 'CODE'
        ? `cash-in code <span class="id">${escapeHtml(funding.recipient.masked)}</span>`
        : `linked wallet <a href="${CONSOLE_PATH}/links/${escapeHtml(funding.recipient.linkId)}">${escapeHtml(funding.recipient.linkId)}</a>`;
    const actions: string[] = [];
    if (may(person, 'fund') && (cancellableFundingStatuses as readonly string[]).includes(funding.status)) {
      actions.push(
        `<form method="post" action="${fundingPath(funding.fundingId)}/cancel" data-confirm="Cancel this funding? It ends FAILED and cannot be restarted.">${csrfField(person)}<button type="submit" class="danger">Cancel funding</button></form>`,
      );
    }
    const resolving =
      funding.status === 'NEEDS_REVIEW' && may(person, 'resolve')
        ? card(
            'resolve',
            'Resolve',
            resolveForm(person, {
              action: `${fundingPath(funding.fundingId)}/resolve`,
              id: funding.fundingId,
              outcomes: fundingResolutions(funding),
              returnTo: 'record',
            }),
            true,
          )
        : '';
    const body = [
      doneNotice(req, res, doneMessages),
      card(
        'funding',
        'The funding',
        facts([
          ['Funding id', idCell(funding.fundingId, 'funding id')],
          ['State', stateBadge(funding.status)],
          ['Amount', money(funding.amount)],
          ['Source', source],
          ['Recipient', recipient],
          [
            'Transfer id',
            funding.transferId ? idCell(funding.transferId, 'transfer id') : '<span class="muted">none yet</span>',
          ],
          ...(stored.abandonedTransferIds.length > 0
            ? ([
                [
                  'Abandoned intents',
                  stored.abandonedTransferIds.map((transfer) => idCell(transfer, 'transfer id')).join(' '),
                ],
              ] as const)
            : []),
          ['Idempotency key', idCell(stored.idempotencyKey, 'idempotency key')],
          ...(stored.batch
            ? ([
                [
                  'Batch',
                  `<a href="${CONSOLE_PATH}/batches/${escapeHtml(stored.batch.batchId)}">${escapeHtml(stored.batch.name)}</a>${stored.batch.reference ? `, item ${idCell(stored.batch.reference, 'batch reference')}` : ''}`,
                ],
              ] as const)
            : []),
          [
            'Error',
            funding.error
              ? `${escapeHtml(funding.error.code)}: ${escapeHtml(funding.error.message)}`
              : '<span class="muted">none</span>',
          ],
          ['Requested', when(funding.createdAt, tz)],
          ['Last change', when(funding.updatedAt, tz)],
          [
            'Workflow',
            temporal
              ? `<a href="${escapeHtml(temporal)}">${escapeHtml(stored.workflowId)} in the Temporal UI</a>`
              : idCell(stored.workflowId, 'workflow id'),
          ],
          ...carriedByRow(deps.temporalUi, funding.carriedBy),
        ]) + (actions.length > 0 ? `<div class="actions">${actions.join('')}</div>` : ''),
      ),
      resolving,
      ...recordHistoryCards(
        {
          noun: 'funding',
          status: funding.status,
          review: funding.review ?? null,
          events: funding.events,
          calls,
          entries,
          deliveries,
        },
        tz,
      ),
    ].join('\n');
    sendConsolePage(res, 200, { title: `Funding ${funding.fundingId.slice(0, 8)}`, section: 'search', person, body });
  });

  add(routes.cancelFunding, async (req, res) => {
    const person = personOf(res);
    const id = idSchema.safeParse(req.params.fundingId);
    const result = id.success ? await deps.fundings.cancel(id.data, person.name) : ({ kind: 'not-found' } as const);
    const back = { href: fundingPath(req.params.fundingId), label: 'Back to the funding' };
    switch (result.kind) {
      case 'cancelled':
        sendBack(res, fundingPath(result.funding.fundingId), 'cancelled');
        return;
      case 'not-found':
        sendNotFound(res, person, 'search', `funding ${req.params.fundingId}`);
        return;
      case 'not-cancellable':
        sendRefused(res, 409, {
          person,
          section: 'search',
          title: 'Not cancelled',
          message: `The funding is ${result.status}: only a funding that has not started executing can be cancelled. Nothing was done.`,
          back,
        });
        return;
    }
  });

  add(routes.resolveFunding, async (req, res) => {
    const person = personOf(res);
    const returnTo = formField(req, 'return') === 'review' ? 'review' : 'record';
    const back =
      returnTo === 'review'
        ? { href: `${CONSOLE_PATH}/review`, label: 'Back to the review queue' }
        : { href: fundingPath(req.params.fundingId), label: 'Back to the funding' };
    const id = idSchema.safeParse(req.params.fundingId);
    if (!id.success) {
      sendNotFound(res, person, 'review', `funding ${req.params.fundingId}`);
      return;
    }
    const parsed = resolveFundingSchema.safeParse({ outcome: formField(req, 'outcome'), note: formField(req, 'note') });
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
    const result = await deps.fundings.resolve(id.data, parsed.data, person.name);
    switch (result.kind) {
      case 'resolved':
        if (returnTo === 'review')
          sendBack(res, `${CONSOLE_PATH}/review`, 'resolved', { item: result.funding.fundingId });
        else sendBack(res, fundingPath(result.funding.fundingId), 'resolved');
        return;
      case 'not-found':
        sendNotFound(res, person, 'review', `funding ${id.data}`);
        return;
      case 'not-in-review':
        sendRefused(res, 409, {
          person,
          section: 'review',
          title: 'Not resolved',
          message: `The funding is ${result.status}: only a funding in NEEDS_REVIEW can be resolved. Nothing was done.`,
          back,
        });
        return;
      case 'never-executed':
        sendRefused(res, 409, {
          person,
          section: 'review',
          title: 'Not resolved',
          message:
            'walletflow never sent an execute for this funding (the wallet’s create answer did not match the request): nothing was moved, so it cannot be APPROVED. Resolve it FAILED. Nothing was done.',
          back,
        });
        return;
      case 'workflow-unavailable':
        res.setHeader('Retry-After', String(result.refusal.retryAfterSeconds));
        sendRefused(res, 503, {
          person,
          section: 'review',
          title: 'Not resolved',
          message: resolutionNotTakenWords('funding', result.refusal),
          back,
        });
        return;
    }
  });
}

/** The row naming the shared run that carried the funding's one pass (a lane's, a batch's), when one did. */
function carriedByRow(
  temporalUi: ConsoleServices['temporalUi'],
  carriedBy: FundingView['carriedBy'],
): Array<[string, string]> {
  if (!carriedBy) return [];
  const link = workflowLink(temporalUi, carriedBy.workflowId, carriedBy.runId);
  return [
    [
      'Carried by',
      link
        ? `<a href="${escapeHtml(link)}">${escapeHtml(carriedBy.workflowId)} in the Temporal UI</a>`
        : idCell(carriedBy.workflowId, 'workflow id'),
    ],
  ];
}
