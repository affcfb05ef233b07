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
  const [id] = await emitWebhookEvents(tx, [event]);
  return id!;
}

/**
 * Events and their deliveries in `tx`: the events, then one delivery per event and subscribed
 * endpoint (one query for the endpoints, however many events: a chunk of a batch's items
 * finishing together). Answers the events' ids in order.
 */
export async function emitWebhookEvents(tx: Prisma.TransactionClient, events: readonly OutboxEvent[]): Promise<string[]> {
  if (events.length === 0) return [];
  const createdAt = new Date();
  const rows = events.map((event) => {
    const id = `evt_${randomUUID().replaceAll('-', '')}`;
    const body: WebhookEventBody = { id, type: event.type, createdAt: createdAt.toISOString(), data: event.data };
    return { id, type: event.type, fundingId: event.fundingId ?? null, paymentId: event.paymentId ?? null, body: JSON.stringify(body), createdAt };
  });
  await tx.webhookEvent.createMany({ data: rows });
  const types = [...new Set(events.map((event) => event.type))];
  const endpoints = await tx.webhookEndpoint.findMany({ where: { deletedAt: null, events: { hasSome: types } }, select: { id: true, events: true } });
  const deliveries = rows.flatMap((row) =>
    endpoints.filter((endpoint) => (endpoint.events as string[]).includes(row.type)).map((endpoint) => ({ id: randomUUID(), eventId: row.id, endpointId: endpoint.id, nextAttemptAt: createdAt, createdAt })),
  );
  if (deliveries.length > 0) await tx.webhookDelivery.createMany({ data: deliveries });
  return rows.map((row) => row.id);
}
