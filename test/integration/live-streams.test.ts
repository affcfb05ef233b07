// The console's live regions (Server-Sent Events, api/console/live-region.ts) over real HTTP,
// against a client that stops reading (a frozen tab, a suspended laptop whose connection stays
// open): the API holds at most a socket buffer and a push for it however many pushes come, cuts it
// off once it has taken nothing for the stall bound, and its slot is free again; a client that reads
// again gets the state as it is then. Pushes come every few milliseconds here (the stack's
// `consoleLive`), and Home lists forty failing webhook endpoints (a push of about 15 KB), so the
// loopback sockets' buffers (about 4 MB) fill in seconds rather than hours. What the API holds is
// its own count (walletflow_console_live_buffered_bytes: the open streams' res.writableLength).
import { randomBytes, randomUUID } from 'node:crypto';
import http, { type ClientRequest, type IncomingMessage } from 'node:http';
import { getDefaultHighWaterMark } from 'node:stream';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { opensByItself } from '../../api/console/console-auth.ts';
import { consoleRoutes } from '../../api/console/console-router.ts';
import { consoleSessionWithKey } from '../support/console-key-sign-in.ts';
import { startPartnerStack, type PartnerStack } from '../support/partner-stack.ts';
import { testDatabaseUrl } from '../support/test-database.ts';
import { waitFor } from '../support/wait-for.ts';

const watcherKey = randomBytes(32).toString('base64url');
/** How long a client that takes nothing is kept, here: long enough for a test to read again first. */
const STALL_MS = 5000;
/**
 * What the API may hold for one paused stream: the socket's buffer mark (64 KiB in Node 24) and
 * the push that filled it, with room for a push that grew. Without back-pressure the pushes pile up
 * behind the full socket for the stream's whole life (about 1 MB over its 10 minutes at Home's pace).
 */
const heldAtMost = (pushBytes: number) => getDefaultHighWaterMark(false) + 2 * pushBytes;

let stack: PartnerStack;

beforeAll(async () => {
  stack = await startPartnerStack({
    extraOpsKeys: [`watcher:read:${watcherKey}`],
    consoleLive: { pushEveryMs: 5, stallMs: STALL_MS },
  });
  for (let index = 0; index < 40; index += 1)
    await failingEndpoint(`hooks-${index}.example.com/${'in/'.repeat(60)}${index}`);
}, 120_000);
afterAll(() => stack?.close());

/** Signs in with an ops key as the sign-in page's form does; answers the session cookie. */
const signIn = (key: string): Promise<string> => consoleSessionWithKey(stack.apiBase, key);

/**
 * A webhook endpoint at `https://${where}` with a delivery: a dead letter (Home lists it among the failing ones), or
 * one still pending, which `failsOnCommit()` makes a dead letter: written at once in a transaction of its own, shown
 * once the commit it answers runs.
 */
async function failingEndpoint(
  where: string,
  status: 'FAILED' | 'PENDING' = 'FAILED',
): Promise<{ failsOnCommit(): Promise<() => Promise<void>> }> {
  const created = await stack.opsFetch('/ops/webhooks/endpoints', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ url: `https://${where}`, events: ['funding.failed'] }),
  });
  expect(created.status).toBe(201);
  const endpointId = ((await created.json()) as { id: string }).id;
  const eventId = `evt_${randomUUID()}`;
  const deliveryId = randomUUID();
  await stack.database.webhookEvent.create({ data: { id: eventId, type: 'funding.failed', body: '{}' } });
  await stack.database.webhookDelivery.create({
    data: { id: deliveryId, eventId, endpointId, status, attempts: status === 'FAILED' ? 5 : 0 },
  });
  return {
    async failsOnCommit() {
      const client = new pg.Client({ connectionString: testDatabaseUrl() });
      await client.connect();
      try {
        await client.query({ text: 'BEGIN' });
        await client.query({
          text: `UPDATE webhook_delivery SET status = 'FAILED', attempts = 5 WHERE id = $1::uuid`,
          values: [deliveryId],
        });
      } catch (error) {
        await client.end();
        throw error;
      }
      return async () => {
        try {
          await client.query({ text: 'COMMIT' });
        } finally {
          await client.end();
        }
      };
    },
  };
}

interface PausedStream {
  request: ClientRequest;
  response: IncomingMessage;
  /** What came before the pause: the retry line and the first push. */
  firstPush: string;
  /** Reads on: resolves with all that came once `done` holds for it (or the stream ended). */
  readUntil(done: (text: string) => boolean): Promise<{ text: string; ended: boolean }>;
}

/**
 * Opens Home's stream as the page's EventSource does, reads its first push, then stops reading (the sockets' buffers
 * fill).
 */
function openPaused(cookie: string): Promise<PausedStream> {
  return new Promise((resolve, reject) => {
    const request = http.get(`${stack.apiBase}/console/live/home`, {
      headers: { cookie, accept: 'text/event-stream' },
    });
    request.on('error', reject);
    request.on('response', (response) => {
      if (response.statusCode !== 200) reject(new Error(`the stream answered ${response.statusCode}`));
      response.setEncoding('utf8');
      let text = '';
      const onData = (chunk: string) => {
        text += chunk;
        if (!/\ndata: [^]*\n\n/.test(text)) return;
        response.pause();
        response.off('data', onData);
        const firstPush = text;
        resolve({
          request,
          response,
          firstPush,
          readUntil: (done) =>
            new Promise((finish, fail) => {
              let more = '';
              /** The end of what came before the last chunk: `done` is asked of it and the chunk, not of all of it. */
              let tail = '';
              const settle = (ended: boolean) => {
                response.off('data', onMore);
                response.pause();
                finish({ text: more, ended });
              };
              const onMore = (chunk: string) => {
                more += chunk;
                const recent = tail + chunk;
                tail = recent.slice(-4096);
                if (done(recent)) settle(false);
              };
              response.on('data', onMore);
              response.once('end', () => settle(true));
              response.once('error', fail);
              response.resume();
            }),
        });
      };
      response.on('data', onData);
    });
  });
}

/** A series of the API's registry, that metric alone collected (not every series rendered as text): a quick look. */
const apiMetric = async (name: string, labels: Record<string, string> = {}) =>
  (await stack.apiMetrics.registry.getSingleMetric(name)?.get())?.values.find((sample) =>
    Object.entries(labels).every(([label, value]) => String(sample.labels[label]) === value),
  )?.value ?? 0;
const held = () => apiMetric('walletflow_console_live_buffered_bytes');
const openStreams = () => apiMetric('walletflow_console_live_streams');
const stalledStreams = () => apiMetric('walletflow_console_live_streams_ended_total', { outcome: 'stalled' });

describe('a console live stream whose client stops reading', () => {
  it('holds at most a socket buffer and a push in the API while pushes keep coming; past the stall bound it is cut off, its slot free again', async () => {
    const session = await signIn(watcherKey);
    const streamsBefore = await openStreams();
    const stalledBefore = await stalledStreams();
    const paused = await openPaused(session);
    try {
      expect(paused.firstPush).toContain('hooks-39.example.com');
      const bound = heldAtMost(Buffer.byteLength(paused.firstPush));
      // Pushes come every 5 ms; the client reads none. Until the API cuts it off, what it holds for
      // it stays under the bound: the socket's buffer and the push that filled it.
      let most = 0;
      while ((await stalledStreams()) === stalledBefore) {
        const now = await held();
        most = Math.max(most, now);
        expect(now, `bytes the API holds for a paused stream (the bound: ${bound})`).toBeLessThan(bound);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      // The sockets' own buffers did fill (the API held bytes past them) before it was cut off.
      expect(most, 'the paused stream filled its sockets').toBeGreaterThan(0);
      // Cut off: its slot and all it held are let go; a new stream of the same session opens and is pushed to.
      await waitFor(
        'the stalled stream’s slot is free',
        async () => ((await openStreams()) === streamsBefore ? true : undefined),
        10_000,
      );
      expect(await held()).toBe(0);
      const again = await openPaused(session);
      expect(again.firstPush).toContain('Treasury');
      again.request.destroy();
    } finally {
      paused.request.destroy();
    }
  }, 120_000);

  it('that reads again gets the state as it is then, and the stream goes on', async () => {
    const session = await signIn(watcherKey);
    const stalledBefore = await stalledStreams();
    // The streams of the test before are destroyed by their client; the API sees each close a moment later: counted
    // from when they have (a count taken while one was still open made this one's look closed).
    await waitFor(
      'the earlier tests’ streams are closed',
      async () => ((await openStreams()) === 0 ? true : undefined),
      10_000,
    );
    const openBefore = await openStreams();
    // An endpoint whose delivery is still pending: not among Home's failing ones yet.
    const host = `hooks-${randomUUID().slice(0, 8)}.example.com`;
    const endpoint = await failingEndpoint(`${host}/in`, 'PENDING');
    const paused = await openPaused(session);
    // Home's state is to change while the stream is paused: the delivery's failure is written now, in a transaction
    // whose commit is all that is left to do once the sockets are full. Between those two moments the stall bound's
    // clock runs; before, the registry's every series rendered as text every 150 ms and an update sent after it took
    // the 5 s on a loaded machine (CI, three times), and the API cut the stream before the test read again.
    const commit = await endpoint.failsOnCommit();
    let committed = false;
    try {
      expect(paused.firstPush).not.toContain(host);
      // Its sockets are full: the API holds bytes for it (and the stall bound's clock runs).
      await waitFor(
        'the paused stream’s sockets are full',
        async () => ((await held()) > 0 ? true : undefined),
        60_000,
        () => '',
        10,
      );
      // It reads again at once (the stall bound's clock stops as soon as it takes bytes), and meanwhile Home's state
      // changes: that endpoint's delivery fails. What the sockets held is from before; past it, the state now. Reading
      // only once the commit was through left the stall bound running for as long as the commit took: on a loaded
      // machine longer than its 5 s, and the API cut the stream (twice in fresh-clone runs of the suite).
      const reading = paused.readUntil((more) => more.includes(host));
      // Heard below; a stream cut meanwhile is not an unhandled rejection while the commit goes.
      reading.catch(() => undefined);
      await commit();
      committed = true;
      const { text, ended } = await reading;
      // And it goes on reading (what comes is dropped): paused again, its sockets would fill again, and the stall
      // bound's clock would run while the figures below are read (on a loaded machine the API cut it meanwhile).
      paused.response.resume();
      expect(ended, 'the stream ended before it showed the state now').toBe(false);
      expect(text).not.toContain('event: end');
      expect(await stalledStreams()).toBe(stalledBefore);
      expect(await openStreams()).toBe(openBefore + 1);
    } finally {
      if (!committed) await commit().catch(() => undefined);
      paused.request.destroy();
    }
  }, 120_000);
});

describe('a HEAD of a console stream', () => {
  it('opens none: 405 with Allow: GET at every stream route the console declares, no slot taken, the person’s own stream left alone', async () => {
    const session = await signIn(watcherKey);
    await waitFor(
      'the earlier tests’ streams are closed',
      async () => ((await openStreams()) === 0 ? true : undefined),
      10_000,
    );
    const paused = await openPaused(session);
    try {
      const streams = consoleRoutes.filter((spec) => spec.method === 'get' && opensByItself(spec));
      expect(streams.map((spec) => spec.operationId)).toEqual(
        expect.arrayContaining(['consoleHomeLive', 'consoleBatchLive', 'consoleSettlementLive']),
      );
      for (const spec of streams) {
        const path = spec.path.replace('{date}', '2026-12-01').replace('{batchId}', randomUUID());
        // Before: 200 and a stream that held a slot and read the database at every push for ten minutes, its writes
        // dropped by Node, and that ended the person's oldest stream past their bound.
        const answer = await fetch(`${stack.apiBase}${path}`, {
          method: 'HEAD',
          headers: { cookie: session, accept: 'text/event-stream' },
        });
        expect(answer.status, path).toBe(405);
        expect(answer.headers.get('allow'), path).toBe('GET');
        expect(await openStreams(), path).toBe(1);
      }
      // The person's real stream goes on.
      const { text, ended } = await paused.readUntil((more) => more.includes('data: '));
      expect(ended).toBe(false);
      expect(text).not.toContain('event: end');
    } finally {
      paused.request.destroy();
    }
  }, 120_000);
});
