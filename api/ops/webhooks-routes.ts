// The webhooks ops API (contract-decisions section 13): register an endpoint (its secret shown
// once), read and delete it; list deliveries with their attempt log; redeliver one (a dead letter,
// or a delivered one sent again). The rules live in webhooks/webhook-store.ts.
import { idSchema } from '../../domain/ids.ts';
import type { Router } from 'express';
import {
  createWebhookEndpointSchema,
  webhookDeliverySchema,
  webhookDeliveryStatuses,
  webhookEndpointCreatedSchema,
  webhookEndpointSchema,
  webhookEventBodySchema,
} from '../../domain/webhook.ts';
import { listQuerySchema } from '../../lib/list-page.ts';
import { pageSchema } from '../../lib/page-cursor.ts';
import type { WebhookStore } from '../../webhooks/webhook-store.ts';
import { sendProblem } from '../http/problem.ts';
import { routesOn, strictRouter } from '../http/route-registration.ts';
import {
  defineRoute,
  jsonAnswer,
  named,
  problemAnswer,
  type AnyRouteSpec,
  type NamedSchema,
} from '../http/route-spec.ts';
import { validationProblem } from '../http/validation.ts';
import { sendListPage } from './list-page-response.ts';
import { opsKeyNameOf } from './ops-key.ts';
import { actorHeader, resolvedByOf } from './ops-actor.ts';
import { badListQueryAnswer, listFilterDescriptions, malformedBodyCodes } from './ops-answers.ts';
import { refusedWebhookUrl } from '../../webhooks/target-guard.ts';

export interface OpsWebhooksDependencies {
  webhooks: WebhookStore;
  /** Production: only public https endpoints may be registered (docs/security.md: no internal address reachable). */
  publicTargetsOnly?: boolean;
}

/** An endpoint or a delivery id in a path: anything else names nothing (404). */
export const webhookEndpointIdSchema = idSchema;
export const webhookDeliveryIdSchema = idSchema;

/** GET /ops/webhooks/deliveries: the list filters and paging, and the endpoint. */
export const webhookDeliveryListQuerySchema = listQuerySchema(webhookDeliveryStatuses).extend({
  endpointId: idSchema.optional(),
});

/** A page of GET /ops/webhooks/deliveries. */
export const webhookDeliveryPageSchema = pageSchema(webhookDeliverySchema);

const endpointIdParameter = { endpointId: { schema: webhookEndpointIdSchema, description: 'the endpoint’s id' } };
const noSuchEndpoint = problemAnswer('no such endpoint, or deleted', ['WEBHOOK_ENDPOINT_NOT_FOUND']);

// Webhook endpoints decide where funding and payment views are sent: admin. Redelivery resends to
// a registered endpoint only, but is an operator's action: admin too. Reading is read.
const routes = {
  createWebhookEndpoint: defineRoute({
    method: 'post',
    path: '/ops/webhooks/endpoints',
    operationId: 'createWebhookEndpoint',
    tag: 'webhooks',
    summary:
      'Register an endpoint for some events (scope admin). Each event is POSTed as a `WebhookEvent` body signed per Standard Webhooks (`webhook-id`, `webhook-timestamp`, `webhook-signature: v1,<base64 HMAC-SHA256>` under the secret), retried with backoff for at least 24 hours; receivers dedupe on `webhook-id`',
    access: { opsScope: 'admin' },
    body: {
      mediaType: 'application/json',
      schema: named('CreateWebhookEndpoint', createWebhookEndpointSchema),
      description: 'the URL (http or https) and the events it receives',
    },
    responses: {
      '201': jsonAnswer(
        named('WebhookEndpointCreated', webhookEndpointCreatedSchema),
        'the endpoint and its secret (`whsec_…`): shown this once, stored encrypted',
      ),
      '400': problemAnswer('a malformed body; nothing stored', ['VALIDATION_ERROR', ...malformedBodyCodes]),
      '422': problemAnswer(
        'in production: not an https URL, or one inside walletflow’s own network (loopback, private, link-local, a single-label host); nothing stored',
        ['WEBHOOK_URL_NOT_ALLOWED'],
      ),
    },
  }),
  getWebhookEndpoint: defineRoute({
    method: 'get',
    path: '/ops/webhooks/endpoints/{endpointId}',
    operationId: 'getWebhookEndpoint',
    tag: 'webhooks',
    summary:
      'An endpoint (never its secret; its address with any user name, password, query values and fragment masked)',
    access: { opsScope: 'read' },
    params: endpointIdParameter,
    responses: {
      '200': jsonAnswer(named('WebhookEndpoint', webhookEndpointSchema), 'the endpoint'),
      '404': noSuchEndpoint,
    },
  }),
  deleteWebhookEndpoint: defineRoute({
    method: 'delete',
    path: '/ops/webhooks/endpoints/{endpointId}',
    operationId: 'deleteWebhookEndpoint',
    tag: 'webhooks',
    summary:
      'Delete an endpoint (scope admin): no new deliveries, its pending ones end FAILED; its deliveries stay listed',
    access: { opsScope: 'admin' },
    params: endpointIdParameter,
    headers: actorHeader(
      'who deletes it (stored after the key’s name as the endpoint’s `deletedBy`); ignored when malformed',
    ),
    responses: { '204': { description: 'deleted' }, '404': noSuchEndpoint },
  }),
  listWebhookDeliveries: defineRoute({
    method: 'get',
    path: '/ops/webhooks/deliveries',
    operationId: 'listWebhookDeliveries',
    tag: 'webhooks',
    summary:
      'Deliveries, newest first, a page at a time, each with its latest attempts (status code or error, and when) and how many it has had',
    access: { opsScope: 'read' },
    query: {
      schema: webhookDeliveryListQuerySchema,
      descriptions: { ...listFilterDescriptions, endpointId: 'only this endpoint’s deliveries' },
    },
    responses: {
      '200': jsonAnswer(named('WebhookDeliveryPage', webhookDeliveryPageSchema), 'a page'),
      '400': badListQueryAnswer,
    },
  }),
  redeliverWebhook: defineRoute({
    method: 'post',
    path: '/ops/webhooks/deliveries/{deliveryId}/redeliver',
    operationId: 'redeliverWebhook',
    tag: 'webhooks',
    summary:
      'Send a FAILED (dead-lettered) or delivered delivery again, now, with a new retry window (scope admin); the same `webhook-id`',
    access: { opsScope: 'admin' },
    params: { deliveryId: { schema: webhookDeliveryIdSchema, description: 'the delivery’s id' } },
    headers: actorHeader(
      'who sends it again (stored after the key’s name as the delivery’s `redeliveredBy`); ignored when malformed',
    ),
    responses: {
      '202': jsonAnswer(named('WebhookDelivery', webhookDeliverySchema), 'due again'),
      '404': problemAnswer('no such delivery', ['WEBHOOK_DELIVERY_NOT_FOUND']),
      '409': problemAnswer('still being attempted, or its endpoint was deleted', [
        'WEBHOOK_DELIVERY_PENDING',
        'WEBHOOK_ENDPOINT_DELETED',
      ]),
    },
  }),
};

/** The webhooks routes, as the document lists them. */
export const webhooksRoutes: readonly AnyRouteSpec[] = Object.values(routes);

/** What the partner's endpoints receive: documented, though no route of this API answers it. */
export const webhookEventComponent: NamedSchema = named('WebhookEvent', webhookEventBodySchema);

export function opsWebhooksRouter(deps: OpsWebhooksDependencies): Router {
  const router = strictRouter();
  const add = routesOn(router, '/ops');
  const endpointNotFound = (res: Parameters<typeof sendProblem>[0], id: string) =>
    sendProblem(res, {
      status: 404,
      code: 'WEBHOOK_ENDPOINT_NOT_FOUND',
      title: 'Not Found',
      detail: `no webhook endpoint ${id}`,
    });
  const deliveryNotFound = (res: Parameters<typeof sendProblem>[0], id: string) =>
    sendProblem(res, {
      status: 404,
      code: 'WEBHOOK_DELIVERY_NOT_FOUND',
      title: 'Not Found',
      detail: `no webhook delivery ${id}`,
    });

  add(routes.createWebhookEndpoint, async (req, res) => {
    const parsed = createWebhookEndpointSchema.safeParse(req.body);
    if (!parsed.success) {
      validationProblem(res, parsed.error);
      return;
    }
    // Production: a partner's public https endpoint only, never an internal address; the deliverer checks every address
    // again.
    const refused = deps.publicTargetsOnly ? refusedWebhookUrl(parsed.data.url) : null;
    if (refused) {
      sendProblem(res, {
        status: 422,
        code: 'WEBHOOK_URL_NOT_ALLOWED',
        title: 'Unprocessable Content',
        detail: `url ${refused}`,
      });
      return;
    }
    const { endpoint, url, secret } = await deps.webhooks.createEndpoint(parsed.data, opsKeyNameOf(res.locals));
    // The admin who sent the address gets it back whole, this once; every other view masks it.
    res.status(201).json({ id: endpoint.id, secret, url, events: endpoint.events, createdAt: endpoint.createdAt });
  });

  add(routes.getWebhookEndpoint, async (req, res) => {
    const id = webhookEndpointIdSchema.safeParse(req.params.endpointId);
    const endpoint = id.success ? await deps.webhooks.getEndpoint(id.data) : null;
    if (!endpoint) {
      endpointNotFound(res, req.params.endpointId);
      return;
    }
    res.json(endpoint);
  });

  add(routes.deleteWebhookEndpoint, async (req, res) => {
    const id = webhookEndpointIdSchema.safeParse(req.params.endpointId);
    if (!id.success || !(await deps.webhooks.deleteEndpoint(id.data, resolvedByOf(req, res)))) {
      endpointNotFound(res, req.params.endpointId);
      return;
    }
    res.status(204).end();
  });

  add(routes.listWebhookDeliveries, async (req, res) => {
    const query = webhookDeliveryListQuerySchema.safeParse(req.query);
    if (!query.success) {
      validationProblem(res, query.error);
      return;
    }
    sendListPage(res, await deps.webhooks.listDeliveries(query.data));
  });

  add(routes.redeliverWebhook, async (req, res) => {
    const id = webhookDeliveryIdSchema.safeParse(req.params.deliveryId);
    if (!id.success) {
      deliveryNotFound(res, req.params.deliveryId);
      return;
    }
    const result = await deps.webhooks.redeliver(id.data, resolvedByOf(req, res));
    switch (result.kind) {
      case 'redelivered':
        res.status(202).json(result.delivery);
        return;
      case 'not-found':
        deliveryNotFound(res, id.data);
        return;
      case 'pending':
        sendProblem(res, {
          status: 409,
          code: 'WEBHOOK_DELIVERY_PENDING',
          title: 'Conflict',
          detail: 'the delivery is still being attempted',
        });
        return;
      case 'endpoint-deleted':
        sendProblem(res, {
          status: 409,
          code: 'WEBHOOK_ENDPOINT_DELETED',
          title: 'Conflict',
          detail: 'the delivery’s endpoint was deleted',
        });
        return;
    }
  });

  return router;
}
