// The outbox: an event row, and a delivery per endpoint subscribed to its type, written by the
// funding and payment records inside the transaction of the move the event reports. A move that
// rolls back takes its event with it; a committed move always has its event. Delivery is the
// worker's (webhooks/deliverer.ts), later, at least once.
import { randomUUID } from 'node:crypto';
import type { Prisma } from '../generated/prisma/client.ts';
import type { WebhookEventBody, WebhookEventType } from '../domain/webhook.ts';

export interface OutboxEvent {
  type: WebhookEventType;
  data: WebhookEventBody['data'];
  fundingId?: string;
  paymentId?: string;
}

/** Writes the event and its deliveries in `tx`; answers the event's id (`evt_…`, the `webhook-id`). */
export async function emitWebhookEvent(tx: Prisma.TransactionClient, event: OutboxEvent): Promise<string> {
  const id = `evt_${randomUUID().replaceAll('-', '')}`;
  const createdAt = new Date();
  const body: WebhookEventBody = { id, type: event.type, createdAt: createdAt.toISOString(), data: event.data };
  await tx.webhookEvent.create({
    data: { id, type: event.type, fundingId: event.fundingId ?? null, paymentId: event.paymentId ?? null, body: JSON.stringify(body), createdAt },
  });
  const endpoints = await tx.webhookEndpoint.findMany({ where: { deletedAt: null, events: { has: event.type } }, select: { id: true } });
  if (endpoints.length > 0) {
    await tx.webhookDelivery.createMany({
      data: endpoints.map((endpoint) => ({ id: randomUUID(), eventId: id, endpointId: endpoint.id, nextAttemptAt: createdAt, createdAt })),
    });
  }
  return id;
}
