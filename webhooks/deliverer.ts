// Sends due webhook deliveries: claims a batch (webhooks/webhook-store.ts), signs each attempt
// per Standard Webhooks with the endpoint's secret (unsealed here, in the sending process only:
// never in a workflow's history or a log line), POSTs it with a time-out and no redirects, and
// records the attempt. A 2xx delivers; anything else (another status, no answer) is retried.
import http from 'node:http';
import https from 'node:https';
import { isIP } from 'node:net';
import type { DeliveryRoundReport } from '../domain/webhook.ts';
import type { Logger } from '../lib/logger.ts';
import { parseRetryAfter } from '../lib/retry-after.ts';
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
  /**
   * A claim's lease beyond the time-out; absent: 30 s. A send starts only within its first half (measured from before
   * the claim was asked for), so a process paused past it sends nothing another claim may be sending; the rest is
   * room to record the attempt.
   */
  leaseMarginMs?: number;
  /** Deliveries sent at once, at most; absent: 20. A send that ends frees its place for the next due one. */
  concurrency?: number;
  /**
   * Of those, to one endpoint at most; absent: half of `concurrency`. Only to one whose last attempt from this process
   * was delivered: any other gets one at a time until one is, so an endpoint that is down holds one place.
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

/** What an endpoint answered: its status, and the wait its Retry-After asks for, if it gave one. */
export interface WebhookAnswer {
  status: number;
  retryAfterMs: number | undefined;
}

/**
 * POSTs one webhook and answers the status code and Retry-After (the body is not read). No redirects; `publicOnly`
 * refuses plain http and any internal address before a byte is sent.
 */
export function sendWebhook(
  url: string,
  headers: Record<string, string>,
  body: string,
  options: { timeoutMs: number; publicOnly: boolean },
): Promise<WebhookAnswer> {
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
        // Only the status and Retry-After count: the body is not read (an endless one holds nothing open).
        response.destroy();
        const retryAfter = response.headers['retry-after'];
        resolve({ status: response.statusCode ?? 0, retryAfterMs: parseRetryAfter(retryAfter, Date.now()) });
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
  const perEndpoint = Math.max(1, options.perEndpoint ?? Math.ceil(concurrency / 2));
  /** Places free before a claim is made again. */
  const refill = Math.max(1, Math.ceil(concurrency / 4));
  // The lease outlasts the slowest send with room to start it late and to record it.
  const leaseMarginMs = options.leaseMarginMs ?? 30_000;
  const leaseMs = requestTimeoutMs + leaseMarginMs;
  /** The latest a claimed delivery is sent, after its claim was asked for (this process's monotonic clock). */
  const sendWithinMs = leaseMarginMs / 2;

  async function attempt(delivery: ClaimedDelivery): Promise<AttemptOutcome> {
    const at = new Date();
    const started = performance.now();
    const duration = () => Math.round(performance.now() - started);
    try {
      const secret = cipher.decrypt(delivery.secretEncrypted, webhookSecretContext(delivery.endpointId));
      const { status, retryAfterMs } = await sendWebhook(
        delivery.url,
        {
          'content-type': 'application/json',
          'user-agent': 'walletflow-webhooks/1',
          ...webhookHeaders(secret, delivery.eventId, delivery.body, at),
        },
        delivery.body,
        { timeoutMs: requestTimeoutMs, publicOnly: options.publicTargetsOnly === true },
      );
      // The answer's body is not read: only its status counts, and the wait a 429 or a 503 asks for.
      const ok = status >= 200 && status < 300;
      const askedToWait = (status === 429 || status === 503) && retryAfterMs !== undefined;
      return {
        at,
        statusCode: status,
        error: ok ? null : `HTTP ${status}`,
        durationMs: duration(),
        ...(askedToWait ? { retryAfterMs } : {}),
      };
    } catch (error) {
      return { at, statusCode: null, error: errorOf(error), durationMs: duration() };
    }
  }

  /**
   * Sends one claimed delivery and records its attempt, counted in `counts`; answers whether the endpoint took it (a
   * 2xx), whatever the record then said, or undefined when it was too late to send it (`claimAskedAt`: when its claim
   * was asked for).
   */
  async function deliver(
    delivery: ClaimedDelivery,
    counts: DeliveryRoundReport,
    claimAskedAt: number,
  ): Promise<boolean | undefined> {
    if (performance.now() - claimAskedAt > sendWithinMs) {
      // Paused between the claim and the send (a stopped process, a long pause): the lease may have run out, and
      // another claim may be sending it now. Nothing is sent or recorded; the lease runs out and it is claimed again.
      logger.warn(
        { deliveryId: delivery.id, eventId: delivery.eventId, endpointId: delivery.endpointId },
        'webhook attempt not sent: too late in its claim’s lease (the process was paused); claimed again later',
      );
      return undefined;
    }
    const outcome = await attempt(delivery);
    const delivered = outcome.statusCode !== null && outcome.statusCode >= 200 && outcome.statusCode < 300;
    const status = await store.recordAttempt(delivery, outcome, retry);
    if (status === 'overtaken') {
      logger.info(
        { deliveryId: delivery.id, eventId: delivery.eventId, statusCode: outcome.statusCode },
        'webhook attempt kept in the log only: its lease ran out, and another claim or a redelivery holds the delivery',
      );
      return delivered;
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
    return delivered;
  }

  /**
   * Sends under way, kept across rounds (a round ends without waiting for them: their leases cover them), by endpoint.
   */
  const sending = new Map<string, number>();
  const underWay = new Set<Promise<void>>();
  /**
   * Endpoints whose last attempt from here was delivered: sent up to `perEndpoint` at once. Any other (one that failed
   * last, or not tried from this process yet: after a restart, one that is down is not known so) one at a time, until
   * one is delivered.
   */
  const trusted = new Set<string>();
  /** Endpoints whose last claim took all the room they were given: they may have more due. */
  const backlogged = new Set<string>();
  /** When each endpoint was last sent to (a count of sends): untrusted endpoints take turns, the longest idle first. */
  const lastSent = new Map<string, number>();
  let sends = 0;
  /** Sends ended so far, and the waits for a number more of them to end. */
  let ends = 0;
  const endWaits = new Set<{ at: number; resolve: () => void }>();

  const capOf = (endpointId: string) => (trusted.has(endpointId) ? perEndpoint : 1);
  /** The fewest free places worth a claim for the endpoint (not a statement per send that ends). */
  const thresholdOf = (endpointId: string) => Math.min(refill, capOf(endpointId));
  const roomOf = (endpointId: string) => capOf(endpointId) - (sending.get(endpointId) ?? 0);

  /**
   * What each endpoint sent to, trusted or tried may be claimed for now (0 below its threshold), how many it is sent,
   * whether it is trusted, and when it was last sent to: an endpoint listed nowhere (never tried) gets one, after the
   * trusted ones, before the others.
   */
  function roomsNow(): Array<{ endpointId: string; room: number; sending: number; trusted: boolean; turn: number }> {
    return [...new Set([...sending.keys(), ...trusted, ...lastSent.keys()])].map((endpointId) => {
      const room = roomOf(endpointId);
      return {
        endpointId,
        room: room >= thresholdOf(endpointId) ? room : 0,
        sending: sending.get(endpointId) ?? 0,
        trusted: trusted.has(endpointId),
        turn: lastSent.get(endpointId) ?? 0,
      };
    });
  }

  /**
   * What endpoints not trusted may still be sent, together: half the places, so however many are down, the other half
   * is the trusted ones'.
   */
  function untrustedRoom(): number {
    let sent = 0;
    for (const [endpointId, count] of sending) if (!trusted.has(endpointId)) sent += count;
    return Math.max(0, Math.ceil(concurrency / 2) - sent);
  }

  /**
   * The endpoints that may have more due after a claim: those it took all the room of, and those given none that had
   * a backlog before (an endpoint with nothing due is not claimed for again at each send's end).
   */
  function endpointsCut(
    batch: readonly ClaimedDelivery[],
    rooms: ReadonlyArray<{ endpointId: string; room: number }>,
    claim: { full: boolean; budgetSpent: boolean },
  ): string[] {
    const taken = new Map<string, number>();
    for (const delivery of batch) taken.set(delivery.endpointId, (taken.get(delivery.endpointId) ?? 0) + 1);
    const given = new Map(rooms.map((each) => [each.endpointId, each.room]));
    for (const [endpointId, count] of taken) if (!given.has(endpointId)) given.set(endpointId, Math.max(count, 1));
    for (const [endpointId, room] of given) {
      if (room === 0) continue;
      if ((taken.get(endpointId) ?? 0) >= room) backlogged.add(endpointId);
      // Less than its room says nothing more is due only where the claim's own bound did not cut it: not a full claim,
      // nor the untrusted endpoints' spent share.
      else if (!claim.full && (trusted.has(endpointId) || !claim.budgetSpent)) backlogged.delete(endpointId);
    }
    return [...given.keys()].filter((endpointId) => backlogged.has(endpointId));
  }

  function start(delivery: ClaimedDelivery, counts: DeliveryRoundReport, claimAskedAt: number): void {
    const endpointId = delivery.endpointId;
    sending.set(endpointId, (sending.get(endpointId) ?? 0) + 1);
    sends += 1;
    lastSent.set(endpointId, sends);
    const send: Promise<void> = deliver(delivery, counts, claimAskedAt)
      .then((delivered) => {
        if (delivered === true) trusted.add(endpointId);
        else if (delivered === false) trusted.delete(endpointId);
      })
      .catch((error: unknown) =>
        logger.error({ err: error, deliveryId: delivery.id }, 'webhook attempt not recorded: sent again later'),
      )
      .finally(() => {
        const left = (sending.get(endpointId) ?? 1) - 1;
        if (left > 0) sending.set(endpointId, left);
        else sending.delete(endpointId);
        underWay.delete(send);
        ends += 1;
        for (const wait of endWaits)
          if (wait.at <= ends) {
            endWaits.delete(wait);
            wait.resolve();
          }
      });
    underWay.add(send);
  }

  /** Waits `ms`, or until `count` more sends end (absent: the time only). */
  async function rest(round: DeliveryRound, ms: number, count?: number): Promise<void> {
    if (count === undefined) return round.sleep(ms);
    let wait: { at: number; resolve: () => void } | undefined;
    const ended = new Promise<void>((resolve) => {
      wait = { at: ends + count, resolve };
      endWaits.add(wait);
    });
    try {
      await Promise.race([round.sleep(ms), ended]);
    } finally {
      endWaits.delete(wait!);
    }
  }

  return {
    /**
     * Sends due deliveries for `round.roundMs`: up to `concurrency` at once, up to `perEndpoint` to one endpoint
     * delivered to last (one at a time to any other), claiming again as places free: never waiting for the slowest of
     * a claim, nor for the sends still under way at the round's end (they go on, within the next round's limits; a
     * round's counts are those of the sends that ended before it did). Cancelled (`round.sleep` rejects): the sends
     * under way end, then it rejects too.
     */
    async deliverFor(round: DeliveryRound): Promise<DeliveryRoundReport> {
      const counts: DeliveryRoundReport = { batches: 0, claimed: 0, succeeded: 0, retrying: 0, failed: 0 };
      const until = Date.now() + round.roundMs;
      try {
        // A deleted endpoint's deliveries committed after its DELETE: ended as the DELETE ends the others, once a
        // round. Its failure is the next round's to mend: it never holds up the sends.
        const leftOver = await store.failPendingOfDeleted().catch((error: unknown) => {
          logger.warn({ err: (error as Error).message }, 'webhooks: deliveries of deleted endpoints not ended now');
          return 0;
        });
        if (leftOver > 0) logger.info({ failed: leftOver }, 'webhooks: deliveries of deleted endpoints ended FAILED');
        for (;;) {
          const left = until - Date.now();
          if (left <= 0) break;
          const wait = Math.min(round.pollIntervalMs, left);
          const free = concurrency - underWay.size;
          const worthAClaim = Math.min(refill, concurrency);
          if (free < worthAClaim) {
            // Too few places free: until enough sends end (the poll interval at most).
            await rest(round, wait, worthAClaim - free);
            round.heartbeat();
            continue;
          }
          const rooms = roomsNow();
          const budget = untrustedRoom();
          const claimAskedAt = performance.now();
          const batch = await store.claimDue(free, leaseMs, { rooms, untrustedRoom: budget });
          counts.batches += 1;
          counts.claimed += batch.length;
          for (const delivery of batch) start(delivery, counts, claimAskedAt);
          round.heartbeat();
          // Every claim says which endpoints got all their room (a full one too: its endpoints may have more due).
          const cut = endpointsCut(batch, rooms, {
            full: batch.length === free,
            budgetSpent: batch.filter((delivery) => !trusted.has(delivery.endpointId)).length >= budget,
          });
          // A full claim: more may be due at once.
          if (batch.length === free) continue;
          // Fewer than asked: nothing more is due, or an endpoint was cut at its share. Such an endpoint is claimed for
          // again as soon as it has room worth a claim: at once if its sends ended while the claim was made, else once
          // enough of them end.
          if (cut.some((endpointId) => roomOf(endpointId) >= thresholdOf(endpointId))) continue;
          const needs = cut.map((endpointId) =>
            Math.min(thresholdOf(endpointId) - Math.max(roomOf(endpointId), 0), sending.get(endpointId) ?? 0),
          );
          const need = needs.length > 0 ? Math.min(...needs) : 0;
          await rest(round, wait, need > 0 ? need : undefined);
        }
      } catch (error) {
        // Cancelled, or the database away: what was sent is recorded before the round ends.
        await Promise.all(underWay);
        throw error;
      }
      return counts;
    },

    /** Waits for the sends under way to end and be recorded (a worker shutting down; a test's end). */
    async drain(): Promise<void> {
      while (underWay.size > 0) await Promise.all(underWay);
    },
  };
}

export type WebhookDeliverer = ReturnType<typeof createWebhookDeliverer>;
