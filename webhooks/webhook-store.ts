// The webhook tables' one writer besides the outbox: endpoints (created with a fresh secret, sealed
// to the row; read, deleted ones too; deleted), deliveries (listed with their attempt log, a
// funding's or a payment's, redelivered by ops), and
// the deliverer's two steps: claim the due deliveries (`FOR UPDATE SKIP LOCKED`, then a lease so a
// send happens outside any transaction and no two processes send one delivery at once) and record
// an attempt with what comes next (delivered, retried after a backoff, or FAILED: the dead letter).
import { randomUUID } from 'node:crypto';
import { maskedWebhookUrl } from './masked-url.ts';
import { Prisma, type WebhookDelivery, type WebhookEndpoint } from '../generated/prisma/client.ts';
import {
  LISTED_LOG_ATTEMPTS,
  LOGGED_COUNT_LIMIT,
  SHOWN_LOG_ATTEMPTS,
  type CreateWebhookEndpointRequest,
  type WebhookDeliveryStatus,
  type WebhookDeliveryView,
  type WebhookEndpointView,
  type WebhookEventType,
} from '../domain/webhook.ts';
import { inIndexOrder, type Database } from '../lib/database.ts';
import { readListPage, type ListPage, type ListQuery } from '../lib/list-page.ts';
import type { TokenCipher } from '../lib/token-cipher.ts';
import { inPages, resealColumn, type RotationCount, type RotationOptions } from '../links/token-rotation.ts';
import { newWebhookSecret } from './signature.ts';

/** What an endpoint's secret is sealed to: a secret copied into another row does not decrypt. */
export const webhookSecretContext = (endpointId: string) => `webhook_endpoint:${endpointId}:secret`;

/** When a failed delivery is tried again, and when it stops (contract-decisions section 13: at least 24 hours). */
export interface WebhookRetryPolicy {
  /** The first retry's delay; each next one doubles, up to maxDelayMs. */
  baseDelayMs: number;
  maxDelayMs: number;
  /** A delivery still failing this long after its first attempt (or its redelivery) is FAILED. */
  retryForMs: number;
}

/** Production: 30 s doubling to one hour, for 24 hours (about 30 attempts). */
export const defaultWebhookRetryPolicy: WebhookRetryPolicy = {
  baseDelayMs: 30_000,
  maxDelayMs: 3_600_000,
  retryForMs: 86_400_000,
};

/** The delay after the `attempts`-th failed attempt. */
export const retryDelayMs = (policy: WebhookRetryPolicy, attempts: number) =>
  Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** Math.min(Math.max(attempts - 1, 0), 40));

/**
 * The wait before a failed attempt's next: the backoff, or longer when the endpoint asked for longer (its Retry-After),
 * up to the policy's longest wait (an endpoint cannot push its events past the retry window by asking).
 */
export const nextDelayMs = (
  policy: WebhookRetryPolicy,
  attempts: number,
  outcome: Pick<AttemptOutcome, 'retryAfterMs'>,
): number => Math.max(retryDelayMs(policy, attempts), Math.min(outcome.retryAfterMs ?? 0, policy.maxDelayMs));

/** A claimed delivery: what one attempt needs. The secret stays sealed until the send. */
export interface ClaimedDelivery {
  id: string;
  eventId: string;
  endpointId: string;
  url: string;
  secretEncrypted: Uint8Array;
  body: string;
  attempts: number;
  retryingSince: Date;
  /** The claim's lease (the next_attempt_at it set): its outcome is recorded only while the delivery still has it. */
  leasedUntil: Date;
}

export interface AttemptOutcome {
  at: Date;
  statusCode: number | null;
  error: string | null;
  durationMs: number;
  /** The wait the endpoint asked for (Retry-After on a 429 or a 503): the next attempt waits at least that long. */
  retryAfterMs?: number;
}

export type DeliveryListQuery = ListQuery<WebhookDeliveryStatus> & { endpointId?: string | undefined };

type DeliveryRow = WebhookDelivery & { event: { type: string } };
const withEvent = { event: { select: { type: true } } };

/** A delivery's latest attempts, oldest first, and how many it has had. */
interface AttemptLog {
  logged: number;
  log: WebhookDeliveryView['log'];
}

/**
 * The latest `shown` attempts of each delivery and how many each has had, counted to LOGGED_COUNT_LIMIT, in one
 * statement (one snapshot: the count is never below the attempts shown): each delivery's count and its latest through
 * the (delivery_id, id) index, at most LOGGED_COUNT_LIMIT and `shown` entries of it (LATERAL). (Prisma's include of
 * the log with a `take` read every attempt of a page's deliveries and kept the latest in memory, and its `_count`
 * grouped the whole attempt table.)
 */
async function attemptLogs(
  database: Pick<Prisma.TransactionClient, '$queryRaw'>,
  deliveryIds: readonly string[],
  shown: number,
): Promise<Map<string, AttemptLog>> {
  const logs = new Map<string, AttemptLog>();
  if (deliveryIds.length === 0) return logs;
  const rows = await database.$queryRaw<
    Array<{
      delivery_id: string;
      logged: number;
      at: Date | null;
      status_code: number | null;
      error: string | null;
      duration_ms: number | null;
    }>
  >`
    SELECT d.id::text AS delivery_id, c.logged, a.at, a.status_code, a.error, a.duration_ms
    FROM unnest(${deliveryIds}::uuid[]) AS d(id)
    CROSS JOIN LATERAL (
      SELECT count(*)::int AS logged
      FROM (SELECT 1 FROM webhook_attempt WHERE delivery_id = d.id LIMIT ${LOGGED_COUNT_LIMIT}) AS counted
    ) AS c
    LEFT JOIN LATERAL (
      SELECT id, at, status_code, error, duration_ms FROM webhook_attempt
      WHERE delivery_id = d.id ORDER BY id DESC LIMIT ${shown}
    ) AS a ON true
    ORDER BY d.id, a.id`;
  for (const row of rows) {
    const entry = logs.get(row.delivery_id) ?? { logged: row.logged, log: [] };
    logs.set(row.delivery_id, entry);
    if (row.at !== null)
      entry.log.push({
        at: row.at.toISOString(),
        statusCode: row.status_code,
        error: row.error,
        durationMs: row.duration_ms ?? 0,
      });
  }
  return logs;
}

/** An endpoint as every view shows it: its address masked (masked-url.ts); only its creation's answer has it whole. */
export function endpointView(endpoint: WebhookEndpoint): WebhookEndpointView {
  return {
    id: endpoint.id,
    url: maskedWebhookUrl(endpoint.url),
    events: endpoint.events as WebhookEventType[],
    createdBy: endpoint.createdBy,
    createdAt: endpoint.createdAt.toISOString(),
  };
}

function deliveryView(delivery: DeliveryRow, logs: ReadonlyMap<string, AttemptLog>): WebhookDeliveryView {
  const { logged, log } = logs.get(delivery.id) ?? { logged: 0, log: [] };
  return {
    id: delivery.id,
    endpointId: delivery.endpointId,
    eventId: delivery.eventId,
    eventType: delivery.event.type as WebhookEventType,
    status: delivery.status,
    attempts: delivery.attempts,
    nextAttemptAt: delivery.status === 'PENDING' ? (delivery.nextAttemptAt?.toISOString() ?? null) : null,
    deliveredAt: delivery.deliveredAt?.toISOString() ?? null,
    redeliveredBy: delivery.redeliveredBy,
    redeliveredAt: delivery.redeliveredAt?.toISOString() ?? null,
    createdAt: delivery.createdAt.toISOString(),
    updatedAt: delivery.updatedAt.toISOString(),
    logged,
    log,
  };
}

/** Deliveries as views, each with its latest `shown` attempts. */
async function deliveryViews(
  database: Pick<Prisma.TransactionClient, '$queryRaw'>,
  deliveries: readonly DeliveryRow[],
  shown: number,
): Promise<WebhookDeliveryView[]> {
  const logs = await attemptLogs(
    database,
    deliveries.map((delivery) => delivery.id),
    shown,
  );
  return deliveries.map((delivery) => deliveryView(delivery, logs));
}

/** How far the console's home counts an endpoint's dead letters, and its deliveries retrying: past it, "more than". */
export const HEALTH_COUNT_LIMIT = 10_000;

/** Pending deliveries a deleted endpoint's are failed by, a statement each (deleteEndpoint). */
const FAIL_CHUNK = 5000;

export function createWebhookStore(deps: { database: Database; cipher: TokenCipher }) {
  const { database, cipher } = deps;

  return {
    /** A new endpoint and its secret, in clear this once, and its address as sent (for its creator's answer only). */
    async createEndpoint(
      request: CreateWebhookEndpointRequest,
      createdBy: string | null,
    ): Promise<{ endpoint: WebhookEndpointView; url: string; secret: string }> {
      const id = randomUUID();
      const secret = newWebhookSecret();
      const endpoint = await database.webhookEndpoint.create({
        data: {
          id,
          url: request.url,
          events: [...request.events],
          secretEncrypted: cipher.encrypt(secret, webhookSecretContext(id)),
          createdBy,
        },
      });
      return { endpoint: endpointView(endpoint), url: endpoint.url, secret };
    },

    async getEndpoint(id: string): Promise<WebhookEndpointView | null> {
      const endpoint = await database.webhookEndpoint.findFirst({ where: { id, deletedAt: null } });
      return endpoint ? endpointView(endpoint) : null;
    },

    /**
     * Deletes an endpoint, recording who did (the ops key's name): no new delivery, and its pending ones end FAILED, a
     * chunk at a time in statements of their own (an endpoint down for a day has hundreds of thousands: one
     * transaction of them outlived its time-out, and every DELETE was refused). Deleted first, it gets no attempt
     * meanwhile (the deliverer claims none of a deleted endpoint's); a delete cut off midway is finished by the next,
     * or by the deliverer's next round (failPendingOfDeleted), after which a DELETE finds nothing (404).
     * False when there was no endpoint, or only a deleted one with nothing left to fail.
     */
    async deleteEndpoint(id: string, deletedBy?: string): Promise<boolean> {
      const deleted = await database.webhookEndpoint.updateMany({
        where: { id, deletedAt: null },
        data: { deletedAt: new Date(), deletedBy: deletedBy?.slice(0, 128) ?? null },
      });
      if (deleted.count === 0) {
        const left = await database.webhookDelivery.findFirst({
          where: { endpointId: id, status: 'PENDING', endpoint: { deletedAt: { not: null } } },
          select: { id: true },
        });
        if (!left) return false;
      }
      // In the (endpoint_id, created_at) index's order, from where the last chunk stopped.
      let after: { at: Date; id: string } | null = null;
      for (;;) {
        const rows: Array<{ n: number; last_at: Date | null; last_id: string | null }> = await database.$queryRaw`
          WITH chunk AS (
            SELECT id, created_at FROM webhook_delivery
            WHERE endpoint_id = ${id}::uuid AND status = 'PENDING'
              ${after ? Prisma.sql`AND (created_at, id) > (${after.at}, ${after.id}::uuid)` : Prisma.empty}
            ORDER BY created_at, id LIMIT ${FAIL_CHUNK}),
          failed AS (
            UPDATE webhook_delivery d SET status = 'FAILED', next_attempt_at = NULL
            FROM chunk WHERE d.id = chunk.id AND d.status = 'PENDING')
          SELECT count(*)::int AS n,
                 (array_agg(created_at ORDER BY created_at DESC, id DESC))[1] AS last_at,
                 (array_agg(id::text ORDER BY created_at DESC, id DESC))[1] AS last_id
          FROM chunk`;
        const chunk = rows[0];
        if (!chunk || chunk.n < FAIL_CHUNK || !chunk.last_at || !chunk.last_id) break;
        after = { at: chunk.last_at, id: chunk.last_id };
      }
      return true;
    },

    /** A page of GET /ops/webhooks/deliveries, newest first. */
    async listDeliveries(query: DeliveryListQuery): Promise<ListPage<WebhookDeliveryView>> {
      const page = await readListPage(query, (read) =>
        database.webhookDelivery.findMany({
          ...read,
          where: { ...read.where, ...(query.endpointId ? { endpointId: query.endpointId } : {}) },
          include: withEvent,
        }),
      );
      return page.kind === 'page'
        ? { ...page, items: await deliveryViews(database, page.items, LISTED_LOG_ATTEMPTS) }
        : page;
    },

    /**
     * Endpoints whose deliveries fail: each with its dead letters (FAILED, waiting for a redelivery)
     * and the deliveries still being retried after a failed attempt (the console's home). Only endpoints still
     * registered: a deleted one's letters can be redelivered no more. Each endpoint's address comes masked
     * (masked-url.ts): this list is for being shown. Each count stops past HEALTH_COUNT_LIMIT (a figure above it means
     * "more than"): the home reads this at every push, and dead letters are never purged, so a receiver down for days
     * would make each push count millions. Each count reads its endpoint's rows in id order with sorting off
     * (`inIndexOrder`): the two partial indexes of migration 20261205200000 give them so, each entry one counted (the
     * primary key gives id order too, through every delivery). The planner reckons each endpoint's rows by the
     * average, and by another index, or the table read until the limit, it went through the whole table for an
     * endpoint with few.
     */
    async health(): Promise<Array<{ endpointId: string; maskedUrl: string; deadLetters: number; retrying: number }>> {
      const past = HEALTH_COUNT_LIMIT + 1;
      const rows = await inIndexOrder(
        database,
        (db) => db.$queryRaw<Array<{ endpointId: string; url: string; deadLetters: number; retrying: number }>>`
        SELECT e.id::text AS "endpointId", e.url, f.count AS "deadLetters", r.count AS retrying
        FROM webhook_endpoint e
        CROSS JOIN LATERAL (SELECT COUNT(*)::int AS count FROM (SELECT 1 FROM webhook_delivery d
          WHERE d.endpoint_id = e.id AND d.status = 'FAILED' ORDER BY d.id LIMIT ${past}) counted) f
        CROSS JOIN LATERAL (SELECT COUNT(*)::int AS count FROM (SELECT 1 FROM webhook_delivery d
          WHERE d.endpoint_id = e.id AND d.status = 'PENDING' AND d.attempts > 0 ORDER BY d.id LIMIT ${past}) counted) r
        WHERE e.deleted_at IS NULL AND (f.count > 0 OR r.count > 0)
        ORDER BY f.count DESC, r.count DESC LIMIT 50`,
      );
      return rows.map(({ url, ...row }) => ({ ...row, maskedUrl: maskedWebhookUrl(url) }));
    },

    /** Every endpoint, deleted ones too (when and by whom), newest first: a partner registers a handful. */
    async listEndpoints(
      limit = 100,
    ): Promise<Array<WebhookEndpointView & { deletedAt: string | null; deletedBy: string | null }>> {
      const rows = await database.webhookEndpoint.findMany({
        orderBy: [{ createdAt: 'desc' }, { id: 'desc' }],
        take: limit,
      });
      return rows.map((row) => ({
        ...endpointView(row),
        deletedAt: row.deletedAt?.toISOString() ?? null,
        deletedBy: row.deletedBy,
      }));
    },

    /** An endpoint even once deleted (its deliveries stay on record), never its secret. */
    async getEndpointRecord(
      id: string,
    ): Promise<(WebhookEndpointView & { deletedAt: string | null; deletedBy: string | null }) | null> {
      const row = await database.webhookEndpoint.findUnique({ where: { id } });
      return row
        ? { ...endpointView(row), deletedAt: row.deletedAt?.toISOString() ?? null, deletedBy: row.deletedBy }
        : null;
    },

    /** The deliveries of the events a funding's or a payment's moves emitted, with their logs, oldest first. */
    async deliveriesOf(record: { fundingId: string } | { paymentId: string }): Promise<WebhookDeliveryView[]> {
      const events = await database.webhookEvent.findMany({
        where: record,
        select: { id: true },
        orderBy: { createdAt: 'asc' },
        take: 50,
      });
      if (events.length === 0) return [];
      const deliveries = await database.webhookDelivery.findMany({
        where: { eventId: { in: events.map((event) => event.id) } },
        orderBy: [{ createdAt: 'asc' }, { id: 'asc' }],
        take: 200,
        include: withEvent,
      });
      return deliveryViews(database, deliveries, LISTED_LOG_ATTEMPTS);
    },

    async getDelivery(id: string): Promise<WebhookDeliveryView | null> {
      const delivery = await database.webhookDelivery.findUnique({ where: { id }, include: withEvent });
      return delivery ? ((await deliveryViews(database, [delivery], SHOWN_LOG_ATTEMPTS))[0] ?? null) : null;
    },

    /**
     * Ops' redelivery: a FAILED (dead-lettered) or SUCCEEDED delivery is due again now, with a new
     * retry window; its log keeps every earlier attempt. The same event id: receivers dedupe on it.
     * `by` (the ops key's actor, or the console's person) is stored on the delivery with the time.
     * The endpoint's row is held (FOR SHARE) until the move commits: a DELETE under way is waited for and then read,
     * and one asked for meanwhile waits and ends the delivery due again FAILED with the endpoint's others. Read
     * without it, a DELETE could end every delivery it saw between the read and the move, and the redelivery then made
     * this one due under a deleted endpoint: answered as redelivered, it was never sent.
     */
    redeliver: (id: string, by: string) =>
      database.$transaction(async (tx) => {
        const delivery = await tx.webhookDelivery.findUnique({ where: { id }, select: { endpointId: true } });
        if (!delivery) return { kind: 'not-found' as const };
        const [endpoint] = await tx.$queryRaw<Array<{ deleted: boolean }>>`
          SELECT deleted_at IS NOT NULL AS deleted FROM webhook_endpoint WHERE id = ${delivery.endpointId}::uuid FOR SHARE`;
        if (!endpoint || endpoint.deleted) return { kind: 'endpoint-deleted' as const };
        const moved = await tx.webhookDelivery.updateMany({
          where: { id, status: { in: ['FAILED', 'SUCCEEDED'] } },
          // A fresh retry window and backoff: `attempts` counts from here, the log keeps them all.
          data: {
            status: 'PENDING',
            attempts: 0,
            nextAttemptAt: new Date(),
            retryingSince: null,
            deliveredAt: null,
            redeliveredBy: by.slice(0, 128),
            redeliveredAt: new Date(),
          },
        });
        if (moved.count === 0) return { kind: 'pending' as const };
        return {
          kind: 'redelivered' as const,
          delivery: (
            await deliveryViews(
              tx,
              [await tx.webhookDelivery.findUniqueOrThrow({ where: { id }, include: withEvent })],
              SHOWN_LOG_ATTEMPTS,
            )
          )[0]!,
        };
      }),

    /**
     * Ends FAILED, up to a chunk at a time, the deliveries still PENDING under a deleted endpoint: those an event's
     * transaction wrote for it while it was live and committed after its DELETE had failed the ones it could see (a
     * batch's cancel writes its items' events for minutes). The claim never takes them, and a redelivery is refused:
     * left so, they were PENDING for good. How many it ended.
     */
    async failPendingOfDeleted(): Promise<number> {
      return database.$executeRaw`
        UPDATE webhook_delivery d SET status = 'FAILED', next_attempt_at = NULL, updated_at = now()
        FROM (
          SELECT p.id FROM webhook_endpoint e
          CROSS JOIN LATERAL (
            SELECT id FROM webhook_delivery
            WHERE endpoint_id = e.id AND status = 'PENDING'
            ORDER BY next_attempt_at, id LIMIT ${FAIL_CHUNK}
            FOR UPDATE SKIP LOCKED) p
          WHERE e.deleted_at IS NOT NULL
          LIMIT ${FAIL_CHUNK}) left_over
        WHERE d.id = left_over.id AND d.status = 'PENDING'`;
    },

    /**
     * Up to `limit` due deliveries, each leased for `leaseMs`: rows another process holds are
     * skipped (SKIP LOCKED), and the lease (next_attempt_at moved ahead) keeps them from every
     * other claim while this one sends. A process that dies mid-send leaves the lease to expire:
     * the delivery is sent again (at least once).
     * Of one endpoint, the longest due first, at most its `rooms` entry (what the caller may still send it), else one:
     * an endpoint with a backlog (down, or slow) never fills a claim (the partial index
     * webhook_delivery_pending_by_endpoint_idx walks each endpoint's due ones). Endpoints not trusted (not delivered to
     * last) go first, by `turn` (never tried first, then the longest idle), but no more than `untrustedRoom` of theirs:
     * their share is theirs, however long the trusted ones' backlogs, and no more, however many are down. Then the
     * trusted ones, those sent fewer deliveries now first.
     */
    async claimDue(
      limit: number,
      leaseMs: number,
      fairness: {
        rooms: ReadonlyArray<{ endpointId: string; room: number; sending?: number; trusted?: boolean; turn?: number }>;
        /** Deliveries of endpoints not trusted this claim may take at most (those down share no more than that). */
        untrustedRoom: number;
      },
    ): Promise<ClaimedDelivery[]> {
      const claimed = await database.$queryRaw<
        Array<{
          id: string;
          event_id: string;
          endpoint_id: string;
          attempts: number;
          retrying_since: Date;
          next_attempt_at: Date;
        }>
      >`
        WITH room AS (
          SELECT * FROM unnest(${fairness.rooms.map((each) => each.endpointId)}::uuid[],
                               ${fairness.rooms.map((each) => each.room)}::int[],
                               ${fairness.rooms.map((each) => each.sending ?? 0)}::int[],
                               ${fairness.rooms.map((each) => each.trusted === true)}::boolean[],
                               ${fairness.rooms.map((each) => each.turn ?? 0)}::bigint[])
                        AS r(endpoint_id, room, sending, trusted, turn)),
        picked AS (
          SELECT picked.id, picked.next_attempt_at, COALESCE(room.trusted, false) AS trusted,
                 CASE WHEN COALESCE(room.trusted, false) THEN COALESCE(room.sending, 0) ELSE COALESCE(room.turn, 0) END
                   AS turn
          FROM webhook_endpoint e
          LEFT JOIN room ON room.endpoint_id = e.id
          CROSS JOIN LATERAL (
            SELECT d.id, d.next_attempt_at FROM webhook_delivery d
            WHERE d.endpoint_id = e.id AND d.status = 'PENDING' AND d.next_attempt_at <= now()
            ORDER BY d.next_attempt_at, d.id
            LIMIT COALESCE(room.room, 1)
            FOR UPDATE OF d SKIP LOCKED) picked
          WHERE e.deleted_at IS NULL AND COALESCE(room.room, 1) > 0),
        due AS (
          SELECT id FROM (
            SELECT id, trusted, turn, next_attempt_at,
                   row_number() OVER (PARTITION BY trusted ORDER BY turn, next_attempt_at, id) AS place
            FROM picked) ranked
          WHERE trusted OR place <= ${fairness.untrustedRoom}
          ORDER BY trusted, turn, next_attempt_at, id
          LIMIT ${limit})
        UPDATE webhook_delivery d
        SET next_attempt_at = now() + make_interval(secs => ${leaseMs / 1000}::float8), retrying_since = COALESCE(d.retrying_since, now()), updated_at = now()
        FROM due WHERE d.id = due.id
        RETURNING d.id::text AS id, d.event_id, d.endpoint_id::text AS endpoint_id, d.attempts, d.retrying_since, d.next_attempt_at`;
      if (claimed.length === 0) return [];
      const [events, endpoints] = await Promise.all([
        database.webhookEvent.findMany({
          where: { id: { in: claimed.map((row) => row.event_id) } },
          select: { id: true, body: true },
        }),
        database.webhookEndpoint.findMany({
          where: { id: { in: claimed.map((row) => row.endpoint_id) } },
          select: { id: true, url: true, secretEncrypted: true },
        }),
      ]);
      const bodies = new Map(events.map((event) => [event.id, event.body]));
      const targets = new Map(endpoints.map((endpoint) => [endpoint.id, endpoint]));
      return claimed.flatMap((row) => {
        const body = bodies.get(row.event_id);
        const target = targets.get(row.endpoint_id);
        if (body === undefined || !target) return [];
        return [
          {
            id: row.id,
            eventId: row.event_id,
            endpointId: row.endpoint_id,
            url: target.url,
            secretEncrypted: target.secretEncrypted,
            body,
            attempts: row.attempts,
            retryingSince: row.retrying_since,
            leasedUntil: row.next_attempt_at,
          },
        ];
      });
    },

    /**
     * Writes one attempt to the log and what comes next; answers the delivery's new status. A claim whose lease ran
     * out meanwhile (a paused process: another claim, or a redelivery, holds the delivery now) writes its attempt to
     * the log only, and answers `overtaken`: what the delivery's holder records stands.
     */
    recordAttempt: (
      claim: ClaimedDelivery,
      outcome: AttemptOutcome,
      policy: WebhookRetryPolicy,
    ): Promise<WebhookDeliveryStatus | 'overtaken'> =>
      database.$transaction(async (tx) => {
        const attempts = claim.attempts + 1;
        await tx.webhookAttempt.create({
          data: {
            deliveryId: claim.id,
            at: outcome.at,
            statusCode: outcome.statusCode,
            error: outcome.error?.slice(0, 500) ?? null,
            durationMs: outcome.durationMs,
          },
        });
        const delivered = outcome.statusCode !== null && outcome.statusCode >= 200 && outcome.statusCode < 300;
        const exhausted = outcome.at.getTime() - claim.retryingSince.getTime() >= policy.retryForMs;
        const status: WebhookDeliveryStatus = delivered ? 'SUCCEEDED' : exhausted ? 'FAILED' : 'PENDING';
        const moved = await tx.webhookDelivery.updateMany({
          where: { id: claim.id, status: 'PENDING', nextAttemptAt: claim.leasedUntil, attempts: claim.attempts },
          data: {
            attempts,
            status,
            deliveredAt: delivered ? outcome.at : null,
            nextAttemptAt:
              status === 'PENDING' ? new Date(outcome.at.getTime() + nextDelayMs(policy, attempts, outcome)) : null,
          },
        });
        return moved.count === 1 ? status : 'overtaken';
      }),
  };
}

export type WebhookStore = ReturnType<typeof createWebhookStore>;

/**
 * Key rotation (`walletflow rotate-keys`): every endpoint's sealed secret re-sealed under the
 * ring's first key, each only if unchanged meanwhile (were they skipped, every delivery would fail
 * to decrypt once the old key left the ring). Deleted endpoints too: their
 * deliveries are kept on record and may be redelivered.
 */
export async function reencryptWebhookSecrets(
  database: Database,
  cipher: TokenCipher,
  options: RotationOptions = {},
): Promise<RotationCount> {
  const rows = inPages(
    (after, take) =>
      database.webhookEndpoint.findMany({
        where: after === null ? {} : { id: { gt: after } },
        orderBy: { id: 'asc' },
        take,
        select: { id: true, secretEncrypted: true },
      }),
    (row) => row.id,
    options,
  );
  return resealColumn(cipher, rows, {
    sealed: (row) => row.secretEncrypted,
    context: (row) => webhookSecretContext(row.id),
    writeIfUnchanged: async (row, resealed) =>
      (
        await database.webhookEndpoint.updateMany({
          where: { id: row.id, secretEncrypted: row.secretEncrypted },
          data: { secretEncrypted: resealed },
        })
      ).count,
  });
}
