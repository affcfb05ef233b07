// Sends due webhook deliveries: claims a batch (webhooks/webhook-store.ts), signs each attempt
// per Standard Webhooks with the endpoint's secret (unsealed here, in the sending process only:
// never in a workflow's history or a log line), POSTs it with a time-out and no redirects, and
// records the attempt. A 2xx delivers; anything else (another status, no answer) is retried.
import type { Logger } from '../lib/logger.ts';
import type { TokenCipher } from '../links/token-cipher.ts';
import { webhookHeaders } from './signature.ts';
import { webhookSecretContext, type AttemptOutcome, type ClaimedDelivery, type WebhookRetryPolicy, type WebhookStore } from './webhook-store.ts';

export interface WebhookDelivererOptions {
  store: WebhookStore;
  cipher: TokenCipher;
  logger: Logger;
  retry: WebhookRetryPolicy;
  /** Each attempt's time-out; absent: 10 s. */
  requestTimeoutMs?: number;
  /** Deliveries claimed (and sent concurrently) per batch; absent: 20. */
  batchSize?: number;
}

export interface DeliveryBatchReport {
  claimed: number;
  succeeded: number;
  retrying: number;
  failed: number;
}

/** Why no status came back, in a few words (the cause's code when Node gives one). */
function errorOf(error: unknown): string {
  if (error instanceof DOMException && (error.name === 'TimeoutError' || error.name === 'AbortError')) return 'timed out';
  const cause = (error as { cause?: { code?: unknown; message?: unknown } }).cause;
  if (typeof cause?.code === 'string') return cause.code;
  if (typeof cause?.message === 'string') return cause.message;
  return error instanceof Error ? error.message : String(error);
}

export function createWebhookDeliverer(options: WebhookDelivererOptions) {
  const { store, cipher, logger, retry } = options;
  const requestTimeoutMs = options.requestTimeoutMs ?? 10_000;
  const batchSize = options.batchSize ?? 20;

  async function attempt(delivery: ClaimedDelivery): Promise<AttemptOutcome> {
    const at = new Date();
    const started = performance.now();
    const duration = () => Math.round(performance.now() - started);
    try {
      const secret = cipher.decrypt(delivery.secretEncrypted, webhookSecretContext(delivery.endpointId));
      const response = await fetch(delivery.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'user-agent': 'walletflow-webhooks/1', ...webhookHeaders(secret, delivery.eventId, delivery.body, at) },
        body: delivery.body,
        redirect: 'manual',
        signal: AbortSignal.timeout(requestTimeoutMs),
      });
      // The answer's body is not read: only its status counts.
      await response.body?.cancel().catch(() => undefined);
      const ok = response.status >= 200 && response.status < 300;
      return { at, statusCode: response.status, error: ok ? null : `HTTP ${response.status}`, durationMs: duration() };
    } catch (error) {
      return { at, statusCode: null, error: errorOf(error), durationMs: duration() };
    }
  }

  return {
    /** One batch: claims, sends concurrently, records; an empty report when nothing was due. */
    async deliverDue(): Promise<DeliveryBatchReport> {
      // The lease outlasts the slowest send with room to record it.
      const claimed = await store.claimDue(batchSize, requestTimeoutMs + 30_000);
      const report: DeliveryBatchReport = { claimed: claimed.length, succeeded: 0, retrying: 0, failed: 0 };
      await Promise.all(
        claimed.map(async (delivery) => {
          const outcome = await attempt(delivery);
          const status = await store.recordAttempt(delivery, outcome, retry);
          if (status === 'SUCCEEDED') report.succeeded += 1;
          else if (status === 'FAILED') report.failed += 1;
          else report.retrying += 1;
          const fields = { deliveryId: delivery.id, eventId: delivery.eventId, endpointId: delivery.endpointId, statusCode: outcome.statusCode, status };
          if (status === 'FAILED') logger.warn({ ...fields, error: outcome.error }, 'webhook delivery failed: retries exhausted (redeliver with POST /ops/webhooks/deliveries/{id}/redeliver)');
          else if (status === 'PENDING') logger.info({ ...fields, error: outcome.error }, 'webhook delivery attempt failed; retrying');
          else logger.debug(fields, 'webhook delivered');
        }),
      );
      return report;
    },
  };
}

export type WebhookDeliverer = ReturnType<typeof createWebhookDeliverer>;
