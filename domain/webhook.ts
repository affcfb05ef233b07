// Webhooks to the partner's systems (contract-decisions section 13): the event types, which state
// change each reports, the body every delivery carries, and the ops API's shapes for endpoints and
// deliveries. Signed per Standard Webhooks (webhooks/signature.ts); at-least-once, deduplicable by id.
import { z } from 'zod';
import { fundingSchema, type FundingStatus } from './funding.ts';
import { paymentSchema, type PaymentStatus } from './payment.ts';
import { batchViewSchema, type BatchState } from './funding-batch.ts';

export const webhookEventTypes = [
  'funding.approved',
  'funding.declined',
  'funding.rejected',
  'funding.failed',
  'funding.needs_review',
  'payment.succeeded',
  'payment.failed',
  'payment.needs_review',
  'batch.completed',
  'batch.cancelled',
] as const;
export type WebhookEventType = (typeof webhookEventTypes)[number];

/**
 * What one round of the deliverer reports (webhooks/deliverer.ts counts it, the deliverWebhooks workflow records it):
 * the claims it made and how its attempts ended. Counted per round, never a secret or a URL.
 */
export interface DeliveryRoundReport {
  batches: number;
  claimed: number;
  succeeded: number;
  retrying: number;
  failed: number;
}

/** The event a funding's move to `status` emits: its final states and NEEDS_REVIEW; null for the others. */
export function fundingWebhookEventType(status: FundingStatus): WebhookEventType | null {
  switch (status) {
    case 'APPROVED':
      return 'funding.approved';
    case 'DECLINED':
      return 'funding.declined';
    case 'REJECTED':
      return 'funding.rejected';
    case 'FAILED':
      return 'funding.failed';
    case 'NEEDS_REVIEW':
      return 'funding.needs_review';
    default:
      return null;
  }
}

/** The event a batch's move to `state` emits: its end (COMPLETED, CANCELLED); null for the others. */
export function batchWebhookEventType(state: BatchState): WebhookEventType | null {
  return state === 'COMPLETED' ? 'batch.completed' : state === 'CANCELLED' ? 'batch.cancelled' : null;
}

/** The event a payment's move to `status` emits: SUCCEEDED, FAILED and NEEDS_REVIEW; null for the others. */
export function paymentWebhookEventType(status: PaymentStatus): WebhookEventType | null {
  switch (status) {
    case 'SUCCEEDED':
      return 'payment.succeeded';
    case 'FAILED':
      return 'payment.failed';
    case 'NEEDS_REVIEW':
      return 'payment.needs_review';
    default:
      return null;
  }
}

/** The body of every delivery: `data` is the funding, the payment or the batch as the ops API shows it. */
export const webhookEventBodySchema = z.object({
  id: z.string(),
  type: z.enum(webhookEventTypes),
  createdAt: z.iso.datetime(),
  data: z.union([fundingSchema, paymentSchema, batchViewSchema]),
});
export type WebhookEventBody = z.infer<typeof webhookEventBodySchema>;

/** POST /ops/webhooks/endpoints: where to send which events (http(s); at least one event, each once). */
export const createWebhookEndpointSchema = z
  .object({
    url: z
      .url({ protocol: /^https?$/, error: 'url must be an http(s) URL' })
      .max(2048)
      // The URL parser takes a NUL or an ESC inside a path and encodes it, but the text as sent is what is stored:
      // PostgreSQL refuses a NUL (a 500), and an ESC would be shown and logged as it is.
      .refine(
        (url) => [...url].every((char) => char.charCodeAt(0) > 0x1f && char.charCodeAt(0) !== 0x7f),
        'url must not contain control characters',
      ),
    events: z
      .array(z.enum(webhookEventTypes, { error: `events must be among ${webhookEventTypes.join(', ')}` }))
      .min(1, 'events must name at least one event')
      .refine((events) => new Set(events).size === events.length, 'events must not repeat an event'),
  })
  .strict();
export type CreateWebhookEndpointRequest = z.infer<typeof createWebhookEndpointSchema>;

/** The answer of POST /ops/webhooks/endpoints: the only time the secret is shown. */
export const webhookEndpointCreatedSchema = z.object({
  id: z.uuid(),
  secret: z.string().regex(/^whsec_[A-Za-z0-9+/]+=*$/),
  url: z
    .string()
    .meta({ description: 'the address as sent, whole: shown this once (every later view masks its credentials)' }),
  events: z.array(z.enum(webhookEventTypes)),
  createdAt: z.iso.datetime(),
});

/** An endpoint as GET shows it: never its secret. */
export const webhookEndpointSchema = z.object({
  id: z.uuid(),
  url: z.string().meta({
    description:
      'the address, masked: a user name and a password as `***`, each query value as `…`, no fragment; scheme, host, port, path and query names as stored (`https://***:***@hooks.example.com/in?token=…`). Only the answer to the creation has it whole',
  }),
  events: z.array(z.enum(webhookEventTypes)),
  createdBy: z.string().nullable(),
  createdAt: z.iso.datetime(),
});
export type WebhookEndpointView = z.infer<typeof webhookEndpointSchema>;

/**
 * PENDING: due now or at nextAttemptAt; SUCCEEDED: a 2xx came back; FAILED: retries exhausted (dead letter) until
 * redelivered.
 */
export const webhookDeliveryStatuses = ['PENDING', 'SUCCEEDED', 'FAILED'] as const;
export type WebhookDeliveryStatus = (typeof webhookDeliveryStatuses)[number];

export const webhookAttemptSchema = z.object({
  at: z.iso.datetime(),
  /** The endpoint's HTTP status; null when no answer came (the error says why). */
  statusCode: z.number().int().nullable(),
  error: z.string().nullable(),
  durationMs: z.number().int(),
});

/**
 * A delivery's attempts shown with it: its latest, oldest first, in a list of deliveries, and read alone (its own page,
 * a redelivery's answer). A redelivery keeps every earlier attempt, so a log grows without end; `logged` counts them,
 * to LOGGED_COUNT_LIMIT.
 */
export const LISTED_LOG_ATTEMPTS = 10;
export const SHOWN_LOG_ATTEMPTS = 100;
/** How far a delivery's attempts are counted (`logged`): a figure at it means at least that many. */
export const LOGGED_COUNT_LIMIT = 1000;

export const webhookDeliverySchema = z.object({
  id: z.uuid(),
  endpointId: z.uuid(),
  /** The event's id: the `webhook-id` header and the body's `id`, the same on every attempt. */
  eventId: z.string(),
  eventType: z.enum(webhookEventTypes),
  status: z.enum(webhookDeliveryStatuses),
  /** Attempts since it was created or last redelivered (the stored log holds every one). */
  attempts: z.number().int(),
  nextAttemptAt: z.iso.datetime().nullable(),
  deliveredAt: z.iso.datetime().nullable(),
  redeliveredBy: z.string().nullable().meta({
    description:
      'who sent it again last: the ops key’s name (with its X-Ops-Actor note) or the console’s signed-in person; null until a redelivery',
  }),
  redeliveredAt: z.iso.datetime().nullable().meta({ description: 'when it was last sent again; null until then' }),
  createdAt: z.iso.datetime(),
  updatedAt: z.iso.datetime(),
  logged: z
    .number()
    .int()
    .meta({
      description: `every attempt on record since it was created, redeliveries included, counted to ${LOGGED_COUNT_LIMIT} (a figure at it means at least that many)`,
    }),
  log: z.array(webhookAttemptSchema).meta({
    description: `its latest attempts, oldest first: ${LISTED_LOG_ATTEMPTS} in a list of deliveries, ${SHOWN_LOG_ATTEMPTS} in a redelivery's answer (logged counts them all)`,
  }),
});
export type WebhookDeliveryView = z.infer<typeof webhookDeliverySchema>;
