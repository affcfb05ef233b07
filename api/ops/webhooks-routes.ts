// The webhooks ops API (contract-decisions section 13): register an endpoint (its secret shown
// once), read and delete it; list deliveries with their attempt log; redeliver one (a dead letter,
// or a delivered one sent again). The rules live in webhooks/webhook-store.ts.
import { Router } from 'express';
import { z } from 'zod';
import {
  createWebhookEndpointSchema,
  webhookDeliverySchema,
  webhookDeliveryStatuses,
} from '../../domain/webhook.ts';
import { listQuerySchema } from '../../lib/list-page.ts';
import { pageSchema } from '../../lib/page-cursor.ts';
import type { WebhookStore } from '../../webhooks/webhook-store.ts';
import { sendProblem } from '../http/problem.ts';
import { validationProblem } from '../http/validation.ts';
import { sendListPage } from './list-page-response.ts';
import { opsKeyNameOf } from './ops-auth.ts';
import { resolvedByOf } from './ops-actor.ts';
import { refusedWebhookUrl } from '../../webhooks/target-guard.ts';

export interface OpsWebhooksDependencies {
  webhooks: WebhookStore;
  /** Production: only public https endpoints may be registered (issue 26 #4). */
  publicTargetsOnly?: boolean;
}

/** An endpoint or a delivery id in a path: anything else names nothing (404). */
export const webhookEndpointIdSchema = z.uuid();
export const webhookDeliveryIdSchema = z.uuid();

/** GET /ops/webhooks/deliveries: the list filters and paging, and the endpoint. */
export const webhookDeliveryListQuerySchema = listQuerySchema(webhookDeliveryStatuses).extend({ endpointId: z.uuid().optional() });

/** A page of GET /ops/webhooks/deliveries. */
export const webhookDeliveryPageSchema = pageSchema(webhookDeliverySchema);

export function opsWebhooksRouter(deps: OpsWebhooksDependencies): Router {
  const router = Router();
  const endpointNotFound = (res: Parameters<typeof sendProblem>[0], id: string) =>
    sendProblem(res, { status: 404, code: 'WEBHOOK_ENDPOINT_NOT_FOUND', title: 'Not Found', detail: `no webhook endpoint ${id}` });
  const deliveryNotFound = (res: Parameters<typeof sendProblem>[0], id: string) =>
    sendProblem(res, { status: 404, code: 'WEBHOOK_DELIVERY_NOT_FOUND', title: 'Not Found', detail: `no webhook delivery ${id}` });

  router.post('/webhooks/endpoints', async (req, res) => {
    const parsed = createWebhookEndpointSchema.safeParse(req.body);
    if (!parsed.success) {
      validationProblem(res, parsed.error);
      return;
    }
    // Production: a partner's public https endpoint only (issue 26 #4); the deliverer checks every address again.
    const refused = deps.publicTargetsOnly ? refusedWebhookUrl(parsed.data.url) : null;
    if (refused) {
      sendProblem(res, { status: 422, code: 'WEBHOOK_URL_NOT_ALLOWED', title: 'Unprocessable Content', detail: `url ${refused}` });
      return;
    }
    const { endpoint, secret } = await deps.webhooks.createEndpoint(parsed.data, opsKeyNameOf(res.locals));
    res.status(201).json({ id: endpoint.id, secret, url: endpoint.url, events: endpoint.events, createdAt: endpoint.createdAt });
  });

  router.get('/webhooks/endpoints/:endpointId', async (req, res) => {
    const id = webhookEndpointIdSchema.safeParse(req.params.endpointId);
    const endpoint = id.success ? await deps.webhooks.getEndpoint(id.data) : null;
    if (!endpoint) {
      endpointNotFound(res, req.params.endpointId);
      return;
    }
    res.json(endpoint);
  });

  router.delete('/webhooks/endpoints/:endpointId', async (req, res) => {
    const id = webhookEndpointIdSchema.safeParse(req.params.endpointId);
    if (!id.success || !(await deps.webhooks.deleteEndpoint(id.data, resolvedByOf(req, res)))) {
      endpointNotFound(res, req.params.endpointId);
      return;
    }
    res.status(204).end();
  });

  router.get('/webhooks/deliveries', async (req, res) => {
    const query = webhookDeliveryListQuerySchema.safeParse(req.query);
    if (!query.success) {
      validationProblem(res, query.error);
      return;
    }
    sendListPage(res, await deps.webhooks.listDeliveries(query.data));
  });

  router.post('/webhooks/deliveries/:deliveryId/redeliver', async (req, res) => {
    const id = webhookDeliveryIdSchema.safeParse(req.params.deliveryId);
    if (!id.success) {
      deliveryNotFound(res, req.params.deliveryId);
      return;
    }
    const result = await deps.webhooks.redeliver(id.data);
    switch (result.kind) {
      case 'redelivered':
        res.status(202).json(result.delivery);
        return;
      case 'not-found':
        deliveryNotFound(res, id.data);
        return;
      case 'pending':
        sendProblem(res, { status: 409, code: 'WEBHOOK_DELIVERY_PENDING', title: 'Conflict', detail: 'the delivery is still being attempted' });
        return;
      case 'endpoint-deleted':
        sendProblem(res, { status: 409, code: 'WEBHOOK_ENDPOINT_DELETED', title: 'Conflict', detail: 'the delivery’s endpoint was deleted' });
        return;
    }
  });

  return router;
}
