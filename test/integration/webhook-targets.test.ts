// Where webhooks may go in production (webhooks/target-guard.ts): never an address inside
// walletflow's own network, checked at registration and again at every delivery attempt on every
// address the endpoint's name resolves to; https only. In development any http(s) URL still works
// (`walletflow webhooks listen` listens on loopback). Real HTTP servers on this machine. And which endpoints the
// console's home lists as failing: registered ones only (webhooks/webhook-store.ts health).
import { randomBytes, randomUUID } from 'node:crypto';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import express from 'express';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { opsWebhooksRouter } from '../../api/ops/webhooks-routes.ts';
import { createTokenCipher } from '../../lib/token-cipher.ts';
import { createWebhookDeliverer, sendWebhook, type WebhookDeliverer } from '../../webhooks/deliverer.ts';
import { isInternalAddress, publicOnlyLookup, refusedWebhookUrl } from '../../webhooks/target-guard.ts';
import {
  createWebhookStore,
  HEALTH_COUNT_LIMIT,
  type ClaimedDelivery,
  type WebhookStore,
} from '../../webhooks/webhook-store.ts';
import { createLogger } from '../../lib/logger.ts';
import { recordingDatabase, rowsExamined } from '../../harness/query-plans.ts';
import { testDatabaseUrl } from '../support/test-database.ts';
import { lockWaits } from '../support/lock-waits.ts';
import { waitUntil } from '../support/wait-for.ts';
import { opsAuth } from '../../api/ops/ops-auth.ts';
import { createAttemptLimiter } from '../../access/attempt-limits.ts';
import { startPartnerStack, type PartnerStack } from '../support/partner-stack.ts';

let stack: PartnerStack;
let target: Server;
let hits = 0;
let targetPort = 0;

beforeAll(async () => {
  stack = await startPartnerStack();
  target = createServer((_req, res) => {
    hits += 1;
    res.statusCode = 204;
    res.end();
  });
  await new Promise<void>((resolve) => target.listen(0, '127.0.0.1', resolve));
  targetPort = (target.address() as AddressInfo).port;
});
afterAll(async () => {
  await new Promise<void>((resolve) => target.close(() => resolve()));
  await stack.close();
});

describe('webhook targets', () => {
  it('knows an internal address in every spelling, and a public one', () => {
    // Including the IPv6 forms that carry an IPv4 address a gateway may translate (found by a second read).
    for (const address of [
      '127.0.0.1',
      '10.1.2.3',
      '172.20.0.5',
      '192.168.1.1',
      '169.254.169.254',
      '100.64.0.1',
      '0.0.0.0',
      '::1',
      '::',
      'fd00::1',
      'fe80::1',
      '::ffff:10.0.0.1',
      '::ffff:127.0.0.1',
      '64:ff9b::a9fe:a9fe',
      '64:ff9b:1::1',
      '2002:7f00:1::1',
      '::7f00:1',
      'fec0::1',
      '2001:0:4136:e378::1',
    ]) {
      expect(isInternalAddress(address), address).toBe(true);
    }
    for (const address of ['93.184.216.34', '2606:2800:220:1:248:1893:25c8:1946', '8.8.8.8'])
      expect(isInternalAddress(address), address).toBe(false);
  });

  it('refuses at registration, in production, plain http, internal addresses and names of walletflow’s own network', async () => {
    for (const url of [
      'http://partner.example/hooks',
      'https://localhost./hooks',
      'https://api./hooks',
      'https://2130706433/',
      'https://127.0.0.1/hooks',
      'https://[::1]/hooks',
      'https://169.254.169.254/latest',
      'https://postgres:5432/',
      'https://localhost/hooks',
      'https://10.0.0.5/',
    ]) {
      expect(refusedWebhookUrl(url), url).not.toBeNull();
    }
    expect(refusedWebhookUrl('https://hooks.partner.example/walletflow')).toBeNull();

    // The route, as production mounts it: 422 WEBHOOK_URL_NOT_ALLOWED, nothing stored.
    const key = 'k'.repeat(40);
    const app = express();
    const wrongKeys = createAttemptLimiter(stack.database, { kind: `webhook-targets-${randomUUID()}`, limit: 20 });
    app.use(
      '/ops',
      opsAuth({ keys: [key], wrongKeys, fingerprintKey: randomBytes(32) }),
      express.json(),
      opsWebhooksRouter({
        webhooks: createWebhookStore({ database: stack.database, cipher: createTokenCipher(stack.encryptionKey) }),
        publicTargetsOnly: true,
      }),
    );
    const server = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    try {
      const before = await stack.database.webhookEndpoint.count();
      const response = await fetch(
        `http://127.0.0.1:${(server.address() as AddressInfo).port}/ops/webhooks/endpoints`,
        {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body: JSON.stringify({ url: 'https://169.254.169.254/latest/meta-data', events: ['funding.approved'] }),
        },
      );
      expect(response.status).toBe(422);
      expect(await response.json()).toMatchObject({ code: 'WEBHOOK_URL_NOT_ALLOWED' });
      expect(await stack.database.webhookEndpoint.count()).toBe(before);
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });

  it('an attempt lasts at most its time-out, even against an endpoint that trickles its answer a byte at a time', async () => {
    const trickle = createServer((_req, res) => {
      const socket = res.socket!;
      socket.write('HTTP/1.1 200 OK\r\n');
      const timer = setInterval(() => socket.write('X-Slow: 1\r\n'), 200);
      setTimeout(() => {
        clearInterval(timer);
        socket.end('Content-Length: 0\r\n\r\n');
      }, 4000);
    });
    await new Promise<void>((resolve) => trickle.listen(0, '127.0.0.1', resolve));
    try {
      const outcome = await sendWebhook(`http://127.0.0.1:${(trickle.address() as AddressInfo).port}/`, {}, '{}', {
        timeoutMs: 1000,
        publicOnly: false,
      }).then(
        (answer) => answer.status,
        (error: { code?: string }) => error.code,
      );
      // The server's answer completes after 4 s: only a time-out on the whole attempt ends it first.
      expect(outcome).toBe('TIMED_OUT');
    } finally {
      trickle.closeAllConnections();
      await new Promise<void>((resolve) => trickle.close(() => resolve()));
    }
  });

  it('refuses at delivery, in production, an internal address however the URL names it; nothing reaches it', async () => {
    const headers = { 'content-type': 'application/json' };
    hits = 0;
    for (const url of [
      `https://127.0.0.1:${targetPort}/`,
      `https://localhost:${targetPort}/`,
      `http://127.0.0.1:${targetPort}/`,
    ]) {
      const error = await sendWebhook(url, headers, '{}', { timeoutMs: 2000, publicOnly: true }).then(
        () => null,
        (caught: { code?: string }) => caught.code,
      );
      expect(error, url).toMatch(/^(INTERNAL_ADDRESS_REFUSED|NOT_HTTPS_REFUSED)$/);
    }
    expect(hits).toBe(0);
    // The lookup the connection uses refuses a name that resolves inside (rebinding included: it is the connection's
    // own lookup).
    const refused = await new Promise((resolve) => publicOnlyLookup('localhost', {}, (error) => resolve(error)));
    expect(refused).toMatchObject({ code: 'INTERNAL_ADDRESS_REFUSED' });
    // In development, the same target is delivered to.
    expect(
      (await sendWebhook(`http://127.0.0.1:${targetPort}/`, headers, '{}', { timeoutMs: 2000, publicOnly: false }))
        .status,
    ).toBe(204);
    expect(hits).toBe(1);
  });
});

describe('the webhooks the console’s home says are failing', () => {
  it('are endpoints still registered: a deleted one’s dead letters, which nobody can redeliver, are not counted', async () => {
    const store = createWebhookStore({ database: stack.database, cipher: createTokenCipher(stack.encryptionKey) });
    const endpoint = async () =>
      (await store.createEndpoint({ url: 'https://partner.example/hooks', events: ['funding.approved'] }, 'ops'))
        .endpoint.id;
    const [kept, deleted] = [await endpoint(), await endpoint()];
    const event = await stack.database.webhookEvent.create({
      data: { id: `evt_${randomUUID()}`, type: 'funding.approved', body: '{}' },
    });
    for (const endpointId of [kept, deleted])
      await stack.database.webhookDelivery.create({
        data: { id: randomUUID(), eventId: event.id, endpointId, status: 'FAILED', attempts: 3 },
      });
    expect(await store.deleteEndpoint(deleted, 'ops')).toBe(true);
    const failing = (await store.health()).filter((row) => [kept, deleted].includes(row.endpointId));
    // Before: the deleted endpoint was listed with its dead letter, for good (the home read them every 5 s).
    expect(failing).toEqual([expect.objectContaining({ endpointId: kept, deadLetters: 1, retrying: 0 })]);
  });

  it('are gone once deleted however many deliveries were pending: they end FAILED a chunk at a time, each its own statement, with no transaction to outlive', async () => {
    const store = createWebhookStore({ database: stack.database, cipher: createTokenCipher(stack.encryptionKey) });
    const { id } = (
      await store.createEndpoint({ url: 'https://partner.example/down', events: ['funding.approved'] }, 'ops')
    ).endpoint;
    // A day down: more pending deliveries than a chunk (5,000), two chunks and a bit.
    const pending = 10_050;
    await stack.database.$executeRawUnsafe(`
      WITH events AS (
        INSERT INTO webhook_event (id, type, body)
        SELECT 'evt_' || gen_random_uuid(), 'funding.approved', '{}' FROM generate_series(1, ${pending}) RETURNING id)
      INSERT INTO webhook_delivery (id, event_id, endpoint_id, status, next_attempt_at)
      SELECT gen_random_uuid(), events.id, '${id}'::uuid, 'PENDING', now() FROM events`);
    // A busy database: the first statement that fails them waits 5.2 s, past the 5 s an interactive transaction has.
    await stack.database.$executeRawUnsafe(`CREATE TABLE slow_once (done boolean NOT NULL)`);
    await stack.database.$executeRawUnsafe(`INSERT INTO slow_once VALUES (false)`);
    await stack.database.$executeRawUnsafe(`
      CREATE FUNCTION slow_once() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF (SELECT NOT done FROM slow_once) THEN UPDATE slow_once SET done = true; PERFORM pg_sleep(5.2); END IF;
        RETURN NULL;
      END $$`);
    await stack.database.$executeRawUnsafe(
      `CREATE TRIGGER slow_once BEFORE UPDATE ON webhook_delivery FOR EACH STATEMENT EXECUTE FUNCTION slow_once()`,
    );
    try {
      // Before: one transaction failed them all; past its 5 s it was rolled back (P2028, answered 503 OVERLOADED), and
      // every DELETE after it the same.
      expect(await store.deleteEndpoint(id, 'ops')).toBe(true);
    } finally {
      await stack.database.$executeRawUnsafe(`DROP TRIGGER slow_once ON webhook_delivery`);
      await stack.database.$executeRawUnsafe(`DROP FUNCTION slow_once()`);
      await stack.database.$executeRawUnsafe(`DROP TABLE slow_once`);
    }
    const left = await stack.database.webhookDelivery.groupBy({
      by: ['status'],
      where: { endpointId: id },
      _count: true,
    });
    expect(left.map((row) => [row.status, row._count])).toEqual([['FAILED', pending]]);
    expect(await store.getEndpoint(id)).toBeNull();
    // Deleted, nothing left to fail: a second DELETE finds no endpoint.
    expect(await store.deleteEndpoint(id, 'ops')).toBe(false);
  });

  it('ends FAILED a delivery an event wrote for an endpoint while it was deleted, committed after the DELETE, at the deliverer’s next round', async () => {
    const kit = deliveryKit();
    const id = await kit.endpoint('https://partner.example/going-away');
    // A live endpoint's delivery, not due for an hour: left as it is.
    const live = await kit.endpoint('https://partner.example/staying');
    const [liveDelivery] = await dueDeliveries(live, 1, new Date(Date.now() + 3_600_000));
    // An event's transaction (a batch's cancel writes its items' events for minutes) reads the endpoint while it is
    // live and writes its delivery; meanwhile the endpoint is deleted, and the DELETE fails what it can see.
    const eventTransaction = new pg.Client({ connectionString: testDatabaseUrl() });
    await eventTransaction.connect();
    const deliveryId = randomUUID();
    try {
      await eventTransaction.query({ text: 'BEGIN' });
      const eventId = `evt_${randomUUID()}`;
      await eventTransaction.query({
        text: `INSERT INTO webhook_event (id, type, body) VALUES ($1, 'funding.approved', '{}')`,
        values: [eventId],
      });
      await eventTransaction.query({
        text: `INSERT INTO webhook_delivery (id, event_id, endpoint_id, status, next_attempt_at)
               VALUES ($1::uuid, $2, $3::uuid, 'PENDING', now())`,
        values: [deliveryId, eventId, id],
      });
      const store = createWebhookStore({ database: stack.database, cipher: createTokenCipher(stack.encryptionKey) });
      expect(await store.deleteEndpoint(id, 'ops')).toBe(true);
      await eventTransaction.query({ text: 'COMMIT' });
    } finally {
      await eventTransaction.end();
    }
    const status = async () =>
      (await stack.database.webhookDelivery.findUniqueOrThrow({ where: { id: deliveryId } })).status;
    expect(await status()).toBe('PENDING');
    // Before: the claim never takes a deleted endpoint's delivery and a redelivery is refused; PENDING for good.
    await kit.deliverer.deliverFor({
      roundMs: 50,
      pollIntervalMs: 50,
      sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
      heartbeat: () => undefined,
    });
    expect(await status()).toBe('FAILED');
    expect(await stack.database.webhookDelivery.findUniqueOrThrow({ where: { id: liveDelivery! } })).toMatchObject({
      status: 'PENDING',
      attempts: 0,
    });
  });

  it('a redelivery asked for while another admin deletes its endpoint comes first, and the delete then ends it FAILED with the endpoint’s others: never left due with no attempt to come', async () => {
    const { store, endpointId, deliveryId } = await deadLetter();
    // The delivery's row held a moment (the deliverer's lease of another row, a slow statement): the redelivery has
    // read its endpoint and waits to move it, while the other admin's DELETE runs.
    const holder = new pg.Client({ connectionString: testDatabaseUrl() });
    await holder.connect();
    let redelivering: ReturnType<WebhookStore['redeliver']> | undefined;
    let deleting: Promise<boolean> | undefined;
    try {
      await holder.query('BEGIN TRANSACTION');
      await holder.query('SELECT 1 FROM webhook_delivery WHERE id = $1 FOR UPDATE', [deliveryId]);
      redelivering = store.redeliver(deliveryId, 'ops (as Dana)');
      await waitUntil(
        () => lockWaits(stack.database),
        (waiting) => waiting > 0,
        10_000,
      );
      let deleted = false;
      deleting = store.deleteEndpoint(endpointId, 'ops (as Lee)').finally(() => {
        deleted = true;
      });
      // The DELETE ends (before), or waits behind the redelivery.
      await waitUntil(
        async () => (deleted ? 2 : await lockWaits(stack.database)),
        (waiting) => waiting > 1,
        10_000,
      );
    } finally {
      await holder.query('COMMIT TRANSACTION').catch(() => undefined);
      await holder.end();
    }
    const [answer, wasDeleted] = await Promise.all([redelivering!, deleting!]);
    expect(answer.kind).toBe('redelivered');
    expect(wasDeleted).toBe(true);
    // Before: the redelivery read the endpoint live, the DELETE ended what was PENDING (not this one, FAILED then),
    // and the redelivery then made it due: answered "redelivered", it stayed PENDING under a deleted endpoint, which
    // no claim takes, until the deliverer's sweep of deleted endpoints ended it FAILED with no attempt.
    expect(await stack.database.webhookDelivery.findUniqueOrThrow({ where: { id: deliveryId } })).toMatchObject({
      status: 'FAILED',
      redeliveredBy: 'ops (as Dana)',
    });
  });

  it('a redelivery asked for while a DELETE of its endpoint is under way waits for it, and is refused as deleted', async () => {
    const { store, endpointId, deliveryId } = await deadLetter();
    // The other admin's DELETE has marked the endpoint and not committed yet.
    const deleting = new pg.Client({ connectionString: testDatabaseUrl() });
    await deleting.connect();
    let redelivering: ReturnType<WebhookStore['redeliver']> | undefined;
    try {
      await deleting.query('BEGIN TRANSACTION');
      await deleting.query('UPDATE webhook_endpoint SET deleted_at = now() WHERE id = $1', [endpointId]);
      redelivering = store.redeliver(deliveryId, 'ops (as Dana)');
      // Before: nothing to wait for; it read the endpoint as live and made the delivery due.
      await waitUntil(
        async () => Promise.race([redelivering!.then(() => -1), lockWaits(stack.database)]),
        (waiting) => waiting !== 0,
        10_000,
      );
    } finally {
      await deleting.query('COMMIT TRANSACTION').catch(() => undefined);
      await deleting.end();
    }
    expect((await redelivering!).kind).toBe('endpoint-deleted');
    expect(await stack.database.webhookDelivery.findUniqueOrThrow({ where: { id: deliveryId } })).toMatchObject({
      status: 'FAILED',
      redeliveredBy: null,
    });
  });

  it('counts an endpoint’s dead letters up to HEALTH_COUNT_LIMIT and says "more than" past it: a push reads no more, however many there are and whatever the planner’s costs', async () => {
    const store = createWebhookStore({ database: stack.database, cipher: createTokenCipher(stack.encryptionKey) });
    const { endpoint: down } = await store.createEndpoint(
      { url: 'https://down-for-days.example/hooks', events: ['funding.approved'] },
      'ops',
    );
    const { endpoint: healthy } = await store.createEndpoint(
      { url: 'https://healthy.example/hooks', events: ['funding.approved'] },
      'ops',
    );
    // A healthy receiver's history first: 20,000 delivered and 3 dead letters. Then a receiver down for days: three
    // times the limit in dead letters (never purged), 5 being retried and 10,000 not yet tried.
    const run = randomUUID().slice(0, 8);
    const many = 3 * HEALTH_COUNT_LIMIT;
    const rows: Array<[endpointId: string, status: string, attempts: number, count: number]> = [
      [healthy.id, 'SUCCEEDED', 1, 20_000],
      [healthy.id, 'FAILED', 3, 3],
      [down.id, 'FAILED', 3, many],
      [down.id, 'PENDING', 3, 5],
      [down.id, 'PENDING', 0, 10_000],
    ];
    for (const [index, [endpointId, status, attempts, count]] of rows.entries()) {
      const prefix = `evt_${run}_${index}_`;
      await stack.database.$executeRaw`
        INSERT INTO webhook_event (id, type, body) SELECT ${prefix} || i, 'funding.approved', '{}'
        FROM generate_series(1, ${count}) i`;
      await stack.database.$executeRaw`
        INSERT INTO webhook_delivery (id, event_id, endpoint_id, status, attempts)
        SELECT gen_random_uuid(), ${prefix} || i, ${endpointId}::uuid, ${status}::"WebhookDeliveryStatus", ${attempts}
        FROM generate_series(1, ${count}) i`;
    }
    await stack.database.$executeRaw`ANALYZE webhook_delivery`;
    const recording = recordingDatabase(testDatabaseUrl());
    const explainer = new pg.Client({ connectionString: testDatabaseUrl() });
    await explainer.connect();
    try {
      const counted = createWebhookStore({
        database: recording.database,
        cipher: createTokenCipher(stack.encryptionKey),
      });
      const health = await counted.health();
      expect(health.find((each) => each.endpointId === down.id)).toMatchObject({
        deadLetters: HEALTH_COUNT_LIMIT + 1,
        retrying: 5,
      });
      expect(health.find((each) => each.endpointId === healthy.id)).toMatchObject({ deadLetters: 3, retrying: 0 });
      // What the push read of the deliveries: up to the limit for each count, not the 30,000 dead letters, the other
      // endpoint's history or the deliveries not yet tried (the other endpoints' few of this file's other tests are
      // read too). Before: every dead letter and every delivery being retried, at every push of every open home page;
      // then a statement whose plan the planner's costs chose: on some, it read the table once for each endpoint.
      const [read] = recording.statements.filter((each) => /webhook_delivery/.test(each.text));
      expect(read!.settings).toEqual(['SET LOCAL enable_sort = off', 'SET LOCAL enable_incremental_sort = off']);
      for (const costs of [
        'RESET ALL',
        'SET random_page_cost = 1.1',
        'SET random_page_cost = 10',
        'SET effective_cache_size = 1000',
      ]) {
        await explainer.query('RESET ALL');
        await explainer.query(costs);
        const examined = await rowsExamined(explainer, read!, 'webhook_delivery');
        expect(examined, costs).toBeLessThanOrEqual(HEALTH_COUNT_LIMIT + 1 + 3 + 5 + 50);
      }
    } finally {
      await explainer.end();
      await recording.close();
    }
  });
});

describe('a webhook attempt recorded after its claim’s lease ran out', () => {
  it('changes nothing of the delivery another claim holds: its log keeps the attempt, the holder’s outcome stands', async () => {
    // Found by a read: an attempt was recorded wherever the delivery was PENDING, so a process paused past its lease
    // wrote its stale outcome over the claim that held the delivery then: here the last minute of its retry window
    // ran out by the paused attempt's clock, and the delivery the next claim delivered stayed a dead letter.
    const store = createWebhookStore({ database: stack.database, cipher: createTokenCipher(stack.encryptionKey) });
    const { endpoint } = await store.createEndpoint(
      { url: 'https://paused-worker.example/hooks', events: ['funding.approved'] },
      'ops',
    );
    const event = await stack.database.webhookEvent.create({
      data: { id: `evt_${randomUUID()}`, type: 'funding.approved', body: '{}' },
    });
    const policy = { baseDelayMs: 1_000, maxDelayMs: 60_000, retryForMs: 60_000 };
    const id = randomUUID();
    await stack.database.webhookDelivery.create({
      data: {
        id,
        eventId: event.id,
        endpointId: endpoint.id,
        status: 'PENDING',
        attempts: 5,
        nextAttemptAt: new Date(Date.now() - 1_000),
        retryingSince: new Date(Date.now() - policy.retryForMs + 30_000),
      },
    });
    const claimOf = async (leaseMs: number) => {
      const claim = (
        await store.claimDue(1_000, leaseMs, {
          rooms: [{ endpointId: endpoint.id, room: 1_000 }],
          untrustedRoom: 1_000,
        })
      ).find((each) => each.id === id);
      if (!claim) throw new Error('the delivery was not claimed');
      return claim;
    };
    const paused = await claimOf(50);
    await new Promise((resolve) => setTimeout(resolve, 150));
    const holder = await claimOf(60_000);
    const attempt = (at: Date, statusCode: number) => ({ at, statusCode, error: null, durationMs: 5 });
    // The paused process comes back with a failure stamped past the window's end; the holder's send is delivered.
    expect(await store.recordAttempt(paused, attempt(new Date(Date.now() + 60_000), 500), policy)).toBe('overtaken');
    expect(await store.recordAttempt(holder, attempt(new Date(), 200), policy)).toBe('SUCCEEDED');
    const delivery = await store.getDelivery(id);
    expect(delivery).toMatchObject({ status: 'SUCCEEDED', attempts: 6 });
    expect(delivery!.log.map((each) => each.statusCode).sort()).toEqual([200, 500]);
  });

  it('is never sent by a process paused between its claim and its send: the claim that holds it then sends it once', async () => {
    // Found by a read: the deliverer sent whatever it had claimed, however late it came back to it, so a process
    // paused past its claim's lease sent an event another claim had already delivered.
    const servers = partnerServers();
    let hits = 0;
    const url = await servers.start((res) => {
      hits += 1;
      res.statusCode = 204;
      res.end();
    });
    let claimed: () => void = () => {};
    const hasClaimed = new Promise<void>((resolve) => (claimed = resolve));
    let resume: () => void = () => {};
    const resumed = new Promise<void>((resolve) => (resume = resolve));
    // The paused process: the answer to the claim of the test's delivery reaches it only when the test says.
    let id = '';
    const paused = deliveryKit({
      requestTimeoutMs: 200,
      leaseMarginMs: 400,
      claimDue: async (claimDue) => {
        const batch = await claimDue();
        if (!batch.some((delivery) => delivery.id === id)) return batch;
        claimed();
        await resumed;
        return batch;
      },
    });
    const endpointId = await paused.endpoint(url);
    [id] = (await dueDeliveries(endpointId, 1, new Date(Date.now() - 1_000))) as [string];
    const timing = { roundMs: 60_000, pollIntervalMs: 50 };
    const pausedRound = roundOf(paused.deliverer, timing);
    await hasClaimed;
    // Its lease (600 ms) runs out; another process claims the delivery and delivers it.
    await new Promise((resolve) => setTimeout(resolve, 800));
    const holder = deliveryKit();
    const holderRound = roundOf(holder.deliverer, timing);
    try {
      expect(await deliveredWithin(endpointId, 1, 20_000)).toBe(1);
      await holderRound.stop();
      resume();
      await pausedRound.stop();
      expect(hits).toBe(1);
      expect(await stack.database.webhookDelivery.findUniqueOrThrow({ where: { id } })).toMatchObject({
        status: 'SUCCEEDED',
        attempts: 1,
      });
    } finally {
      resume();
      await holderRound.stop();
      await pausedRound.stop();
      await servers.closeAll();
    }
  });
});

/** A round's sleep: rejects at once when `signal` was aborted, or when it is. */
const roundSleep = (signal: AbortSignal) => (ms: number) =>
  new Promise<void>((resolve, reject) => {
    if (signal.aborted) return reject(new Error('round over'));
    const over = () => {
      clearTimeout(timer);
      reject(new Error('round over'));
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', over);
      resolve();
    }, ms);
    signal.addEventListener('abort', over, { once: true });
  });

/** `count` due deliveries of `endpointId`, each its own event, due since `at`; answers their ids. */
/** An endpoint's delivery dead-lettered (FAILED), for ops to redeliver. */
async function deadLetter(): Promise<{ store: WebhookStore; endpointId: string; deliveryId: string }> {
  const store = createWebhookStore({ database: stack.database, cipher: createTokenCipher(stack.encryptionKey) });
  const { endpoint } = await store.createEndpoint(
    { url: 'https://partner.example/deleted-meanwhile', events: ['funding.approved'] },
    'ops',
  );
  const [deliveryId] = await dueDeliveries(endpoint.id, 1, new Date());
  await stack.database.webhookDelivery.update({
    where: { id: deliveryId! },
    data: { status: 'FAILED', nextAttemptAt: null },
  });
  return { store, endpointId: endpoint.id, deliveryId: deliveryId! };
}

async function dueDeliveries(endpointId: string, count: number, at: Date): Promise<string[]> {
  const ids: string[] = [];
  for (let index = 0; index < count; index += 1) {
    const event = await stack.database.webhookEvent.create({
      data: { id: `evt_${randomUUID().replaceAll('-', '')}`, type: 'funding.approved', body: '{}', createdAt: at },
    });
    const id = randomUUID();
    ids.push(id);
    await stack.database.webhookDelivery.create({
      data: { id, eventId: event.id, endpointId, nextAttemptAt: at, createdAt: at },
    });
  }
  return ids;
}

const delivered = (endpointId: string) =>
  stack.database.webhookDelivery.count({ where: { endpointId, status: 'SUCCEEDED' } });

/** Waits until `count` of the endpoint's deliveries were delivered, `timeoutMs` at most; answers how many were. */
async function deliveredWithin(endpointId: string, count: number, timeoutMs: number): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  while ((await delivered(endpointId)) < count && Date.now() < deadline)
    await new Promise((resolve) => setTimeout(resolve, 50));
  return delivered(endpointId);
}

/** A round of `deliverer` going on until `stop()`: its sleep then rejects, and its sends end. */
function roundOf(deliverer: WebhookDeliverer, timing: { roundMs: number; pollIntervalMs: number }) {
  const controller = new AbortController();
  const round = deliverer.deliverFor({ ...timing, sleep: roundSleep(controller.signal), heartbeat: () => undefined });
  return {
    async stop(): Promise<void> {
      controller.abort();
      await round.catch(() => undefined);
      await deliverer.drain();
    },
  };
}

/** The partner's servers a test starts: each on loopback, closed (its connections too) by `closeAll`. */
function partnerServers() {
  const servers: Server[] = [];
  return {
    /**
     * A server answering with `answer` (204 at once, when not given), told of each connection it takes; its endpoint's
     * URL.
     */
    async start(answer?: (res: ServerResponse) => void, onConnection?: (socket: Socket) => void): Promise<string> {
      const server = createServer((_req, res) => {
        if (answer) return answer(res);
        res.statusCode = 204;
        res.end();
      });
      if (onConnection) server.on('connection', onConnection);
      servers.push(server);
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      return `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`;
    },
    async closeAll(): Promise<void> {
      for (const server of servers) {
        server.closeAllConnections();
        await new Promise<void>((resolve) => server.close(() => resolve()));
      }
    },
  };
}

/** The store and deliverer a test sends through: retries an hour apart unless `retry` says otherwise. */
function deliveryKit(
  options: {
    requestTimeoutMs?: number;
    leaseMarginMs?: number;
    concurrency?: number;
    retry?: { baseDelayMs: number; maxDelayMs: number; retryForMs: number };
    /** Stands in for the store's claim: `claimDue` makes it. */
    claimDue?: (claimDue: () => Promise<ClaimedDelivery[]>) => Promise<ClaimedDelivery[]>;
  } = {},
) {
  const cipher = createTokenCipher(stack.encryptionKey);
  const store = createWebhookStore({ database: stack.database, cipher });
  const claiming = options.claimDue;
  const deliverer = createWebhookDeliverer({
    store: claiming
      ? {
          ...store,
          claimDue: (...args: Parameters<WebhookStore['claimDue']>) => claiming(() => store.claimDue(...args)),
        }
      : store,
    cipher,
    logger: createLogger({ level: 'silent' }),
    retry: options.retry ?? { baseDelayMs: 60_000, maxDelayMs: 60_000, retryForMs: 3_600_000 },
    ...(options.requestTimeoutMs === undefined ? {} : { requestTimeoutMs: options.requestTimeoutMs }),
    ...(options.leaseMarginMs === undefined ? {} : { leaseMarginMs: options.leaseMarginMs }),
    ...(options.concurrency === undefined ? {} : { concurrency: options.concurrency }),
  });
  return {
    deliverer,
    /** Registers `url` for funding.approved; its id. */
    endpoint: async (url: string) =>
      (await store.createEndpoint({ url, events: ['funding.approved'] }, 'deliverer-test')).endpoint.id,
  };
}

describe('an endpoint that does not answer', () => {
  it('holds one place each, however many: another endpoint’s deliveries all arrive while their requests are still open', async () => {
    const servers = partnerServers();
    // A partner endpoint that takes each request and never answers (a dead host behind a load balancer).
    const held: Array<() => void> = [];
    let answering = false;
    const silentUrl = await servers.start((res) => {
      if (answering) res.end();
      else held.push(() => res.end());
    });
    const kit = deliveryKit({
      // Longer than the round: the silent endpoint's requests stay open until the test lets them go.
      requestTimeoutMs: 30_000,
      concurrency: 8,
    });
    // Three silent endpoints (one server), never delivered to from this process: not known to be down yet.
    const silentIds = [await kit.endpoint(silentUrl), await kit.endpoint(silentUrl), await kit.endpoint(silentUrl)];
    const healthyId = await kit.endpoint(await servers.start());
    // The silent endpoints' 20 events each are the oldest: before, a claim took them first, and every claim waited for
    // them; after the first mend, 4 places each took all 8.
    for (const silentId of silentIds) await dueDeliveries(silentId, 20, new Date(Date.now() - 60_000));
    await dueDeliveries(healthyId, 40, new Date(Date.now() - 30_000));
    const round = roundOf(kit.deliverer, { roundMs: 20_000, pollIntervalMs: 100 });
    try {
      expect(await deliveredWithin(healthyId, 40, 15_000)).toBe(40);
      // One place each taken by the silent endpoints: their requests are still open.
      expect(held.length).toBe(3);
    } finally {
      answering = true;
      for (const release of held) release();
      await round.stop();
      await servers.closeAll();
    }
  }, 60_000);

  it('does not slow one that does: a lone endpoint’s backlog goes out as places free, not one claim per poll interval', async () => {
    const servers = partnerServers();
    const kit = deliveryKit();
    const endpointId = await kit.endpoint(await servers.start());
    await dueDeliveries(endpointId, 200, new Date(Date.now() - 1_000));
    // A poll interval as long as the round: before the second read's mend, a claim cut at the endpoint's share was
    // taken for "nothing more due", and the round slept a poll interval after the first.
    const round = roundOf(kit.deliverer, { roundMs: 120_000, pollIntervalMs: 120_000 });
    try {
      expect(await deliveredWithin(endpointId, 200, 40_000)).toBe(200);
    } finally {
      await round.stop();
      await servers.closeAll();
    }
  }, 60_000);
});

describe('endpoints with backlogs', () => {
  it('two that answer drain together, claimed again as their sends end, never a poll interval apart', async () => {
    const servers = partnerServers();
    const kit = deliveryKit();
    const url = await servers.start();
    const ids = [await kit.endpoint(url), await kit.endpoint(url)];
    for (const id of ids) await dueDeliveries(id, 150, new Date(Date.now() - 1_000));
    // Found by a fourth read: a full claim flagged no endpoint as backlogged, so the claim after it, given both no
    // room yet, was taken for "nothing more due" and the round slept a poll interval with 280 due.
    const round = roundOf(kit.deliverer, { roundMs: 120_000, pollIntervalMs: 120_000 });
    try {
      expect(await deliveredWithin(ids[0]!, 150, 40_000)).toBe(150);
      expect(await deliveredWithin(ids[1]!, 150, 10_000)).toBe(150);
    } finally {
      await round.stop();
      await servers.closeAll();
    }
  }, 60_000);

  it('three that answer slowly, with long backlogs, leave a new endpoint its share: it is delivered to while theirs still wait', async () => {
    const servers = partnerServers();
    const kit = deliveryKit();
    const slowUrl = await servers.start((res) =>
      setTimeout(() => {
        res.statusCode = 204;
        res.end();
      }, 200),
    );
    const backlogs = [await kit.endpoint(slowUrl), await kit.endpoint(slowUrl), await kit.endpoint(slowUrl)];
    for (const id of backlogs) await dueDeliveries(id, 150, new Date(Date.now() - 60_000));
    const round = roundOf(kit.deliverer, { roundMs: 120_000, pollIntervalMs: 1_000 });
    try {
      // Their backlogs under way, the three trusted (each delivered to): a new endpoint's events arrive.
      for (const id of backlogs) expect(await deliveredWithin(id, 1, 10_000)).toBeGreaterThan(0);
      const newId = await kit.endpoint(await servers.start());
      await dueDeliveries(newId, 5, new Date());
      expect(await deliveredWithin(newId, 5, 20_000)).toBe(5);
      // Trusted backlogs that filled every claim would leave it waiting for all 450 to go.
      const waiting = await stack.database.webhookDelivery.count({
        where: { endpointId: { in: backlogs }, status: 'PENDING' },
      });
      expect(waiting).toBeGreaterThan(0);
    } finally {
      await round.stop();
      await servers.closeAll();
    }
  }, 90_000);

  it('ten that are down take no more than half the places, and a new endpoint among them is tried first and drains', async () => {
    const servers = partnerServers();
    let open = 0;
    let mostOpen = 0;
    const silentUrl = await servers.start(
      () => undefined,
      (socket) => {
        open += 1;
        mostOpen = Math.max(mostOpen, open);
        socket.on('close', () => (open = Math.max(0, open - 1)));
      },
    );
    const kit = deliveryKit({
      // The silent endpoints time out again and again, each time leaving a place free with their backlogs overdue.
      requestTimeoutMs: 300,
      concurrency: 8,
    });
    for (let index = 0; index < 10; index += 1)
      await dueDeliveries(await kit.endpoint(silentUrl), 10, new Date(Date.now() - 60_000));
    const healthyId = await kit.endpoint(await servers.start());
    await dueDeliveries(healthyId, 40, new Date(Date.now() - 1_000));
    const round = roundOf(kit.deliverer, { roundMs: 120_000, pollIntervalMs: 120_000 });
    try {
      // Before: each freed place went to a down endpoint's older delivery, and the new one was never tried.
      expect(await deliveredWithin(healthyId, 40, 20_000)).toBe(40);
      expect(mostOpen).toBeLessThanOrEqual(4);
    } finally {
      await round.stop();
      await servers.closeAll();
    }
  }, 60_000);
});

describe('an endpoint that asks to wait', () => {
  it('gets its next attempt no sooner than its Retry-After on a 429 or a 503, up to the longest wait of the policy', async () => {
    const servers = partnerServers();
    const kit = deliveryKit({
      requestTimeoutMs: 5_000,
      retry: { baseDelayMs: 1_000, maxDelayMs: 3_600_000, retryForMs: 86_400_000 },
    });
    const deliveries: string[] = [];
    for (const ask of [
      { status: 429, retryAfter: '120' },
      { status: 503, retryAfter: '7200' },
      { status: 500, retryAfter: '120' },
    ]) {
      const url = await servers.start((res) => {
        res.writeHead(ask.status, { 'retry-after': ask.retryAfter });
        res.end();
      });
      deliveries.push(...(await dueDeliveries(await kit.endpoint(url), 1, new Date(Date.now() - 1_000))));
    }
    try {
      const deadline = Date.now() + 15_000;
      const attempted = () =>
        stack.database.webhookDelivery.findMany({ where: { id: { in: deliveries } }, include: { attemptLog: true } });
      while ((await attempted()).some((row) => row.attempts === 0) && Date.now() < deadline)
        await kit.deliverer.deliverFor({
          roundMs: 200,
          pollIntervalMs: 50,
          sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
          heartbeat: () => undefined,
        });
      const waits = new Map(
        (await attempted()).map((row) => [
          row.id,
          Math.round((row.nextAttemptAt!.getTime() - row.attemptLog[0]!.at.getTime()) / 1000),
        ]),
      );
      // Before: 1 s each, the backoff's first step, whatever the endpoint asked.
      expect(deliveries.map((id) => waits.get(id))).toEqual([120, 3600, 1]);
    } finally {
      await kit.deliverer.drain();
      await servers.closeAll();
    }
  });
});
