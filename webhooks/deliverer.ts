// Sends due webhook deliveries: claims a batch (webhooks/webhook-store.ts), signs each attempt
// per Standard Webhooks with the endpoint's secret (unsealed here, in the sending process only:
// never in a workflow's history or a log line), POSTs it with a time-out and no redirects, and
// records the attempt. A 2xx delivers; anything else (another status, no answer) is retried.
import http from 'node:http';
import https from 'node:https';
import { isIP } from 'node:net';
import type { Logger } from '../lib/logger.ts';
import type { TokenCipher } from '../lib/token-cipher.ts';
import { webhookHeaders } from './signature.ts';
import { InternalTargetError, isInternalAddress, publicOnlyLookup } from './target-guard.ts';
import {
  webhookSecretContext,
  type AttemptOutcome,
  type ClaimedDelivery,
  type WebhookRetryPolicy,
  type WebhookStore,
} from './webhook-store.ts';

export interface WebhookDelivererOptions {
  store: WebhookStore;
  cipher: TokenCipher;
  logger: Logger;
  retry: WebhookRetryPolicy;
  /** Each attempt's time-out; absent: 10 s. */
  requestTimeoutMs?: number;
  /** Deliveries claimed (and sent concurrently) per batch; absent: 20. */
  batchSize?: number;
  /**
   * Production (webhooks/target-guard.ts): https only, and never to an address inside walletflow's
   * own network, checked on every address the endpoint's name resolves to when the attempt
   * connects. Absent or false (development): any http(s) URL (`walletflow webhooks listen` is on
   * loopback).
   */
  publicTargetsOnly?: boolean;
}

/**
 * POSTs one webhook and answers the status code (the body is not read). No redirects; `publicOnly`
 * refuses plain http and any internal address before a byte is sent.
 */
export function sendWebhook(
  url: string,
  headers: Record<string, string>,
  body: string,
  options: { timeoutMs: number; publicOnly: boolean },
): Promise<number> {
  const target = new URL(url);
  if (options.publicOnly) {
    if (target.protocol !== 'https:')
      return Promise.reject(
        Object.assign(new Error('not https: refused in production'), { code: 'NOT_HTTPS_REFUSED' }),
      );
    const host = target.hostname.replace(/^\[|\]$/g, '');
    if (isIP(host) !== 0 && isInternalAddress(host)) return Promise.reject(new InternalTargetError(host));
  }
  const client = target.protocol === 'https:' ? https : http;
  return new Promise((resolve, reject) => {
    const request = client.request(
      target,
      {
        method: 'POST',
        headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) },
        agent: false,
        ...(options.publicOnly ? { lookup: publicOnlyLookup } : {}),
      },
      (response) => {
        clearTimeout(timer);
        // Only the status counts: the body is not read (an endless one holds nothing open).
        response.destroy();
        resolve(response.statusCode ?? 0);
      },
    );
    // The whole attempt, not each silence on the socket: a trickle of bytes cannot outlast it.
    const timer = setTimeout(
      () => request.destroy(Object.assign(new Error('timed out'), { code: 'TIMED_OUT' })),
      options.timeoutMs,
    );
    request.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    request.end(body);
  });
}

export interface DeliveryBatchReport {
  claimed: number;
  succeeded: number;
  retrying: number;
  failed: number;
}

/** Why no status came back, in a few words (the error's code when Node gives one). */
function errorOf(error: unknown): string {
  const code = (error as { code?: unknown }).code;
  if (code === 'TIMED_OUT') return 'timed out';
  if (typeof code === 'string') return code;
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
      const status = await sendWebhook(
        delivery.url,
        {
          'content-type': 'application/json',
          'user-agent': 'walletflow-webhooks/1',
          ...webhookHeaders(secret, delivery.eventId, delivery.body, at),
        },
        delivery.body,
        { timeoutMs: requestTimeoutMs, publicOnly: options.publicTargetsOnly === true },
      );
      // The answer's body is not read: only its status counts.
      const ok = status >= 200 && status < 300;
      return { at, statusCode: status, error: ok ? null : `HTTP ${status}`, durationMs: duration() };
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
          if (status === 'overtaken') {
            logger.info(
              { deliveryId: delivery.id, eventId: delivery.eventId, statusCode: outcome.statusCode },
              'webhook attempt kept in the log only: its lease ran out, and another claim or a redelivery holds the delivery',
            );
            return;
          }
          if (status === 'SUCCEEDED') report.succeeded += 1;
          else if (status === 'FAILED') report.failed += 1;
          else report.retrying += 1;
          const fields = {
            deliveryId: delivery.id,
            eventId: delivery.eventId,
            endpointId: delivery.endpointId,
            statusCode: outcome.statusCode,
            status,
          };
          if (status === 'FAILED')
            logger.warn(
              { ...fields, error: outcome.error },
              'webhook delivery failed: retries exhausted (redeliver with POST /ops/webhooks/deliveries/{id}/redeliver)',
            );
          else if (status === 'PENDING')
            logger.info({ ...fields, error: outcome.error }, 'webhook delivery attempt failed; retrying');
          else logger.debug(fields, 'webhook delivered');
        }),
      );
      return report;
    },
  };
}

export type WebhookDeliverer = ReturnType<typeof createWebhookDeliverer>;
