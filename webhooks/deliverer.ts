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
  /** Deliveries sent at once, at most; absent: 20. A send that ends frees its place for the next due one at once. */
  concurrency?: number;
  /**
   * Of those, to one endpoint at most (about: a claim may add up to as many again to one below it); absent: a quarter
   * of `concurrency`. An endpoint that is down or slow holds only its own places, never the others' deliveries.
   */
  perEndpoint?: number;
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

/** Why no status came back, in a few words (the error's code when Node gives one). */
function errorOf(error: unknown): string {
  const code = (error as { code?: unknown }).code;
  if (code === 'TIMED_OUT') return 'timed out';
  if (typeof code === 'string') return code;
  return error instanceof Error ? error.message : String(error);
}

/** What a round of sending reports (the deliverer's activity answers it): claims made, and the attempts' ends. */
export interface DeliveryRoundCounts {
  batches: number;
  claimed: number;
  succeeded: number;
  retrying: number;
  failed: number;
}

export interface DeliveryRound {
  /** How long to go on claiming. */
  roundMs: number;
  /** How long to wait before claiming again when nothing was due. */
  pollIntervalMs: number;
  /** Waits `ms`, or rejects when the round is cancelled (the activity's own sleep). */
  sleep: (ms: number) => Promise<void>;
  /** Called between claims and as sends end. */
  heartbeat: () => void;
}

export function createWebhookDeliverer(options: WebhookDelivererOptions) {
  const { store, cipher, logger, retry } = options;
  const requestTimeoutMs = options.requestTimeoutMs ?? 10_000;
  const concurrency = Math.max(1, options.concurrency ?? 20);
  const perEndpoint = Math.max(1, options.perEndpoint ?? Math.ceil(concurrency / 4));
  /** Places free before a claim is made again. */
  const refill = Math.max(1, Math.ceil(concurrency / 4));
  // The lease outlasts the slowest send with room to record it.
  const leaseMs = requestTimeoutMs + 30_000;

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

  /** Sends one claimed delivery and records its attempt, counted in `counts`. */
  async function deliver(delivery: ClaimedDelivery, counts: DeliveryRoundCounts): Promise<void> {
    const outcome = await attempt(delivery);
    const status = await store.recordAttempt(delivery, outcome, retry);
    if (status === 'overtaken') {
      logger.info(
        { deliveryId: delivery.id, eventId: delivery.eventId, statusCode: outcome.statusCode },
        'webhook attempt kept in the log only: its lease ran out, and another claim or a redelivery holds the delivery',
      );
      return;
    }
    if (status === 'SUCCEEDED') counts.succeeded += 1;
    else if (status === 'FAILED') counts.failed += 1;
    else counts.retrying += 1;
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
  }

  return {
    /**
     * Sends due deliveries for `round.roundMs`: up to `concurrency` at once and about `perEndpoint` to one endpoint,
     * claiming again as soon as a send ends (never waiting for the slowest of a claim), then lets the sends under way
     * end (their leases cover them). Cancelled (`round.sleep` rejects): the sends under way end, then it rejects too.
     */
    async deliverFor(round: DeliveryRound): Promise<DeliveryRoundCounts> {
      const counts: DeliveryRoundCounts = { batches: 0, claimed: 0, succeeded: 0, retrying: 0, failed: 0 };
      const until = Date.now() + round.roundMs;
      /** Sends under way, by endpoint. */
      const sending = new Map<string, number>();
      const underWay = new Set<Promise<void>>();
      /** Resolved whenever a send ends: the wait for a free place. */
      let ended: () => void = () => undefined;
      let oneEnded = new Promise<void>((resolve) => (ended = resolve));
      const start = (delivery: ClaimedDelivery) => {
        sending.set(delivery.endpointId, (sending.get(delivery.endpointId) ?? 0) + 1);
        const send: Promise<void> = deliver(delivery, counts)
          .catch((error: unknown) =>
            logger.error({ err: error, deliveryId: delivery.id }, 'webhook attempt not recorded: sent again later'),
          )
          .finally(() => {
            const left = (sending.get(delivery.endpointId) ?? 1) - 1;
            if (left > 0) sending.set(delivery.endpointId, left);
            else sending.delete(delivery.endpointId);
            underWay.delete(send);
            round.heartbeat();
            const wake = ended;
            oneEnded = new Promise<void>((resolve) => (ended = resolve));
            wake();
          });
        underWay.add(send);
      };
      try {
        while (Date.now() < until) {
          const free = concurrency - underWay.size;
          // Claimed when enough places are free to be worth a claim (not one statement per send that ends).
          if (free >= Math.min(refill, concurrency)) {
            const busy = [...sending].filter(([, count]) => count >= perEndpoint).map(([endpointId]) => endpointId);
            const batch = await store.claimDue(free, leaseMs, { perEndpoint, busy });
            counts.batches += 1;
            counts.claimed += batch.length;
            for (const delivery of batch) start(delivery);
            round.heartbeat();
            // A full claim: more may be due at once.
            if (batch.length === free) continue;
            // Nothing more due now: the poll interval; or only an endpoint's that is sent enough already: until one of
            // the sends ends.
            const wait = Math.min(round.pollIntervalMs, until - Date.now());
            if (wait <= 0) break;
            await Promise.race([round.sleep(wait), ...(busy.length > 0 ? [oneEnded] : [])]);
            continue;
          }
          // Too few places free: the next send to end frees one (the poll interval at most, for the heartbeat).
          const wait = Math.min(round.pollIntervalMs, until - Date.now());
          if (wait <= 0) break;
          await Promise.race([round.sleep(wait), oneEnded]);
        }
      } finally {
        await Promise.all(underWay);
      }
      return counts;
    },
  };
}

export type WebhookDeliverer = ReturnType<typeof createWebhookDeliverer>;
