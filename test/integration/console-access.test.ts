// The console's sessions over real HTTP, on two API processes sharing one database (two
// createApp instances, as two copies of walletflow behind a load balancer, or one walletflow
// before and after a restart with other OPS_API_KEYS): a session is kept alive only by what a
// person does (a live page's streams are not), a stream on an ended session tells the browser to
// stop, a session signed in with an ops key rests on that key on every request, every page and
// stream needs its scope (Home included, its webhook addresses masked), refused console writes and
// every sign-in are audited, a session's live streams are bounded, and sign-in attempts and wrong
// keys are limited across processes (IPv6 by the /64). The clock is the test's: idle time passes
// without waiting for it.
import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { consoleRoutes } from '../../api/console/console-router.ts';
import { expressPath } from '../../api/http/route-registration.ts';
import { createLogger } from '../../lib/logger.ts';
import { startPartnerApi, type PartnerApi } from '../support/partner-api.ts';
import { startPartnerStack, type PartnerStack } from '../support/partner-stack.ts';
import { testDatabaseUrl } from '../support/test-database.ts';
import { waitFor } from '../support/wait-for.ts';

const MINUTE = 60_000;
const newKey = () => randomBytes(32).toString('base64url');
const keys = { auditor: newKey(), payer: newKey(), lead: newKey(), rotated: newKey(), rotatedAgain: newKey(), steady: newKey() };
// Two processes of one deployment: one fingerprint key, one clock, one count of attempts.
const encryptionKey = randomBytes(32);
const attemptCountScope = `console-access-${randomBytes(4).toString('hex')}`;
let skewMs = 0;
const now = () => Date.now() + skewMs;

/** The first process, with every key. */
let stack: PartnerStack;
/** The second, started later without `auditor`, with `rotated` under a new secret and `lead` narrowed to fund. */
let restarted: PartnerApi;

beforeAll(async () => {
  stack = await startPartnerStack({
    encryptionKey,
    trustedProxies: ['127.0.0.1'],
    hardening: { now, attemptCountScope },
    extraOpsKeys: [`auditor:read:${keys.auditor}`, `payer:pay:${keys.payer}`, `lead:read+fund:${keys.lead}`, `rotated:read:${keys.rotated}`, `steady:read:${keys.steady}`],
  });
  restarted = await startPartnerApi({
    databaseUrl: testDatabaseUrl(),
    temporalAddress: inject('temporalAddress'),
    namespace: inject('temporalNamespace'),
    taskQueuePrefix: 'walletflow-test',
    logger: createLogger({ level: 'silent' }),
    encryptionKey,
    trustedProxies: ['127.0.0.1'],
    hardening: { now, attemptCountScope },
    extraOpsKeys: [`payer:pay:${keys.payer}`, `lead:fund:${keys.lead}`, `rotated:read:${keys.rotatedAgain}`, `steady:read:${keys.steady}`],
  });
}, 120_000);

afterAll(async () => {
  await restarted?.close();
  await stack?.close();
});

/** A client address (X-Forwarded-For, trusted from loopback): each test its own, so their sign-ins do not count against each other. */
const from = (address: string) => ({ 'x-forwarded-for': address });
let addresses = 0;
const nextAddress = () => `198.51.100.${(addresses += 1)}`;

/** Signs in with an ops key as the sign-in page's form does; answers the session cookie. */
async function signIn(base: string, key: string, address = nextAddress()): Promise<string> {
  const form = await fetch(`${base}/console/sign-in`, { headers: from(address) });
  await form.arrayBuffer();
  const pre = form.headers.getSetCookie().find((cookie) => cookie.startsWith('walletflow_console_pre='))!.split(';')[0]!;
  const signedIn = await fetch(`${base}/console/sign-in`, {
    method: 'POST',
    redirect: 'manual',
    headers: { cookie: pre, 'content-type': 'application/x-www-form-urlencoded', origin: base, ...from(address) },
    body: `_csrf=${pre.split('=')[1]}&return=%2Fconsole&key=${encodeURIComponent(key)}`,
  });
  await signedIn.arrayBuffer();
  expect(signedIn.status).toBe(200);
  return signedIn.headers.getSetCookie().find((cookie) => cookie.startsWith('walletflow_console='))!.split(';')[0]!;
}

const get = (base: string, path: string, cookie?: string, headers: Record<string, string> = {}) =>
  fetch(`${base}${path}`, { redirect: 'manual', headers: { ...(cookie ? { cookie } : {}), ...headers } });

/** The answer to a page asked for without a live session: to the sign-in page. */
async function expectSignInAsked(response: Response): Promise<void> {
  await response.arrayBuffer();
  expect(response.status).toBe(303);
  expect(response.headers.get('location')).toMatch(/^\/console\/sign-in\?return=/);
}

/** The CSRF token of a session, as its pages carry it. */
async function csrfOf(base: string, cookie: string): Promise<string> {
  const page = await (await get(base, '/console/search', cookie)).text();
  return /name="_csrf" value="([^"]+)"/.exec(page)![1]!;
}

/** A live region's stream, opened as the page's EventSource opens it, read as it comes. */
class LiveStream {
  text = '';
  private readonly reader: ReadableStreamDefaultReader<Uint8Array>;
  private readonly decoder = new TextDecoder();
  private ended = false;

  constructor(readonly response: Response) {
    this.reader = response.body!.getReader();
  }

  static async open(base: string, path: string, cookie: string | undefined): Promise<LiveStream> {
    return new LiveStream(await fetch(`${base}${path}`, { headers: { accept: 'text/event-stream', ...(cookie ? { cookie } : {}) } }));
  }

  /** Reads until `done` holds for what came so far, the stream ends, or `withinMs` passed; answers what came. */
  async until(done: (text: string) => boolean, withinMs = 20_000): Promise<string> {
    const deadline = Date.now() + withinMs;
    while (!done(this.text) && !this.ended) {
      const left = deadline - Date.now();
      if (left <= 0) break;
      let timer: NodeJS.Timeout | undefined;
      const next = await Promise.race([this.reader.read(), new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), left)))]);
      clearTimeout(timer);
      if (next === 'late') break;
      if (next.done) this.ended = true;
      else this.text += this.decoder.decode(next.value, { stream: true });
    }
    return this.text;
  }

  get done(): boolean {
    return this.ended;
  }

  async close(): Promise<void> {
    await this.reader.cancel().catch(() => undefined);
  }
}

const firstPush = (text: string) => text.includes('\ndata: ');
const endEvent = (text: string) => text.includes('event: end');

describe('a console session is kept alive only by what a person does', () => {
  it('a live page’s streams never count as use: a session left open on Home ends after the idle time, reconnects and all', async () => {
    skewMs = 0;
    const watched = await signIn(stack.apiBase, keys.auditor);
    const used = await signIn(stack.apiBase, keys.auditor);
    const home = await get(stack.apiBase, '/console', watched);
    expect(home.status).toBe(200);
    const script = /<script src="([^"]+)"/.exec(await home.text())![1]!;
    // Ten minutes on: Home's stream reached its lifetime and the browser opened it again; its
    // script and a batch's stream were fetched. Nobody did anything.
    skewMs += 10 * MINUTE;
    const reconnected = await LiveStream.open(stack.apiBase, '/console/live/home', watched);
    expect(reconnected.response.status).toBe(200);
    expect(await reconnected.until(firstPush)).toContain('Treasury');
    await reconnected.close();
    expect((await get(stack.apiBase, script, watched)).status).toBe(200);
    const batchStream = await get(stack.apiBase, `/console/live/batches/${randomUUID()}`, watched, { accept: 'text/event-stream' });
    await batchStream.arrayBuffer();
    // The other person opened a page then: that is use.
    expect((await get(stack.apiBase, '/console/review', used)).status).toBe(200);
    // Sixteen minutes after the first one last did anything, six after the second did.
    skewMs += 6 * MINUTE;
    await expectSignInAsked(await get(stack.apiBase, '/console', watched));
    expect((await get(stack.apiBase, '/console', used)).status).toBe(200);
  });

  it('a stream on an ended session tells the browser to stop (an end event saying so), whichever stream, whichever way it ended', async () => {
    skewMs = 0;
    const idle = await signIn(stack.apiBase, keys.auditor);
    const open = await LiveStream.open(stack.apiBase, '/console/live/home', idle);
    await open.until(firstPush);
    skewMs += 16 * MINUTE;
    // The open stream notices at its next push and ends, saying why.
    expect(await open.until(endEvent)).toContain('event: end\ndata: signed-out');
    await open.close();
    // A stream opened on the ended session, on a forged cookie, or on none: told the same at once.
    for (const cookie of [idle, `walletflow_console=${randomBytes(32).toString('base64url')}`, undefined]) {
      for (const path of ['/console/live/home', `/console/live/batches/${randomUUID()}`]) {
        const stream = await LiveStream.open(stack.apiBase, path, cookie);
        expect(stream.response.status, path).toBe(200);
        expect(stream.response.headers.get('content-type'), path).toMatch(/^text\/event-stream/);
        expect(await stream.until(endEvent), path).toContain('event: end\ndata: signed-out');
        await stream.close();
      }
    }
  });
});

describe('a session signed in with an ops key rests on that key', () => {
  it('is checked against the keys walletflow has now, on every request: gone or given another secret, it is refused; narrowed, it acts with less', async () => {
    skewMs = 0;
    const sessions = {
      auditor: await signIn(stack.apiBase, keys.auditor),
      rotated: await signIn(stack.apiBase, keys.rotated),
      lead: await signIn(stack.apiBase, keys.lead),
      steady: await signIn(stack.apiBase, keys.steady),
    };
    for (const [name, cookie] of Object.entries(sessions)) {
      const audit = await get(stack.apiBase, '/console/audit', cookie);
      await audit.arrayBuffer();
      expect(audit.status, name).toBe(200);
    }
    // walletflow without auditor's key, and with rotated's under a new secret: their sessions are over.
    for (const cookie of [sessions.auditor, sessions.rotated]) {
      await expectSignInAsked(await get(restarted.apiBase, '/console/audit', cookie));
      await expectSignInAsked(await get(restarted.apiBase, '/console', cookie));
      const signOut = await fetch(`${restarted.apiBase}/console/sign-out`, { method: 'POST', headers: { cookie, 'content-type': 'application/x-www-form-urlencoded', origin: restarted.apiBase }, body: '' });
      await signOut.arrayBuffer();
      expect(signOut.status).toBe(401);
      const stream = await LiveStream.open(restarted.apiBase, '/console/live/home', cookie);
      expect(await stream.until(endEvent)).toContain('event: end\ndata: signed-out');
      await stream.close();
    }
    // lead's key now has fund only: the session keeps the narrower scopes, never more than its sign-in's.
    const narrowed = await get(restarted.apiBase, '/console/audit', sessions.lead);
    expect(narrowed.status).toBe(403);
    expect(await narrowed.text()).not.toContain('<table');
    // An unchanged key's session goes on, on either process.
    expect((await get(restarted.apiBase, '/console/audit', sessions.steady)).status).toBe(200);
    expect((await get(stack.apiBase, '/console/audit', sessions.steady)).status).toBe(200);
  });
});

describe('every console page and stream needs its scope', () => {
  it('Home and its stream need read, as every other page does: a key with only pay sees no figure, batch or webhook', async () => {
    const payer = await signIn(stack.apiBase, keys.payer);
    const home = await get(stack.apiBase, '/console', payer);
    expect(home.status).toBe(403);
    const text = await home.text();
    for (const shown of ['Treasury', 'Fundings today', 'Batches awaiting approval', 'Webhooks']) expect(text).not.toContain(shown);
    const stream = await get(stack.apiBase, '/console/live/home', payer, { accept: 'text/event-stream' });
    expect(stream.status).toBe(403);
    expect(await stream.text()).not.toContain('Treasury');
    // Every page and stream of the console, whatever its parameters: none answers a person without read.
    const pages = consoleRoutes.filter((route) => route.method === 'get' && !/sign-in|oidc/.test(route.path));
    expect(pages.length).toBeGreaterThan(12);
    for (const route of pages) {
      const path = expressPath(route.path).replace(/:account/, 'TREASURY').replace(/:[A-Za-z]+/g, randomUUID());
      const answer = await get(stack.apiBase, path, payer, route.path.includes('/live/') ? { accept: 'text/event-stream' } : {});
      await answer.arrayBuffer();
      expect(answer.status, `GET ${path}`).toBe(403);
    }
  });

  it('Home shows a failing webhook endpoint’s address masked, as the webhooks page does', async () => {
    const url = 'https://hook-user:hook-pass@hooks.example.com/in?token=s3cret-token&kind=funding#s3cret-fragment';
    const created = await stack.opsFetch('/ops/webhooks/endpoints', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ url, events: ['funding.failed'] }) });
    expect(created.status).toBe(201);
    const endpointId = ((await created.json()) as { id: string }).id;
    const eventId = `evt_${randomUUID()}`;
    await stack.database.webhookEvent.create({ data: { id: eventId, type: 'funding.failed', body: '{}' } });
    await stack.database.webhookDelivery.create({ data: { id: randomUUID(), eventId, endpointId, status: 'FAILED', attempts: 5 } });
    const reader = await signIn(stack.apiBase, keys.auditor);
    for (const path of ['/console', '/console/webhooks', `/console/webhooks/${endpointId}`]) {
      const page = await (await get(stack.apiBase, path, reader)).text();
      expect(page, path).toContain('hooks.example.com/in?token=');
      for (const secret of ['hook-user', 'hook-pass', 's3cret-token', 's3cret-fragment']) expect(page, `${path}: ${secret}`).not.toContain(secret);
    }
  });
});

describe('the console’s audit', () => {
  it('records writes refused for a missing session or a bad form token, in any spelling, and ignores X-Ops-Actor', async () => {
    const since = new Date();
    const fundingId = randomUUID();
    const form = { 'content-type': 'application/x-www-form-urlencoded', origin: stack.apiBase, 'x-ops-actor': 'Someone Else' };
    const noSession = await fetch(`${stack.apiBase}/console/fundings/${fundingId}/cancel`, { method: 'POST', redirect: 'manual', headers: form, body: '' });
    expect(noSession.status).toBe(401);
    const lead = await signIn(stack.apiBase, keys.lead);
    const badToken = await fetch(`${stack.apiBase}/console/fundings/${fundingId}/cancel`, { method: 'POST', redirect: 'manual', headers: { ...form, cookie: lead }, body: '_csrf=not-the-form-token' });
    expect(badToken.status).toBe(403);
    const otherSpelling = await fetch(`${stack.apiBase}/CONSOLE/fundings/${fundingId}/cancel`, { method: 'POST', redirect: 'manual', headers: { ...form, cookie: lead }, body: '' });
    expect(otherSpelling.status).toBe(404);
    const done = await fetch(`${stack.apiBase}/console/fundings/${fundingId}/cancel`, { method: 'POST', redirect: 'manual', headers: { ...form, cookie: lead }, body: `_csrf=${await csrfOf(stack.apiBase, lead)}` });
    expect(done.status).toBe(404);
    const rows = await waitFor(
      'the four writes audited',
      async () => {
        const found = await stack.database.opsAction.findMany({ where: { at: { gte: since }, path: { contains: fundingId } }, orderBy: { id: 'asc' } });
        return found.length >= 4 ? found : undefined;
      },
      15_000,
    );
    expect(rows.map((row) => ({ method: row.method, path: row.path, status: row.status, keyName: row.keyName, actor: row.actor, channel: row.channel }))).toEqual([
      { method: 'POST', path: `/console/fundings/${fundingId}/cancel`, status: 401, keyName: null, actor: null, channel: 'console' },
      { method: 'POST', path: `/console/fundings/${fundingId}/cancel`, status: 403, keyName: 'lead', actor: null, channel: 'console' },
      { method: 'POST', path: `/CONSOLE/fundings/${fundingId}/cancel`, status: 404, keyName: null, actor: null, channel: 'console' },
      { method: 'POST', path: `/console/fundings/${fundingId}/cancel`, status: 404, keyName: 'lead', actor: null, channel: 'console' },
    ]);
  });

  it('records every sign-in with a key under the key’s name, and a wrong key without one', async () => {
    const since = new Date();
    const address = nextAddress();
    const form = await fetch(`${stack.apiBase}/console/sign-in`, { headers: from(address) });
    await form.arrayBuffer();
    const pre = form.headers.getSetCookie().find((cookie) => cookie.startsWith('walletflow_console_pre='))!.split(';')[0]!;
    const wrong = await fetch(`${stack.apiBase}/console/sign-in`, {
      method: 'POST',
      headers: { cookie: pre, 'content-type': 'application/x-www-form-urlencoded', origin: stack.apiBase, ...from(address) },
      body: `_csrf=${pre.split('=')[1]}&key=${newKey()}`,
    });
    await wrong.arrayBuffer();
    expect(wrong.status).toBe(401);
    await signIn(stack.apiBase, keys.steady, address);
    const rows = await waitFor(
      'both sign-ins audited',
      async () => {
        const found = await stack.database.opsAction.findMany({ where: { at: { gte: since }, path: '/console/sign-in', method: 'POST' }, orderBy: { id: 'asc' } });
        return found.length >= 2 ? found : undefined;
      },
      15_000,
    );
    expect(rows.map((row) => ({ status: row.status, keyName: row.keyName, channel: row.channel }))).toEqual([
      { status: 401, keyName: null, channel: 'console' },
      { status: 200, keyName: 'steady', channel: 'console' },
    ]);
  });
});

describe('live streams are bounded per session', () => {
  it('a session opening more streams than its bound ends its oldest, saying why; another session’s streams go on', async () => {
    skewMs = 0;
    const session = await signIn(stack.apiBase, keys.auditor);
    const other = await LiveStream.open(stack.apiBase, '/console/live/home', await signIn(stack.apiBase, keys.steady));
    const streams: LiveStream[] = [];
    try {
      expect(await other.until(firstPush)).toContain('Treasury');
      for (let index = 0; index < 5; index += 1) {
        const stream = await LiveStream.open(stack.apiBase, '/console/live/home', session);
        expect(stream.response.status).toBe(200);
        await stream.until(firstPush);
        streams.push(stream);
      }
      expect(await streams[0]!.until(endEvent)).toContain('event: end\ndata: replaced');
      await streams[0]!.until(() => false, 5000);
      expect(streams[0]!.done).toBe(true);
      // The four newest still get their pushes, and so does the other session's.
      for (const stream of [...streams.slice(1), other]) {
        const before = stream.text.length;
        expect(await stream.until((text) => text.length > before && firstPush(text.slice(before)))).not.toContain('event: end');
      }
    } finally {
      await Promise.all([...streams, other].map((stream) => stream.close()));
    }
  });
});

describe('sign-in attempts and wrong keys are limited across API processes', () => {
  const processes = () => [stack.apiBase, restarted.apiBase];

  it('counts wrong keys once for both processes, at the ops API and the console’s sign-in alike, IPv6 by the /64; the right key is never locked out', async () => {
    skewMs = 0;
    const guess = async (base: string, address: string) => {
      const response = await fetch(`${base}/ops/fundings`, { headers: { authorization: `Bearer ${newKey()}`, ...from(address) } });
      await response.arrayBuffer();
      return response;
    };
    for (const [first, rest] of [
      ['203.0.113.50', '203.0.113.50'],
      ['2001:db8:77:1::1', '2001:db8:77:1:ffff:ffff:ffff:ffff'],
    ] as const) {
      for (let index = 0; index < 20; index += 1) {
        const address = first.includes(':') ? `2001:db8:77:1::${(index + 1).toString(16)}` : first;
        expect((await guess(processes()[index % 2]!, address)).status, `guess ${index + 1} from ${address}`).toBe(401);
      }
      for (const base of processes()) {
        const limited = await guess(base, rest);
        expect(limited.status).toBe(429);
        expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
        // The console's sign-in with a wrong key is one more guess from the same address: refused too.
        const form = await fetch(`${base}/console/sign-in`, { headers: from(rest) });
        await form.arrayBuffer();
        const pre = form.headers.getSetCookie().find((cookie) => cookie.startsWith('walletflow_console_pre='))!.split(';')[0]!;
        const signIn = await fetch(`${base}/console/sign-in`, {
          method: 'POST',
          headers: { cookie: pre, 'content-type': 'application/x-www-form-urlencoded', origin: base, ...from(rest) },
          body: `_csrf=${pre.split('=')[1]}&key=${newKey()}`,
        });
        expect(signIn.status).toBe(429);
        expect(await signIn.text()).toContain('Too many wrong keys');
        // The right key still works from there.
        const right = await fetch(`${base}/ops/fundings/${randomUUID()}`, { headers: { authorization: `Bearer ${keys.steady}`, ...from(rest) } });
        await right.arrayBuffer();
        expect(right.status).toBe(404);
      }
    }
    // Another /64 is another subscriber.
    expect((await guess(stack.apiBase, '2001:db8:77:2::1')).status).toBe(401);
  });

  it('counts console sign-in attempts once for both processes', async () => {
    skewMs = 0;
    for (const [address, later] of [
      ['203.0.113.60', '203.0.113.60'],
      ['2001:db8:78:1::1', '2001:db8:78:1::abcd'],
    ] as const) {
      for (let index = 0; index < 20; index += 1) {
        // A form from no sign-in page: refused (403), and an attempt all the same.
        const attempt = await fetch(`${processes()[index % 2]!}/console/sign-in`, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded', origin: stack.apiBase, ...from(address) },
          body: 'key=x',
        });
        await attempt.arrayBuffer();
        expect(attempt.status, `attempt ${index + 1} from ${address}`).toBe(403);
      }
      for (const base of processes()) {
        const limited = await fetch(`${base}/console/sign-in`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', origin: base, ...from(later) }, body: 'key=x' });
        expect(limited.status).toBe(429);
        expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
        expect(await limited.text()).toContain('Too many sign-in attempts');
      }
    }
  });
});
