// Signed webhooks (contract-decisions section 13) end to end on a real PostgreSQL and Temporal:
// endpoints through the ops API, events written by the records in their move's transaction (a
// rolled-back move emits nothing), the deliverWebhooks workflow sending to a real local receiver
// (node:http on 127.0.0.1) that verifies each signature with a verifier written from the spec,
// retries while the endpoint is down, the dead letter, and ops' redelivery. The retry schedule is
// shortened (WEBHOOK_RETRY_* as the worker would take them); production retries for 24 hours.
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { NativeConnection, Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { buildOpenApiDocument } from '../../api/docs/openapi.ts';
import { bundleVersion, promoteOnStart, versionedWorkerOptions } from '../../lib/worker-deployment.ts';
import {
  LISTED_LOG_ATTEMPTS,
  LOGGED_COUNT_LIMIT,
  SHOWN_LOG_ATTEMPTS,
  webhookEventBodySchema,
  type WebhookDeliveryView,
} from '../../domain/webhook.ts';
import { createFundingRecord, type NewFunding } from '../../fundings/funding-record.ts';
import { createWebhookStore } from '../../webhooks/webhook-store.ts';
import { recordingDatabase } from '../../harness/query-plans.ts';
import { testDatabaseUrl } from '../support/test-database.ts';
import { newFundingRow } from '../support/new-funding-row.ts';
import { fundingView } from '../../fundings/funding-view.ts';
import { createLogger } from '../../lib/logger.ts';
import { createTokenCipher } from '../../lib/token-cipher.ts';
import type { WalletClient } from '../../wallet/index.ts';
import { startDeliverWebhooks } from '../../workflows/deliver-webhooks.contract.ts';
import { startPartnerStack, type PartnerStack } from '../support/partner-stack.ts';
import { stackActivities } from '../support/stack-activities.ts';
import { verifyStandardWebhook } from '../support/standard-webhooks-verifier.ts';

let stack: PartnerStack;
let worker: Worker;
let workerConnection: NativeConnection;
let running: Promise<void>;
const delivererId = `webhooks-test-${randomUUID()}`;
const taskQueue = `webhooks-test-${randomUUID()}`;
/**
 * Attempts every 100 to 400 ms for 8 s: a down endpoint is tried several times, and seen still
 * retried, well inside the window however loaded the machine (2.5 s was not: on a loaded machine
 * the window ran out before the test read its second attempt), and a dead letter comes in seconds.
 */
const retry = { baseDelayMs: 100, maxDelayMs: 400, retryForMs: 8000 };

beforeAll(async () => {
  stack = await startPartnerStack();
  workerConnection = await NativeConnection.connect({ address: inject('temporalAddress') });
  worker = await Worker.create({
    connection: workerConnection,
    namespace: inject('temporalNamespace'),
    taskQueue,
    workflowBundle: { codePath: inject('workflowBundlePath') },
    workerDeploymentOptions: versionedWorkerOptions(
      bundleVersion(taskQueue, { codePath: inject('workflowBundlePath') }),
    ),
    activities: stackActivities(stack, {
      // The deliverer calls no wallet.
      wallet: {} as WalletClient,
      taskQueue,
      webhooks: { retry, requestTimeoutMs: 2000 },
    }),
  });
  running = worker.run();
  // Its own deployment (the task queue's): this build is the current one.
  await promoteOnStart(
    stack.temporal,
    bundleVersion(taskQueue, { codePath: inject('workflowBundlePath') }),
    'always',
    createLogger({ level: 'silent' }),
  );
  await startDeliverWebhooks(stack.temporal, {
    taskQueue,
    workflowId: delivererId,
    input: { pollIntervalMs: 100, roundMs: 2000 },
  });
});

afterAll(async () => {
  await stack?.temporal.workflow
    .getHandle(delivererId)
    .terminate('test over')
    .catch(() => undefined);
  worker?.shutdown();
  await running?.catch(() => undefined);
  await workerConnection?.close();
  await stack?.close();
});

interface Received {
  id: string;
  verified: boolean;
  body: string;
}

/** The partner's endpoint: records every request, verifying its signature; answers `status()`. */
async function receiver(options: { status?: () => number; secret?: () => string } = {}) {
  const received: Received[] = [];
  const server: Server = createServer((req: IncomingMessage, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const headers = {
        id: req.headers['webhook-id'] as string,
        timestamp: req.headers['webhook-timestamp'] as string,
        signature: req.headers['webhook-signature'] as string,
      };
      received.push({
        id: headers.id,
        verified: options.secret ? verifyStandardWebhook(options.secret(), headers, body) : false,
        body,
      });
      res.statusCode = options.status?.() ?? 204;
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    received,
    url: `http://127.0.0.1:${port}/hooks`,
    stop: () => {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
    start: () => new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve)),
  };
}

async function createEndpoint(url: string, events: string[]): Promise<{ id: string; secret: string }> {
  const response = await stack.opsFetch('/ops/webhooks/endpoints', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ url, events }),
  });
  expect(response.status).toBe(201);
  return (await response.json()) as { id: string; secret: string };
}

async function deliveriesOf(endpointId: string): Promise<WebhookDeliveryView[]> {
  const response = await stack.opsFetch(`/ops/webhooks/deliveries?endpointId=${endpointId}&limit=200`);
  expect(response.status).toBe(200);
  return ((await response.json()) as { items: WebhookDeliveryView[] }).items;
}

async function eventually<T>(read: () => Promise<T>, until: (value: T) => boolean, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (until(value) || Date.now() > deadline) return value;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

const fundings = () =>
  createFundingRecord({ database: stack.database, cipher: createTokenCipher(stack.encryptionKey) });

function newFunding(): NewFunding {
  return newFundingRow('webhooks');
}

/** A funding stored and cancelled: PENDING → FAILED, one funding.failed event. */
async function failedFunding(): Promise<string> {
  const funding = newFunding();
  await fundings().insert(funding);
  expect(await fundings().cancel({ id: funding.id, createdAt: new Date() }, 'webhooks-test')).toBe(true);
  return funding.id;
}

const eventIdsOf = async (fundingId: string) =>
  (await stack.database.webhookEvent.findMany({ where: { fundingId } })).map((event) => event.id);

describe('webhook endpoints', () => {
  it('are registered with a Standard Webhooks secret shown once, read without it, and deleted', async () => {
    const endpoint = await createEndpoint('https://partner.example/hooks', ['funding.approved', 'payment.succeeded']);
    expect(endpoint.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    const read = await stack.opsFetch(`/ops/webhooks/endpoints/${endpoint.id}`);
    const body = (await read.json()) as Record<string, unknown>;
    expect(body).toMatchObject({
      id: endpoint.id,
      url: 'https://partner.example/hooks',
      events: ['funding.approved', 'payment.succeeded'],
    });
    expect(JSON.stringify(body)).not.toContain(endpoint.secret.slice(6));
    // Stored sealed, never in clear.
    const row = await stack.database.webhookEndpoint.findUniqueOrThrow({ where: { id: endpoint.id } });
    expect(Buffer.from(row.secretEncrypted).toString('latin1')).not.toContain(endpoint.secret.slice(6, 20));
    const refused = await stack.opsFetch('/ops/webhooks/endpoints', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ url: 'ftp://x', events: ['funding.paid'] }),
    });
    expect(refused.status).toBe(400);
    expect((await stack.opsFetch(`/ops/webhooks/endpoints/${endpoint.id}`, { method: 'DELETE' })).status).toBe(204);
    expect((await stack.opsFetch(`/ops/webhooks/endpoints/${endpoint.id}`)).status).toBe(404);
  });
});

describe('an endpoint’s address', () => {
  it('is shown whole only in the answer to its creation; read back, its user name, password, query values and fragment are masked, the rest as stored', async () => {
    const url =
      'https://hook-user:hook-pass@Hooks.Example.com:8443/in/%7Epartner?token=s3cret-token&kind=funding&kind=payment#s3cret-fragment';
    const created = await stack.opsFetch('/ops/webhooks/endpoints', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ url, events: ['funding.failed'] }),
    });
    expect(created.status).toBe(201);
    const endpoint = (await created.json()) as { id: string; url: string };
    // The admin who sent it gets it back as sent.
    expect(endpoint.url).toBe(url);
    const read = await stack.opsFetch(`/ops/webhooks/endpoints/${endpoint.id}`);
    expect(read.status).toBe(200);
    const body = (await read.json()) as { url: string };
    expect(body.url).toBe('https://***:***@Hooks.Example.com:8443/in/%7Epartner?token=…&kind=…&kind=…');
    for (const secret of ['hook-user', 'hook-pass', 's3cret-token', 's3cret-fragment', 'funding&'])
      expect(JSON.stringify(body), secret).not.toContain(secret);
    // Stored whole: deliveries go to the address as registered.
    expect((await stack.database.webhookEndpoint.findUniqueOrThrow({ where: { id: endpoint.id } })).url).toBe(url);
    // The document says so, where a client reads the endpoint.
    const document = buildOpenApiDocument() as {
      components: { schemas: Record<string, { properties: Record<string, { description?: string }> }> };
    };
    expect(document.components.schemas.WebhookEndpoint!.properties.url!.description).toMatch(/masked/);
    expect(document.components.schemas.WebhookEndpointCreated!.properties.url!.description).toMatch(/as sent/);
    await stack.opsFetch(`/ops/webhooks/endpoints/${endpoint.id}`, { method: 'DELETE' });
  });
});

describe('the outbox', () => {
  it('writes the event with the move that it reports: the body is the funding as the ops API shows it', async () => {
    const fundingId = await failedFunding();
    const events = await stack.database.webhookEvent.findMany({ where: { fundingId } });
    expect(events).toHaveLength(1);
    const body = webhookEventBodySchema.parse(JSON.parse(events[0]!.body));
    expect(body).toMatchObject({ id: events[0]!.id, type: 'funding.failed' });
    expect(body.data).toEqual(fundingView((await fundings().findWithEvents(fundingId))!));
  });

  it('a state change rolled back emits nothing', async () => {
    const funding = newFunding();
    await fundings().insert(funding);
    // The move's transaction fails after the funding row moved: on this funding's event insert.
    const trigger = `webhooks_test_${funding.id.replaceAll('-', '')}`;
    await stack.database.$executeRawUnsafe(
      `CREATE FUNCTION ${trigger}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'refused by the test'; END $$`,
    );
    await stack.database.$executeRawUnsafe(
      `CREATE TRIGGER ${trigger} AFTER INSERT ON webhook_event FOR EACH ROW WHEN (NEW.funding_id = '${funding.id}') EXECUTE FUNCTION ${trigger}()`,
    );
    try {
      await expect(fundings().cancel({ id: funding.id, createdAt: new Date() })).rejects.toThrow();
    } finally {
      await stack.database.$executeRawUnsafe(`DROP TRIGGER IF EXISTS ${trigger} ON webhook_event`);
      await stack.database.$executeRawUnsafe(`DROP FUNCTION ${trigger}()`);
    }
    expect((await fundings().get(funding.id)).status).toBe('PENDING');
    expect(await eventIdsOf(funding.id)).toEqual([]);
    const timeline = (await fundings().findWithEvents(funding.id))!.events.map((event) => event.status);
    expect(timeline).toEqual(['PENDING']);
  });
});

describe('delivery', () => {
  it('an endpoint down for a while receives every event, signed, once it is back (at least once, deduplicable by id)', async () => {
    let secret = '';
    const partner = await receiver({ secret: () => secret });
    const endpoint = await createEndpoint(partner.url, ['funding.failed']);
    secret = endpoint.secret;
    await partner.stop();
    const fundingIds = [await failedFunding(), await failedFunding(), await failedFunding()];
    const expected = (await Promise.all(fundingIds.map(eventIdsOf))).flat();
    expect(expected).toHaveLength(3);
    // Down: every attempt is refused and logged, and retried.
    const whileDown = await eventually(
      () => deliveriesOf(endpoint.id),
      (items) => items.filter((item) => expected.includes(item.eventId) && item.log.length >= 2).length === 3,
    );
    for (const item of whileDown.filter((each) => expected.includes(each.eventId))) {
      expect(item.status).toBe('PENDING');
      expect(item.log[0]).toMatchObject({ statusCode: null, error: 'ECONNREFUSED' });
    }
    await partner.start();
    const after = await eventually(
      () => deliveriesOf(endpoint.id),
      (items) => items.filter((item) => expected.includes(item.eventId) && item.status === 'SUCCEEDED').length === 3,
    );
    expect(after.filter((item) => expected.includes(item.eventId)).map((item) => item.status)).toEqual([
      'SUCCEEDED',
      'SUCCEEDED',
      'SUCCEEDED',
    ]);
    const got = partner.received.filter((request) => expected.includes(request.id));
    expect(new Set(got.map((request) => request.id))).toEqual(new Set(expected));
    expect(got.every((request) => request.verified)).toBe(true);
    for (const request of got) expect(webhookEventBodySchema.parse(JSON.parse(request.body)).id).toBe(request.id);
    await stack.opsFetch(`/ops/webhooks/endpoints/${endpoint.id}`, { method: 'DELETE' });
    await partner.stop();
  });

  it('a delivery that fails for the whole retry window is dead-lettered (FAILED) and redelivered by ops', async () => {
    let accepting = false;
    let secret = '';
    const partner = await receiver({ status: () => (accepting ? 200 : 500), secret: () => secret });
    const endpoint = await createEndpoint(partner.url, ['funding.failed']);
    secret = endpoint.secret;
    const [eventId] = await eventIdsOf(await failedFunding());
    const dead = await eventually(
      () => deliveriesOf(endpoint.id),
      (items) => items.some((item) => item.eventId === eventId && item.status === 'FAILED'),
    );
    const delivery = dead.find((item) => item.eventId === eventId)!;
    expect(delivery.status).toBe('FAILED');
    expect(delivery.nextAttemptAt).toBeNull();
    expect(delivery.log.length).toBeGreaterThanOrEqual(2);
    expect(delivery.log.every((attempt) => attempt.statusCode === 500 && attempt.error === 'HTTP 500')).toBe(true);
    const attemptsBefore = delivery.logged;
    // Stays dead: nothing more is sent.
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(partner.received.filter((request) => request.id === eventId)).toHaveLength(attemptsBefore);
    const failedList = await stack.opsFetch(`/ops/webhooks/deliveries?endpointId=${endpoint.id}&status=FAILED`);
    expect(((await failedList.json()) as { items: WebhookDeliveryView[] }).items.map((item) => item.id)).toContain(
      delivery.id,
    );

    accepting = true;
    expect(delivery).toMatchObject({ redeliveredBy: null, redeliveredAt: null });
    const redelivered = await stack.opsFetch(`/ops/webhooks/deliveries/${delivery.id}/redeliver`, {
      method: 'POST',
      headers: { 'x-ops-actor': 'Dana on call' },
    });
    expect(redelivered.status).toBe(202);
    // Who sent it again is stored on the delivery, beside the audit row (contract section 12).
    const due = (await redelivered.json()) as WebhookDeliveryView;
    expect(due.redeliveredBy).toBe('default (as Dana on call)');
    expect(Date.parse(due.redeliveredAt!)).toBeGreaterThan(Date.parse(delivery.updatedAt));
    const done = await eventually(
      () => deliveriesOf(endpoint.id),
      (items) => items.some((item) => item.id === delivery.id && item.status === 'SUCCEEDED'),
    );
    const succeeded = done.find((item) => item.id === delivery.id)!;
    expect(succeeded.status).toBe('SUCCEEDED');
    expect(succeeded.log.at(-1)).toMatchObject({ statusCode: 200, error: null });
    expect(succeeded.logged).toBe(attemptsBefore + 1);
    expect(succeeded).toMatchObject({ redeliveredBy: 'default (as Dana on call)', redeliveredAt: due.redeliveredAt });
    const last = partner.received.filter((request) => request.id === eventId).at(-1)!;
    expect(last.verified).toBe(true);
    // A delivery being attempted is not redelivered; an unknown one is not found.
    expect(
      (await stack.opsFetch(`/ops/webhooks/deliveries/${randomUUID()}/redeliver`, { method: 'POST' })).status,
    ).toBe(404);
    await stack.opsFetch(`/ops/webhooks/endpoints/${endpoint.id}`, { method: 'DELETE' });
    await partner.stop();
  });

  it('a delivery’s log, listed or read alone, holds its latest attempts and says how many it has had', async () => {
    // Found by a read: every list of deliveries (the ops API's 200 a page, the console's record pages) built each
    // delivery's whole log, and a redelivery keeps every earlier attempt: an endpoint down for a month, redelivered
    // each day, answered some 900 attempts a delivery, 180,000 rows in one page. Bounding Prisma's include with a
    // `take` bounded the answer only: it read every attempt and kept the latest in memory.
    const endpoint = await createEndpoint('https://partner.example/long-log', ['funding.failed']);
    const eventId = `evt_long_log_${randomUUID()}`;
    await stack.database.webhookEvent.create({ data: { id: eventId, type: 'funding.failed', body: '{}' } });
    const deliveryId = randomUUID();
    await stack.database.webhookDelivery.create({
      data: { id: deliveryId, eventId, endpointId: endpoint.id, status: 'FAILED', attempts: 30 },
    });
    const logged = 150;
    await stack.database.webhookAttempt.createMany({
      data: Array.from({ length: logged }, (_, index) => ({
        deliveryId,
        at: new Date(Date.now() - (logged - index) * 60_000),
        statusCode: 500,
        error: `HTTP 500 (attempt ${index + 1})`,
        durationMs: 12,
      })),
    });
    // Beside it, a delivery with more attempts than are counted, and one never tried.
    const [counted, untried] = [randomUUID(), randomUUID()];
    for (const id of [counted, untried]) {
      const otherEvent = `evt_long_log_${randomUUID()}`;
      await stack.database.webhookEvent.create({ data: { id: otherEvent, type: 'funding.failed', body: '{}' } });
      await stack.database.webhookDelivery.create({
        data: { id, eventId: otherEvent, endpointId: endpoint.id, status: 'FAILED', attempts: 30 },
      });
    }
    await stack.database.webhookAttempt.createMany({
      data: Array.from({ length: LOGGED_COUNT_LIMIT + 5 }, () => ({
        deliveryId: counted,
        statusCode: 503,
        durationMs: 3,
      })),
    });
    const recording = recordingDatabase(testDatabaseUrl());
    try {
      const store = createWebhookStore({
        database: recording.database,
        cipher: createTokenCipher(stack.encryptionKey),
      });
      const page = await store.listDeliveries({ endpointId: endpoint.id, limit: 200 });
      expect(
        page.kind === 'page' && Object.fromEntries(page.items.map((item) => [item.id, [item.logged, item.log.length]])),
      ).toEqual({
        [deliveryId]: [logged, LISTED_LOG_ATTEMPTS],
        [counted]: [LOGGED_COUNT_LIMIT, LISTED_LOG_ATTEMPTS],
        [untried]: [0, 0],
      });
      // The attempts read are the listed deliveries' own, the latest of each and a count that stops, through the
      // (delivery_id, id) index, in one statement: before, Prisma read every attempt of the page's deliveries, and its
      // count grouped the whole attempt table.
      const attemptReads = recording.statements.filter(({ text }) => /\bwebhook_attempt\b/.test(text));
      expect(attemptReads).toHaveLength(1);
      expect(attemptReads[0]!.text.match(/WHERE delivery_id = d\.id\b[^)]*\bLIMIT\b/g)).toHaveLength(2);
    } finally {
      await recording.close();
    }
    const listed = (await deliveriesOf(endpoint.id)).find((item) => item.id === deliveryId)!;
    expect(listed.logged).toBe(logged);
    expect(listed.log.map((attempt) => attempt.error)).toEqual(
      Array.from(
        { length: LISTED_LOG_ATTEMPTS },
        (_, index) => `HTTP 500 (attempt ${logged - LISTED_LOG_ATTEMPTS + index + 1})`,
      ),
    );
    const alone = await stack.opsFetch(`/ops/webhooks/deliveries/${deliveryId}/redeliver`, { method: 'POST' });
    expect(alone.status).toBe(202);
    const redelivered = (await alone.json()) as WebhookDeliveryView;
    expect(redelivered.logged).toBe(logged);
    expect(redelivered.log).toHaveLength(SHOWN_LOG_ATTEMPTS);
    expect(redelivered.log.at(-1)?.error).toBe(`HTTP 500 (attempt ${logged})`);
    await stack.opsFetch(`/ops/webhooks/endpoints/${endpoint.id}`, { method: 'DELETE' });
  });
});
