// Webhooks in the console (contract-decisions section 13): the partner's endpoints, the dead
// letters (deliveries FAILED after their retry window) across them, an endpoint's deliveries a page
// at a time by state, and a delivery with every attempt; a person with the `admin` scope
// redelivers one through the webhook store, as POST /ops/webhooks/deliveries/{id}/redeliver does.
// An endpoint's secret is never shown (it was, once, to whoever registered it).
import { idSchema } from '../../domain/ids.ts';
import type { Router } from 'express';
import { webhookDeliveryStatuses, type WebhookDeliveryStatus, type WebhookDeliveryView } from '../../domain/webhook.ts';
import { defineRoute, htmlAnswer, redirectAnswer, type AnyRouteSpec } from '../http/route-spec.ts';
import { maskedWebhookUrl } from '../../webhooks/masked-url.ts';
import { consoleRoutesOn, personOf } from './console-auth.ts';
import {
  CONSOLE_PATH,
  csrfField,
  escapeHtml,
  idCell,
  notice,
  sendConsolePage,
  stateBadge,
  table,
  when,
  type SignedInPerson,
} from './console-layout.ts';
import type { ConsoleServices } from './console-services.ts';
import {
  card,
  consoleUrl,
  doneNotice,
  facts,
  formField,
  linkedId,
  may,
  pager,
  queryText,
  sendBack,
  sendNotFound,
  sendRefused,
} from './page-pieces.ts';
import { attemptsLogged, deliveriesTable } from './record-pieces.ts';

export type WebhooksPageDependencies = Pick<ConsoleServices, 'webhooks' | 'timeZone'>;

const routes = {
  webhooks: defineRoute({
    method: 'get',
    path: '/console/webhooks',
    operationId: 'consoleWebhooks',
    tag: 'console',
    summary: 'Webhook endpoints and the dead letters (FAILED deliveries) across them, a page at a time',
    access: { consoleScope: 'read' },
    responses: { '200': htmlAnswer('the page') },
  }),
  endpoint: defineRoute({
    method: 'get',
    path: '/console/webhooks/{endpointId}',
    operationId: 'consoleWebhookEndpoint',
    tag: 'console',
    summary: 'An endpoint and its deliveries, a page at a time, by state',
    access: { consoleScope: 'read' },
    params: { endpointId: { schema: idSchema, description: 'the endpoint’s id' } },
    responses: { '200': htmlAnswer('the page'), '404': htmlAnswer('no such endpoint') },
  }),
  delivery: defineRoute({
    method: 'get',
    path: '/console/webhooks/deliveries/{deliveryId}',
    operationId: 'consoleWebhookDelivery',
    tag: 'console',
    summary: 'A delivery and every attempt (status code or error, when, how long)',
    access: { consoleScope: 'read' },
    params: { deliveryId: { schema: idSchema, description: 'the delivery’s id' } },
    responses: { '200': htmlAnswer('the page'), '404': htmlAnswer('no such delivery') },
  }),
  redeliver: defineRoute({
    method: 'post',
    path: '/console/webhooks/deliveries/{deliveryId}/redeliver',
    operationId: 'consoleRedeliverWebhook',
    tag: 'console',
    summary:
      'Send a dead-lettered (FAILED) or delivered delivery again, now (POST /ops/webhooks/deliveries/{deliveryId}/redeliver’s rules)',
    access: { consoleScope: 'admin' },
    params: { deliveryId: { schema: idSchema, description: 'the delivery’s id' } },
    responses: {
      '303': redirectAnswer('due again: back to the delivery'),
      '404': htmlAnswer('no such delivery'),
      '409': htmlAnswer('still being attempted, or its endpoint was deleted'),
    },
  }),
};

export const webhooksRoutes: readonly AnyRouteSpec[] = Object.values(routes);

/** Deliveries per page. */
const PAGE_SIZE = 25;

const deliveryPath = (id: string) => `${CONSOLE_PATH}/webhooks/deliveries/${id}`;

/** The redeliver button of a delivery that may be sent again (FAILED or SUCCEEDED), for an admin. */
function redeliverForm(person: SignedInPerson, delivery: WebhookDeliveryView, returnTo: 'delivery' | 'list'): string {
  if (!may(person, 'admin') || delivery.status === 'PENDING') return '';
  return `<form method="post" action="${deliveryPath(delivery.id)}/redeliver" class="inline">${csrfField(person)}<input type="hidden" name="return" value="${returnTo}"><button type="submit" aria-label="Redeliver ${escapeHtml(delivery.id)}">Redeliver</button></form>`;
}

const doneMessages = {
  redelivered:
    'Redelivered: the delivery is due again now, with a new retry window (the same webhook-id: the receiver can tell it was sent before).',
};

export function addWebhooksRoutes(router: Router, deps: WebhooksPageDependencies): void {
  const add = consoleRoutesOn(router);
  const tz = deps.timeZone;

  add(routes.webhooks, async (req, res) => {
    const person = personOf(res);
    const cursor = queryText(req, 'cursor', 200);
    const [endpoints, dead] = await Promise.all([
      deps.webhooks.listEndpoints(),
      deps.webhooks.listDeliveries({ status: 'FAILED', limit: PAGE_SIZE, cursor }),
    ]);
    const deadList =
      dead.kind === 'invalid-cursor'
        ? notice('That page is not one this console gave: start again from the first.', 'error')
        : `${table(
            'Dead letters, newest first',
            [
              'Delivery',
              'Event',
              'Endpoint',
              'Attempts',
              'Last answer',
              'Created',
              ...(may(person, 'admin') ? ['Action'] : []),
            ],
            dead.items.map((delivery) => {
              const last = delivery.log.at(-1);
              return [
                linkedId(deliveryPath(delivery.id), delivery.id, 'delivery id'),
                `${escapeHtml(delivery.eventType)} ${idCell(delivery.eventId, 'event id')}`,
                linkedId(`${CONSOLE_PATH}/webhooks/${delivery.endpointId}`, delivery.endpointId, 'endpoint id'),
                attemptsLogged(delivery),
                last
                  ? `${last.statusCode === null ? escapeHtml(last.error ?? 'no answer') : `HTTP ${last.statusCode}`} ${when(last.at, tz)}`
                  : '',
                when(delivery.createdAt, tz),
                ...(may(person, 'admin') ? [redeliverForm(person, delivery, 'list')] : []),
              ];
            }),
          )}${pager(dead.nextCursor ? consoleUrl(`${CONSOLE_PATH}/webhooks`, { cursor: dead.nextCursor }) : null, 'Older dead letters')}`;
    const body = [
      doneNotice(req, res, doneMessages),
      card(
        'endpoints',
        'Endpoints',
        table(
          'Webhook endpoints, newest first',
          ['Endpoint', 'URL', 'Events', 'Registered', 'State'],
          endpoints.map((endpoint) => [
            linkedId(`${CONSOLE_PATH}/webhooks/${endpoint.id}`, endpoint.id, 'endpoint id'),
            `<span class="id">${escapeHtml(maskedWebhookUrl(endpoint.url))}</span>`,
            escapeHtml(endpoint.events.join(', ')),
            `${when(endpoint.createdAt, tz)}${endpoint.createdBy ? ` by ${escapeHtml(endpoint.createdBy)}` : ''}`,
            endpoint.deletedAt
              ? `${stateBadge('DELETED')} ${when(endpoint.deletedAt, tz)}${endpoint.deletedBy ? ` by ${escapeHtml(endpoint.deletedBy)}` : ''}`
              : stateBadge('ACTIVE'),
          ]),
        ),
      ),
      card(
        'dead-letters',
        'Dead letters',
        `<p class="muted">Deliveries that failed for their whole retry window. ${may(person, 'admin') ? 'Redeliver one once the partner’s endpoint works again.' : 'Redelivering needs the admin scope.'}</p>${deadList}`,
        dead.kind === 'page' && dead.items.length > 0,
      ),
    ].join('\n');
    sendConsolePage(res, 200, { title: 'Webhooks', section: 'webhooks', person, body });
  });

  add(routes.endpoint, async (req, res) => {
    const person = personOf(res);
    const id = idSchema.safeParse(req.params.endpointId);
    const endpoint = id.success ? await deps.webhooks.getEndpointRecord(id.data) : null;
    if (!endpoint) {
      sendNotFound(res, person, 'webhooks', `webhook endpoint ${req.params.endpointId}`);
      return;
    }
    const statusText = queryText(req, 'status', 10);
    const status = (webhookDeliveryStatuses as readonly string[]).includes(statusText ?? '')
      ? (statusText as WebhookDeliveryStatus)
      : undefined;
    const cursor = queryText(req, 'cursor', 200);
    const deliveries = await deps.webhooks.listDeliveries({
      endpointId: endpoint.id,
      status,
      limit: PAGE_SIZE,
      cursor,
    });
    const here = `${CONSOLE_PATH}/webhooks/${endpoint.id}`;
    const filters = `<nav class="pager" aria-label="Deliveries by state">${[undefined, ...webhookDeliveryStatuses]
      .map(
        (option) =>
          `<a href="${escapeHtml(consoleUrl(here, { status: option }))}"${option === status ? ' aria-current="true"' : ''}>${option ?? 'All'}</a>`,
      )
      .join('')}</nav>`;
    const list =
      deliveries.kind === 'invalid-cursor'
        ? notice('That page is not one this console gave: start again from the first.', 'error')
        : `${deliveriesTable(deliveries.items, tz, { withEndpoint: false })}${pager(deliveries.nextCursor ? consoleUrl(here, { status, cursor: deliveries.nextCursor }) : null, 'Older deliveries')}`;
    const body = [
      card(
        'endpoint',
        'The endpoint',
        facts([
          ['Endpoint id', idCell(endpoint.id, 'endpoint id')],
          ['URL', `<span class="id">${escapeHtml(maskedWebhookUrl(endpoint.url))}</span>`],
          ['Events', escapeHtml(endpoint.events.join(', '))],
          [
            'Registered',
            `${when(endpoint.createdAt, tz)}${endpoint.createdBy ? ` by ${escapeHtml(endpoint.createdBy)}` : ''}`,
          ],
          [
            'State',
            endpoint.deletedAt
              ? `${stateBadge('DELETED')} ${when(endpoint.deletedAt, tz)}${endpoint.deletedBy ? ` by ${escapeHtml(endpoint.deletedBy)}` : ''}`
              : stateBadge('ACTIVE'),
          ],
        ]),
      ),
      card('deliveries', `Deliveries${status ? ` (${status})` : ''}, newest first`, `${filters}${list}`),
    ].join('\n');
    sendConsolePage(res, 200, { title: 'Webhook endpoint', section: 'webhooks', person, body });
  });

  add(routes.delivery, async (req, res) => {
    const person = personOf(res);
    const id = idSchema.safeParse(req.params.deliveryId);
    const delivery = id.success ? await deps.webhooks.getDelivery(id.data) : null;
    if (!delivery) {
      sendNotFound(res, person, 'webhooks', `webhook delivery ${req.params.deliveryId}`);
      return;
    }
    const form = redeliverForm(person, delivery, 'delivery');
    const body = [
      doneNotice(req, res, doneMessages),
      card(
        'delivery',
        'The delivery',
        `${facts([
          ['Delivery id', idCell(delivery.id, 'delivery id')],
          ['Event', `${escapeHtml(delivery.eventType)} ${idCell(delivery.eventId, 'event id')}`],
          ['Endpoint', linkedId(`${CONSOLE_PATH}/webhooks/${delivery.endpointId}`, delivery.endpointId, 'endpoint id')],
          ['State', stateBadge(delivery.status)],
          ['Attempts since created or redelivered', String(delivery.attempts)],
          [
            'Next attempt',
            delivery.nextAttemptAt ? when(delivery.nextAttemptAt, tz) : '<span class="muted">none</span>',
          ],
          ['Delivered', delivery.deliveredAt ? when(delivery.deliveredAt, tz) : '<span class="muted">not yet</span>'],
          [
            'Last redelivered',
            delivery.redeliveredAt
              ? `${when(delivery.redeliveredAt, tz)} by ${escapeHtml(delivery.redeliveredBy ?? '')}`
              : '<span class="muted">never</span>',
          ],
          ['Created', when(delivery.createdAt, tz)],
        ])}${form ? `<div class="actions">${form}</div>` : ''}`,
        delivery.status === 'FAILED',
      ),
      card(
        'attempts',
        delivery.logged > delivery.log.length
          ? `The latest ${delivery.log.length} of ${attemptsLogged(delivery)} attempts`
          : 'Every attempt',
        table(
          'Attempts, oldest first',
          ['When', 'Answer', 'Error', 'Took'],
          delivery.log.map((attempt) => [
            when(attempt.at, tz),
            attempt.statusCode === null ? '<span class="muted">none</span>' : `HTTP ${attempt.statusCode}`,
            escapeHtml(attempt.error ?? ''),
            `${attempt.durationMs} ms`,
          ]),
          new Set([3]),
        ),
      ),
    ].join('\n');
    sendConsolePage(res, 200, { title: 'Webhook delivery', section: 'webhooks', person, body });
  });

  add(routes.redeliver, async (req, res) => {
    const person = personOf(res);
    const id = idSchema.safeParse(req.params.deliveryId);
    const result = id.success ? await deps.webhooks.redeliver(id.data, person.name) : ({ kind: 'not-found' } as const);
    const back = { href: deliveryPath(req.params.deliveryId), label: 'Back to the delivery' };
    switch (result.kind) {
      case 'redelivered':
        if (formField(req, 'return') === 'list') sendBack(res, `${CONSOLE_PATH}/webhooks`, 'redelivered');
        else sendBack(res, deliveryPath(result.delivery.id), 'redelivered');
        return;
      case 'not-found':
        sendNotFound(res, person, 'webhooks', `webhook delivery ${req.params.deliveryId}`);
        return;
      case 'pending':
        sendRefused(res, 409, {
          person,
          section: 'webhooks',
          title: 'Not redelivered',
          message: 'The delivery is still being attempted: it is not sent again while it is. Nothing was done.',
          back,
        });
        return;
      case 'endpoint-deleted':
        sendRefused(res, 409, {
          person,
          section: 'webhooks',
          title: 'Not redelivered',
          message: 'The delivery’s endpoint was deleted: there is nowhere to send it. Nothing was done.',
          back,
        });
        return;
    }
  });
}
