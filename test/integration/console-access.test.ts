// The console's sessions over real HTTP, on two API processes sharing one database (two
// createApp instances, as two copies of walletflow behind a load balancer, or one walletflow
// before and after a restart with other OPS_API_KEYS): a session is kept alive only by what a
// person does (a live page's streams are not), a stream on an ended session tells the browser to
// stop, a session signed in with an ops key rests on that key on every request, every page and
// stream needs its scope (Home included, its webhook addresses masked), refused console writes and
// every sign-in are audited, a session's live streams are bounded, and sign-in attempts and wrong
// keys are limited across processes (IPv6 by the /64). The clock is the test's: idle time passes
// without waiting for it.
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { consoleRoutes } from '../../api/console/console-router.ts';
import { CONSOLE_SIGN_IN_STARTS_PER_MINUTE } from '../../api/app.ts';
import { MAX_STREAMS_PER_PERSON, MAX_STREAMS_PER_SESSION } from '../../api/console/live-region.ts';
import { ANONYMOUS_AUDIT_PER_CLIENT_PER_MINUTE } from '../../audit/ops-actions.ts';
import { expressPath } from '../../api/http/route-registration.ts';
import { parseConsoleRoles } from '../../lib/console-roles.ts';
import { createLogger } from '../../lib/logger.ts';
import { startPartnerApi, type PartnerApi } from '../support/partner-api.ts';
import { startPartnerStack, type PartnerStack } from '../support/partner-stack.ts';
import { testDatabaseUrl } from '../support/test-database.ts';
import { waitFor } from '../support/wait-for.ts';

const MINUTE = 60_000;
const newKey = () => randomBytes(32).toString('base64url');
const keys = {
  auditor: newKey(),
  payer: newKey(),
  lead: newKey(),
  rotated: newKey(),
  rotatedAgain: newKey(),
  steady: newKey(),
  crowded: newKey(),
};
// Two processes of one deployment: one fingerprint key, one clock, one count of attempts.
const encryptionKey = randomBytes(32);
const attemptCountScope = `console-access-${randomBytes(4).toString('hex')}`;
let skewMs = 0;
const now = () => Date.now() + skewMs;
/**
 * A skew that puts every clock here (the processes' and the one SQL takes) half a second into a fresh minute, so that
 * a test's run of attempts counts in one limit window instead of straddling two, where the sliding estimate (the
 * previous minute's count weighted by its overlap) lets a few more through (access/attempt-limits.ts).
 */
const freshLimitWindow = () => MINUTE - (Date.now() % MINUTE) + 500;

/** What every further API process of this deployment shares: the stack's database, Temporal and key. */
const anotherProcess = () => ({
  databaseUrl: testDatabaseUrl(),
  temporalAddress: inject('temporalAddress'),
  namespace: inject('temporalNamespace'),
  taskQueuePrefix: 'walletflow-test',
  logger: createLogger({ level: 'silent' }),
  encryptionKey,
  trustedProxies: ['127.0.0.1'],
});

/** A process started with the new OPS_API_KEYS: without `auditor`, `rotated` under a new secret, `lead` narrowed. */
const startRestarted = () =>
  startPartnerApi({
    ...anotherProcess(),
    hardening: { now, sqlClock: now, attemptCountScope },
    extraOpsKeys: [
      `payer:pay:${keys.payer}`,
      `lead:fund:${keys.lead}`,
      `rotated:read:${keys.rotatedAgain}`,
      `steady:read:${keys.steady}`,
    ],
  });

/** The first process, with every key. */
let stack: PartnerStack;
/** The second, started later without `auditor`, with `rotated` under a new secret and `lead` narrowed to fund. */
let restarted: PartnerApi;
/** A third, as production runs it: PUBLIC_URL is https (its cookies are Secure). */
let secure: PartnerApi;
/**
 * A fourth, whose process clock runs 20 minutes ahead of the others' and the database's (sessions and counts must not
 * follow it).
 */
let ahead: PartnerApi;
const securePublicUrl = 'https://console.partner.example';

beforeAll(async () => {
  stack = await startPartnerStack({
    encryptionKey,
    trustedProxies: ['127.0.0.1'],
    hardening: { now, sqlClock: now, attemptCountScope },
    // Pushes every half second instead of a region's own pace (seconds): what a test waits for is the next push.
    consoleLive: { pushEveryMs: 500 },
    extraOpsKeys: [
      `auditor:read:${keys.auditor}`,
      `payer:pay:${keys.payer}`,
      `lead:read+fund:${keys.lead}`,
      `rotated:read:${keys.rotated}`,
      `steady:read:${keys.steady}`,
      `crowded:read:${keys.crowded}`,
    ],
  });
  restarted = await startRestarted();
  secure = await startPartnerApi({
    ...anotherProcess(),
    hardening: { now, sqlClock: now, attemptCountScope },
    publicUrl: securePublicUrl,
    extraOpsKeys: [`steady:read:${keys.steady}`],
  });
  ahead = await startPartnerApi({
    ...anotherProcess(),
    hardening: { now: () => Date.now() + 20 * MINUTE, attemptCountScope },
    extraOpsKeys: [`steady:read:${keys.steady}`],
  });
}, 120_000);

afterAll(async () => {
  await ahead?.close();
  await secure?.close();
  await restarted?.close();
  await stack?.close();
});

/**
 * A client address (X-Forwarded-For, trusted from loopback): each test its own, so their sign-ins do not count against
 * each other.
 */
const from = (address: string) => ({ 'x-forwarded-for': address });
let addresses = 0;
const nextAddress = () => `198.51.100.${(addresses += 1)}`;

/** The Set-Cookie of a console cookie (`walletflow_console`, `…_pre`), with the `__Host-` prefix or without. */
const setCookieOf = (response: Response, name: string) =>
  response.headers
    .getSetCookie()
    .find((cookie) => cookie.startsWith(`${name}=`) || cookie.startsWith(`__Host-${name}=`));

/** Signs in with an ops key as the sign-in page's form does; answers the session cookie (`name=value`). */
async function signIn(...args: Parameters<typeof signInAnswer>): Promise<string> {
  return cookiePair(await signInAnswer(...args), 'walletflow_console');
}

/** A cookie the answer sets, as a browser sends it back (`name=value`). */
const cookiePair = (response: Response, name: string) => setCookieOf(response, name)!.split(';')[0]!;

/** The sign-in form opened from `address`: its form cookie as a browser sends it back (`name=value`). */
async function signInFormCookie(base: string, address: string): Promise<string> {
  const form = await fetch(`${base}/console/sign-in`, { headers: from(address) });
  await form.arrayBuffer();
  return cookiePair(form, 'walletflow_console_pre');
}

/** A wrong key sent from the sign-in form (its cookie `pre`, beside `session` if given) at `address`: the status. */
async function wrongKeyFrom(address: string, pre: string, session?: string): Promise<number> {
  const wrong = await fetch(`${stack.apiBase}/console/sign-in`, {
    method: 'POST',
    headers: {
      cookie: session ? `${pre}; ${session}` : pre,
      'content-type': 'application/x-www-form-urlencoded',
      origin: stack.apiBase,
      ...from(address),
    },
    body: `_csrf=${pre.split('=')[1]}&key=${newKey()}`,
  });
  await wrong.arrayBuffer();
  return wrong.status;
}

/** The sign-in form's answer to an ops key (200, the session's cookie set). */
async function signInAnswer(
  base: string,
  key: string,
  address = nextAddress(),
  origin = base,
  extraCookie = '',
): Promise<Response> {
  const pre = await signInFormCookie(base, address);
  const signedIn = await fetch(`${base}/console/sign-in`, {
    method: 'POST',
    redirect: 'manual',
    headers: {
      cookie: `${pre}${extraCookie}`,
      'content-type': 'application/x-www-form-urlencoded',
      origin,
      ...from(address),
    },
    body: `_csrf=${pre.split('=')[1]}&return=%2Fconsole&key=${encodeURIComponent(key)}`,
  });
  await signedIn.arrayBuffer();
  expect(signedIn.status).toBe(200);
  return signedIn;
}

/** The two processes of one deployment. */
const processes = () => [stack.apiBase, restarted.apiBase];

/** What a browser sends with a page a person opens from another console page (Fetch Metadata). */
const navigation = {
  'sec-fetch-mode': 'navigate',
  'sec-fetch-dest': 'document',
  'sec-fetch-site': 'same-origin',
  'sec-fetch-user': '?1',
};

/**
 * A request as a browser sends it, its headers as given (node:http: fetch would put its own
 * Sec-Fetch-Mode on it), answered as a Response once it ended; no redirect is followed. `timeoutMs`: cut off then
 * (an answer that does not end, a stream, fails).
 */
function send(method: string, url: string, headers: Record<string, string>, timeoutMs?: number): Promise<Response> {
  return new Promise((resolve, reject) => {
    const signal = timeoutMs === undefined ? {} : { signal: AbortSignal.timeout(timeoutMs) };
    const request = httpRequest(url, { method, headers, ...signal }, (answer) => {
      const chunks: Buffer[] = [];
      answer.on('data', (chunk: Buffer) => chunks.push(chunk));
      answer.on('end', () => {
        const responseHeaders = new Headers();
        for (const [name, value] of Object.entries(answer.headers))
          for (const one of Array.isArray(value) ? value : [value ?? '']) responseHeaders.append(name, one);
        resolve(
          new Response(method === 'HEAD' ? null : Buffer.concat(chunks), {
            status: answer.statusCode ?? 0,
            headers: responseHeaders,
          }),
        );
      });
      answer.on('error', reject);
    });
    request.on('error', reject);
    request.end();
  });
}

const get = (base: string, path: string, cookie?: string, headers: Record<string, string> = {}) =>
  send('GET', `${base}${path}`, { ...(cookie ? { cookie } : {}), ...headers });

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
    return new LiveStream(
      await fetch(`${base}${path}`, { headers: { accept: 'text/event-stream', ...(cookie ? { cookie } : {}) } }),
    );
  }

  /** Reads until `done` holds for what came so far, the stream ends, or `withinMs` passed; answers what came. */
  async until(done: (text: string) => boolean, withinMs = 20_000): Promise<string> {
    const deadline = Date.now() + withinMs;
    while (!done(this.text) && !this.ended) {
      const left = deadline - Date.now();
      if (left <= 0) break;
      let timer: NodeJS.Timeout | undefined;
      const next = await Promise.race([
        this.reader.read(),
        new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), left))),
      ]);
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
    const batchStream = await get(stack.apiBase, `/console/live/batches/${randomUUID()}`, watched, {
      accept: 'text/event-stream',
    });
    await batchStream.arrayBuffer();
    // The other person opened a page then: that is use.
    expect((await get(stack.apiBase, '/console/review', used, navigation)).status).toBe(200);
    // Sixteen minutes after the first one last did anything, six after the second did.
    skewMs += 6 * MINUTE;
    await expectSignInAsked(await get(stack.apiBase, '/console', watched));
    expect((await get(stack.apiBase, '/console', used)).status).toBe(200);
  });

  it('only a person’s navigation or a form they sent counts as use: prefetches, prerenders, images, HEAD and requests without Sec-Fetch headers do not', async () => {
    skewMs = 0;
    const notUse: Array<[string, string, Record<string, string>]> = [
      ['GET', '/console/search', {}],
      [
        'GET',
        '/console/search',
        { 'sec-fetch-mode': 'no-cors', 'sec-fetch-dest': 'image', 'sec-fetch-site': 'same-site' },
      ],
      ['GET', '/console/search', { ...navigation, 'sec-purpose': 'prefetch;prerender' }],
      ['GET', '/console/search', { ...navigation, 'sec-purpose': 'prefetch' }],
      ['GET', '/console/search', { ...navigation, purpose: 'prefetch' }],
      ['GET', '/console/search', { ...navigation, 'sec-fetch-site': 'same-site' }],
      ['GET', '/console/search', { ...navigation, 'sec-fetch-dest': 'iframe' }],
      ['GET', '/console/search', { ...navigation, 'sec-fetch-mode': 'cors', 'sec-fetch-dest': 'empty' }],
      ['HEAD', '/console/search', navigation],
    ];
    for (const [method, path, headers] of notUse) {
      skewMs = 0;
      const session = await signIn(stack.apiBase, keys.lead);
      // Every 10 minutes for 30 minutes, the request and nothing else.
      for (let round = 1; round <= 3; round += 1) {
        skewMs = round * 10 * MINUTE;
        const answer = await send(method, `${stack.apiBase}${path}`, { cookie: session, ...headers });
        await answer.arrayBuffer();
      }
      await expectSignInAsked(await get(stack.apiBase, '/console/search', session, navigation));
    }
    // A person's navigations (opened from the console, or typed: Sec-Fetch-Site none), and a form sent with its token.
    skewMs = 0;
    const used = await signIn(stack.apiBase, keys.lead);
    for (let round = 1; round <= 3; round += 1) {
      skewMs = round * 10 * MINUTE;
      const page = await get(
        stack.apiBase,
        '/console/search',
        used,
        round === 2 ? { ...navigation, 'sec-fetch-site': 'none' } : navigation,
      );
      await page.arrayBuffer();
      expect(page.status, `navigation ${round}`).toBe(200);
    }
    skewMs += 10 * MINUTE;
    const form = await fetch(`${stack.apiBase}/console/fundings/${randomUUID()}/cancel`, {
      method: 'POST',
      redirect: 'manual',
      headers: { cookie: used, 'content-type': 'application/x-www-form-urlencoded', origin: stack.apiBase },
      body: `_csrf=${await csrfOf(stack.apiBase, used)}`,
    });
    await form.arrayBuffer();
    expect(form.status).toBe(404);
    skewMs += 10 * MINUTE;
    const still = await get(stack.apiBase, '/console/search', used, navigation);
    await still.arrayBuffer();
    expect(still.status).toBe(200);
  });

  it('starts a settlement only for a form a person sent (a POST), never for a GET, a HEAD or a prefetch', async () => {
    skewMs = 0;
    const date = `2013-0${1 + Math.floor(Math.random() * 9)}-1${Math.floor(Math.random() * 9)}`;
    const session = await signIn(stack.apiBase, keys.lead);
    const runs = () => stack.database.settlementRun.count({ where: { date } });
    await stack.database.settlementRun.deleteMany({ where: { date } });
    // An image on a sibling subdomain's page has no session at all: it is sent to the sign-in page.
    for (const [method, headers, status] of [
      ['HEAD', navigation, 200],
      ['GET', { ...navigation, 'sec-purpose': 'prefetch;prerender' }, 200],
      ['GET', { 'sec-fetch-mode': 'no-cors', 'sec-fetch-dest': 'image', 'sec-fetch-site': 'same-site' }, 303],
      ['GET', navigation, 200],
    ] as const) {
      const answer = await send(method, `${stack.apiBase}/console/settlements?date=${date}`, {
        cookie: session,
        ...headers,
      });
      await answer.arrayBuffer();
      expect(answer.status, `${method} ${JSON.stringify(headers)}`).toBe(status);
      expect(await runs(), `${method} ${JSON.stringify(headers)}`).toBe(0);
    }
    // The page offers the form that starts it.
    const page = await (await get(stack.apiBase, `/console/settlements?date=${date}`, session, navigation)).text();
    expect(page).toContain(`<form method="post" action="/console/settlements"`);
    const started = await fetch(`${stack.apiBase}/console/settlements`, {
      method: 'POST',
      redirect: 'manual',
      headers: { cookie: session, 'content-type': 'application/x-www-form-urlencoded', origin: stack.apiBase },
      body: `_csrf=${await csrfOf(stack.apiBase, session)}&date=${date}`,
    });
    await started.arrayBuffer();
    expect([200, 303]).toContain(started.status);
    expect(await runs()).toBe(1);
  });

  it('a day’s live region with no run that covers it offers the form that settles it, never a reload (a GET starts nothing)', async () => {
    skewMs = 0;
    const date = `2012-0${1 + Math.floor(Math.random() * 9)}-1${Math.floor(Math.random() * 9)}`;
    await stack.database.settlementRun.deleteMany({ where: { date } });
    const session = await signIn(stack.apiBase, keys.lead);
    const stream = await LiveStream.open(stack.apiBase, `/console/live/settlements/${date}`, session);
    try {
      // Before: "reload the page to start one", and a reload only showed the page again (as when today's run, begun
      // before midnight, ended after it: it covers the day so far, not the whole day).
      const pushed = await stream.until(firstPush);
      expect(pushed).not.toContain('reload');
      expect(pushed).toContain('<form method="post" action="/console/settlements"');
    } finally {
      await stream.close();
    }
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

describe('the session cookie', () => {
  it('is __Host-walletflow_console, Secure, Path=/, where PUBLIC_URL is https; the name with another prefix or none is no session there', async () => {
    const form = await fetch(`${secure.apiBase}/console/sign-in`, { headers: from(nextAddress()) });
    await form.arrayBuffer();
    expect(setCookieOf(form, 'walletflow_console_pre')).toMatch(
      /^__Host-walletflow_console_pre=[^;]+; Path=\/; HttpOnly; SameSite=Strict; Max-Age=\d+; Secure$/,
    );
    const signedIn = await signInAnswer(secure.apiBase, keys.steady, nextAddress(), securePublicUrl);
    expect(setCookieOf(signedIn, 'walletflow_console')).toMatch(
      /^__Host-walletflow_console=[^;]+; Path=\/; HttpOnly; SameSite=Strict; Max-Age=\d+; Secure$/,
    );
    const session = cookiePair(signedIn, 'walletflow_console');
    const home = await get(secure.apiBase, '/console', session);
    await home.arrayBuffer();
    expect(home.status).toBe(200);
    // The same value under the plain name (any http page of a sibling subdomain may set it) or under
    // `__Secure-` (an https page of one may, for the parent domain): no session.
    for (const planted of [session.replace(/^__Host-/, ''), session.replace(/^__Host-/, '__Secure-')])
      await expectSignInAsked(await get(secure.apiBase, '/console', planted));
  });

  it('reads no session where a browser carries more values of its name than any browser of one person would: planted ones sent first cannot push its own out', async () => {
    skewMs = 0;
    const mine = await signIn(stack.apiBase, keys.steady);
    const theirs = await signIn(stack.apiBase, keys.auditor);
    const junk = () => `walletflow_console=${randomBytes(32).toString('base64url')}`;
    // Three unknown values and someone else's live session, each for a longer path, come before this browser's own.
    const answer = await get(stack.apiBase, '/console/audit', `${junk()}; ${junk()}; ${junk()}; ${theirs}; ${mine}`);
    expect(answer.status).toBe(303);
    expect(await answer.text()).not.toContain('auditor');
    // Four values in all, the browser's own among them: still read, its own session taken.
    const four = await get(stack.apiBase, '/console', `${junk()}; ${junk()}; ${junk()}; ${mine}`);
    expect(four.status).toBe(200);
    expect(await four.text()).toContain('steady');
  });

  it('takes the session its own cookie names when several cookies share the name: an unknown one beside it does not end it, and another live session never wins', async () => {
    skewMs = 0;
    const mine = await signIn(stack.apiBase, keys.steady);
    const value = (cookie: string) => cookie.split('=')[1]!;
    // A sibling subdomain's planted cookie (Domain=parent, a longer Path) comes first in the header.
    const planted = `walletflow_console=${randomBytes(32).toString('base64url')}`;
    const withUnknown = await get(stack.apiBase, '/console', `${planted}; ${mine}`);
    expect(withUnknown.status).toBe(200);
    expect(await withUnknown.text()).toContain('steady');
    // Someone else's live session planted beside this browser's: neither is taken (never the planted one).
    const theirs = await signIn(stack.apiBase, keys.auditor);
    for (const cookie of [`${theirs}; ${mine}`, `${mine}; ${theirs}`]) {
      const answer = await get(stack.apiBase, '/console/audit', cookie);
      expect(answer.status, cookie).toBe(303);
      expect(await answer.text()).not.toContain('auditor');
    }
    // Signing in again from that browser ends every session its cookies named, the planted one too: then its own is the
    // only one.
    const again = await signIn(
      stack.apiBase,
      keys.steady,
      nextAddress(),
      stack.apiBase,
      `; walletflow_console=${value(theirs)}; walletflow_console=${value(mine)}`,
    );
    await expectSignInAsked(await get(stack.apiBase, '/console', theirs));
    const after = await get(stack.apiBase, '/console', `${theirs}; ${again}`);
    expect(after.status).toBe(200);
    expect(await after.text()).toContain('steady');
  });
});

describe('a session signed in with an ops key rests on that key', () => {
  it('is checked against the keys walletflow has now, on every request: gone or given another secret, it ends for good; narrowed, it acts with less for good', async () => {
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
    // Each process checks against the keys it was started with: one not yet restarted with the new
    // OPS_API_KEYS still lets the removed key's session in (docs/console.md says so), until a process started with
    // them has read it.
    const notYetRestarted = await get(stack.apiBase, '/console/audit', sessions.rotated);
    await notYetRestarted.arrayBuffer();
    expect(notYetRestarted.status).toBe(200);
    // walletflow without auditor's key, and with rotated's under a new secret: their sessions are over. Read first by a
    // process started with the new keys after they signed in: over for good, so the process with the old keys, as one
    // whose key was put back, lets them in no more (found by a read: a session was only refused while its key was
    // missing, and putting it back brought it back).
    const later = await startRestarted();
    try {
      for (const cookie of [sessions.auditor, sessions.rotated]) {
        await expectSignInAsked(await get(later.apiBase, '/console/audit', cookie));
        await expectSignInAsked(await get(stack.apiBase, '/console/audit', cookie));
      }
      // lead's key now has fund only: the session keeps the narrower scopes, never more than its sign-in's, for good.
      const narrowed = await get(later.apiBase, '/console/audit', sessions.lead);
      await narrowed.arrayBuffer();
      expect(narrowed.status).toBe(403);
      const stillNarrowed = await get(stack.apiBase, '/console/audit', sessions.lead);
      await stillNarrowed.arrayBuffer();
      expect(stillNarrowed.status).toBe(403);
    } finally {
      await later.close();
    }
    const refusedPaths = new Map<string, string>();
    for (const [name, cookie] of [
      ['auditor', sessions.auditor],
      ['rotated', sessions.rotated],
    ] as const) {
      await expectSignInAsked(await get(restarted.apiBase, '/console/audit', cookie));
      await expectSignInAsked(await get(restarted.apiBase, '/console', cookie));
      const refusedPath = `/console/fundings/${randomUUID()}/cancel`;
      refusedPaths.set(refusedPath, name);
      const write = await fetch(`${restarted.apiBase}${refusedPath}`, {
        method: 'POST',
        headers: { cookie, 'content-type': 'application/x-www-form-urlencoded', origin: restarted.apiBase },
        body: '',
      });
      await write.arrayBuffer();
      expect(write.status).toBe(401);
      // A sign-out of a session already over still signs out from the console's own page (it leaves the fresh-login
      // marker); another site's form is refused and clears nothing.
      const signOutFrom = async (site: string) => {
        const answer = await fetch(`${restarted.apiBase}/console/sign-out`, {
          method: 'POST',
          headers: { cookie, 'content-type': 'application/x-www-form-urlencoded', 'sec-fetch-site': site },
          body: '',
          redirect: 'manual',
        });
        await answer.arrayBuffer();
        return answer;
      };
      const elsewhere = await signOutFrom('cross-site');
      expect([elsewhere.status, elsewhere.headers.get('set-cookie')]).toEqual([401, null]);
      const signOut = await signOutFrom('same-origin');
      expect(signOut.status).toBe(303);
      expect(signOut.headers.get('location')).toBe('/console/sign-in');
      // Signed out everywhere: the process not yet restarted lets the session in no more.
      await expectSignInAsked(await get(stack.apiBase, '/console/audit', cookie));
      const stream = await LiveStream.open(restarted.apiBase, '/console/live/home', cookie);
      expect(await stream.until(endEvent)).toContain('event: end\ndata: signed-out');
      await stream.close();
    }
    // The writes their ended sessions sent are recorded as refused with whose sessions they were, as the sign-outs are
    // (found by a read: under no name, as a stranger's, and past the budget of unnamed refusals only counted).
    const refusedRows = await waitFor(
      'the ended sessions’ refused writes audited',
      async () => {
        const found = await stack.database.opsAction.findMany({ where: { path: { in: [...refusedPaths.keys()] } } });
        return found.length >= 2 ? found : undefined;
      },
      15_000,
    );
    expect(refusedRows.map((row) => [row.status, row.keyName, row.actor]).sort()).toEqual(
      [...refusedPaths.values()].map((name) => [401, null, `session ended: ${name}`]).sort(),
    );
    // The audit shows whose they were, and finds them by that person (a second read: listed as a stranger's, and
    // found by no one's name).
    const audited = await get(restarted.apiBase, '/console/audit?person=auditor', sessions.steady);
    expect(audited.status).toBe(200);
    const listed = await audited.text();
    expect(listed).toContain('session ended: auditor');
    expect(listed).not.toContain('session ended: rotated');
    const narrowed = await get(restarted.apiBase, '/console/audit', sessions.lead);
    expect(narrowed.status).toBe(403);
    expect(await narrowed.text()).not.toContain('<table');
    // An unchanged key's session goes on, on either process.
    expect((await get(restarted.apiBase, '/console/audit', sessions.steady)).status).toBe(200);
    expect((await get(stack.apiBase, '/console/audit', sessions.steady)).status).toBe(200);
  });

  it('signed in on a process with newer, wider keys, is refused by one started before it only for that request, in a rolling restart', async () => {
    // Found by a second read: a process not yet restarted, lacking a key added or given a new secret, ended for good
    // the sessions signed in with it on a restarted one, at the person's first click that reached it.
    skewMs = 0;
    const rotated = await signIn(restarted.apiBase, keys.rotatedAgain);
    await expectSignInAsked(await get(stack.apiBase, '/console/audit', rotated));
    const again = await get(restarted.apiBase, '/console/audit', rotated);
    await again.arrayBuffer();
    expect(again.status).toBe(200);
  });
});

/** A webhook endpoint to `url` with one dead-lettered delivery (the home's Webhooks card lists it): its id. */
async function failingEndpoint(url: string): Promise<string> {
  const created = await stack.opsFetch('/ops/webhooks/endpoints', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ url, events: ['funding.failed'] }),
  });
  expect(created.status).toBe(201);
  const endpointId = ((await created.json()) as { id: string }).id;
  const eventId = `evt_${randomUUID()}`;
  await stack.database.webhookEvent.create({ data: { id: eventId, type: 'funding.failed', body: '{}' } });
  await stack.database.webhookDelivery.create({
    data: { id: randomUUID(), eventId, endpointId, status: 'FAILED', attempts: 5 },
  });
  return endpointId;
}

describe('every console page and stream needs its scope', () => {
  it('Home and its stream need read, as every other page does: a key with only pay sees no figure, batch or webhook', async () => {
    const payer = await signIn(stack.apiBase, keys.payer);
    const home = await get(stack.apiBase, '/console', payer);
    expect(home.status).toBe(403);
    const text = await home.text();
    for (const shown of ['Treasury', 'Fundings today', 'Batches awaiting approval', 'Webhooks'])
      expect(text).not.toContain(shown);
    const stream = await get(stack.apiBase, '/console/live/home', payer, { accept: 'text/event-stream' });
    expect(stream.status).toBe(403);
    expect(await stream.text()).not.toContain('Treasury');
    // Every page and stream of the console, whatever its parameters: none answers a person without read.
    const pages = consoleRoutes.filter((route) => route.method === 'get' && !/sign-in|oidc/.test(route.path));
    expect(pages.length).toBeGreaterThan(12);
    for (const route of pages) {
      const path = expressPath(route.path)
        .replace(/:account/, 'TREASURY')
        .replace(/:[A-Za-z]+/g, randomUUID());
      const answer = await get(
        stack.apiBase,
        path,
        payer,
        route.path.includes('/live/') ? { accept: 'text/event-stream' } : {},
      );
      await answer.arrayBuffer();
      expect(answer.status, `GET ${path}`).toBe(403);
    }
  });

  it('reads the day’s figures once for the home pages a process has open at once, not once a page: each page gets them', async () => {
    skewMs = 0;
    const people = await Promise.all(
      [keys.steady, keys.crowded, keys.lead, keys.auditor].map((key) => signIn(stack.apiBase, key)),
    );
    // The figures an earlier test's pages read serve shared callers for a while (freshMs, 400 ms at this stack's pace):
    // they go stale first, so that what is counted is these pages' own read (found flaky: a read of the test before,
    // still fresh, served all four, and none was counted).
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    // The payments of the day, the scan the figures cost most: counted, and each held a while as a busy database would.
    const database = stack.database as unknown as Record<'$queryRaw', (...args: unknown[]) => Promise<unknown>>;
    const original = database.$queryRaw;
    let paymentDayReads = 0;
    database.$queryRaw = async (...args: unknown[]) => {
      const text = Array.isArray(args[0]) ? (args[0] as string[]).join('?') : '';
      if (/FROM payment\s+WHERE created_at >=/.test(text)) {
        paymentDayReads += 1;
        await new Promise((resolve) => setTimeout(resolve, 1000));
      }
      return original.apply(stack.database, args);
    };
    try {
      const streams = await Promise.all(
        people.map((cookie) => LiveStream.open(stack.apiBase, '/console/live/home', cookie)),
      );
      for (const stream of streams) {
        expect(stream.response.status).toBe(200);
        expect(await stream.until(firstPush)).toContain('Payments today');
        await stream.close();
      }
      // Before: one read a page (4). The pages opened within the held read's second share it.
      expect(paymentDayReads).toBe(1);
    } finally {
      database.$queryRaw = original;
    }
  });

  it('a page loaded shows what was written before it, though a live region’s read of the figures is under way', async () => {
    skewMs = 0;
    const [watching, loading] = await Promise.all([keys.steady, keys.auditor].map((key) => signIn(stack.apiBase, key)));
    // The first read of the day's payments is held until released: a live region's read, begun before the write below.
    const database = stack.database as unknown as Record<'$queryRaw', (...args: unknown[]) => Promise<unknown>>;
    const original = database.$queryRaw;
    let paymentDayReads = 0;
    let release = () => {};
    const held = new Promise<void>((resolve) => (release = resolve));
    database.$queryRaw = async (...args: unknown[]) => {
      const text = Array.isArray(args[0]) ? (args[0] as string[]).join('?') : '';
      if (/FROM payment\s+WHERE created_at >=/.test(text)) {
        paymentDayReads += 1;
        if (paymentDayReads === 1) await held;
      }
      return original.apply(stack.database, args);
    };
    let stream: LiveStream | undefined;
    try {
      stream = await LiveStream.open(stack.apiBase, '/console/live/home', watching);
      await expect.poll(() => paymentDayReads).toBe(1);
      // Written while the region's read is under way (its other reads, the webhooks' health among them, have answered).
      await failingEndpoint('https://written-before.example.com/in');
      const page = get(stack.apiBase, '/console', loading).then((answer) => answer.text());
      // Before: the page shared the region's read, begun before the write, and showed no failing endpoint.
      setTimeout(release, 300);
      expect(await page).toContain('written-before.example.com');
      expect(await stream.until(firstPush)).toContain('Payments today');
    } finally {
      release();
      database.$queryRaw = original;
      await stream?.close();
    }
  });

  it('a stream checks its own scope again at every push, not only that the session holds: a session that lost read gets no more figures', async () => {
    skewMs = 0;
    const lead = await signIn(stack.apiBase, keys.lead);
    const stream = await LiveStream.open(stack.apiBase, '/console/live/home', lead);
    try {
      expect(await stream.until(firstPush)).toContain('Treasury');
      // What the session may do now is read again at each push: here it no longer has read (fund is left, so the
      // session holds).
      const cookieHash = createHash('sha256').update(lead.split('=')[1]!).digest('hex');
      await stack.database.consoleSession.updateMany({ where: { cookieHash }, data: { scopes: ['fund'] } });
      const before = stream.text.length;
      const rest = await stream.until(endEvent);
      expect(rest.slice(before)).toContain('event: end\ndata: refused');
      expect(rest.slice(before)).not.toContain('Treasury');
      // The session itself goes on, with what it has left.
      const batches = await get(stack.apiBase, '/console/batches', lead);
      await batches.arrayBuffer();
      expect(batches.status).toBe(403);
    } finally {
      await stream.close();
    }
  });

  it('Home shows a failing webhook endpoint’s address masked, as the webhooks page does', async () => {
    const url = 'https://hook-user:hook-pass@hooks.example.com/in?token=s3cret-token&kind=funding#s3cret-fragment';
    const endpointId = await failingEndpoint(url);
    const reader = await signIn(stack.apiBase, keys.auditor);
    for (const path of ['/console', '/console/webhooks', `/console/webhooks/${endpointId}`]) {
      const page = await (await get(stack.apiBase, path, reader)).text();
      expect(page, path).toContain('hooks.example.com/in?token=');
      for (const secret of ['hook-user', 'hook-pass', 's3cret-token', 's3cret-fragment'])
        expect(page, `${path}: ${secret}`).not.toContain(secret);
    }
  });
});

describe('what a page says was done', () => {
  it('is said only on the address this session’s write sent the person to: a link someone made, or another session’s, says nothing', async () => {
    const created = await stack.opsFetch('/ops/fundings', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': randomUUID() },
      body: JSON.stringify({
        recipient: { type: 'CODE', code: '1234567' },
        amount: { currency: 'PHP', value: '10.00' },
      }),
    });
    expect(created.status).toBe(202);
    const { fundingId } = (await created.json()) as { fundingId: string };
    const said = 'Cancelled: the funding ended FAILED';
    const mine = await signIn(stack.apiBase, stack.opsKey);
    const theirs = await signIn(stack.apiBase, stack.opsKey);
    // A link someone made: before, the page said the reader had cancelled a funding they had not.
    const crafted = await get(stack.apiBase, `/console/fundings/${fundingId}?done=cancelled`, theirs, navigation);
    expect(crafted.status).toBe(200);
    expect(await crafted.text()).not.toContain(said);
    const batch = await stack.opsFetch('/ops/funding-batches', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': randomUUID() },
      body: JSON.stringify({
        name: 'crafted notice',
        items: [
          {
            reference: 'one',
            recipient: { type: 'CODE', code: '1234567' },
            amount: { currency: 'PHP', value: '1.00' },
          },
        ],
      }),
    });
    expect(batch.status).toBe(202);
    const { batchId } = (await batch.json()) as { batchId: string };
    const batchCrafted = await get(stack.apiBase, `/console/batches/${batchId}?did=cancel`, theirs, navigation);
    expect(batchCrafted.status).toBe(200);
    expect(await batchCrafted.text()).not.toContain('You cancelled');
    // The person's own cancel: its address says so, to them.
    const form = await fetch(`${stack.apiBase}/console/fundings/${fundingId}/cancel`, {
      method: 'POST',
      redirect: 'manual',
      headers: { cookie: mine, 'content-type': 'application/x-www-form-urlencoded', origin: stack.apiBase },
      body: `_csrf=${encodeURIComponent(await csrfOf(stack.apiBase, mine))}`,
    });
    expect(form.status).toBe(303);
    const back = form.headers.get('location')!;
    expect(await (await get(stack.apiBase, back, mine, navigation)).text()).toContain(said);
    // The same address in another session (sent in a chat, say): nothing said.
    expect(await (await get(stack.apiBase, back, theirs, navigation)).text()).not.toContain(said);
  });
});

describe('the console’s audit', () => {
  it('records writes refused for a missing session or a bad form token, in any spelling, and ignores X-Ops-Actor', async () => {
    const since = new Date();
    const fundingId = randomUUID();
    const form = {
      'content-type': 'application/x-www-form-urlencoded',
      origin: stack.apiBase,
      'x-ops-actor': 'Someone Else',
    };
    const noSession = await fetch(`${stack.apiBase}/console/fundings/${fundingId}/cancel`, {
      method: 'POST',
      redirect: 'manual',
      headers: form,
      body: '',
    });
    expect(noSession.status).toBe(401);
    const lead = await signIn(stack.apiBase, keys.lead);
    const badToken = await fetch(`${stack.apiBase}/console/fundings/${fundingId}/cancel`, {
      method: 'POST',
      redirect: 'manual',
      headers: { ...form, cookie: lead },
      body: '_csrf=not-the-form-token',
    });
    expect(badToken.status).toBe(403);
    const otherSpelling = await fetch(`${stack.apiBase}/CONSOLE/fundings/${fundingId}/cancel`, {
      method: 'POST',
      redirect: 'manual',
      headers: { ...form, cookie: lead },
      body: '',
    });
    expect(otherSpelling.status).toBe(404);
    // Found by a read: the first segment alone was decoded, and `console%2Ffundings…` is one segment.
    const encodedSlashes = await fetch(`${stack.apiBase}/console%2Ffundings%2F${fundingId}%2Fcancel`, {
      method: 'POST',
      redirect: 'manual',
      headers: { ...form, cookie: lead },
      body: '',
    });
    expect(encodedSlashes.status).toBe(404);
    const done = await fetch(`${stack.apiBase}/console/fundings/${fundingId}/cancel`, {
      method: 'POST',
      redirect: 'manual',
      headers: { ...form, cookie: lead },
      body: `_csrf=${await csrfOf(stack.apiBase, lead)}`,
    });
    expect(done.status).toBe(404);
    const rows = await waitFor(
      'the five writes audited',
      async () => {
        const found = await stack.database.opsAction.findMany({
          where: { at: { gte: since }, path: { contains: fundingId } },
          orderBy: { id: 'asc' },
        });
        return found.length >= 5 ? found : undefined;
      },
      15_000,
    );
    // Each row is written once its answer has gone (ops-audit.ts), so two requests in a row may be written in either
    // order: the rows are compared by status and path.
    expect(
      rows
        .map((row) => ({
          method: row.method,
          path: row.path,
          status: row.status,
          keyName: row.keyName,
          actor: row.actor,
          channel: row.channel,
        }))
        .sort((a, b) => a.status - b.status || (a.path < b.path ? -1 : a.path > b.path ? 1 : 0)),
    ).toEqual([
      {
        method: 'POST',
        path: `/console/fundings/${fundingId}/cancel`,
        status: 401,
        keyName: null,
        actor: null,
        channel: 'console',
      },
      {
        method: 'POST',
        path: `/console/fundings/${fundingId}/cancel`,
        status: 403,
        keyName: 'lead',
        actor: null,
        channel: 'console',
      },
      {
        method: 'POST',
        path: `/CONSOLE/fundings/${fundingId}/cancel`,
        status: 404,
        keyName: null,
        actor: null,
        channel: 'console',
      },
      {
        method: 'POST',
        path: `/console%2Ffundings%2F${fundingId}%2Fcancel`,
        status: 404,
        keyName: null,
        actor: null,
        channel: 'console',
      },
      {
        method: 'POST',
        path: `/console/fundings/${fundingId}/cancel`,
        status: 404,
        keyName: 'lead',
        actor: null,
        channel: 'console',
      },
    ]);
  });

  it('records a write another site’s page made with a person’s cookie under no one’s name: refused as sent without a session, within the budget of unnamed refusals', async () => {
    skewMs = 0;
    const since = new Date();
    const lead = await signIn(stack.apiBase, keys.lead);
    const fundingId = randomUUID();
    const address = nextAddress();
    // A sibling subdomain's page (same site: the Strict cookie goes with it): its forms and its fetches, and either
    // from a browser too old for Fetch Metadata (the Origin says it).
    const forged: Record<string, string>[] = [
      { 'sec-fetch-site': 'same-site', 'sec-fetch-mode': 'navigate', 'sec-fetch-dest': 'document' },
      { 'sec-fetch-site': 'same-site', 'sec-fetch-mode': 'no-cors', 'sec-fetch-dest': 'empty' },
      {},
    ];
    const answers: number[] = [];
    for (let index = 0; index < 45; index += 1) {
      const answer = await fetch(`${stack.apiBase}/console/fundings/${fundingId}/cancel`, {
        method: 'POST',
        redirect: 'manual',
        headers: {
          cookie: lead,
          'content-type': 'application/x-www-form-urlencoded',
          origin: 'https://sibling.example',
          ...from(address),
          ...forged[index % forged.length]!,
        },
        body: '',
      });
      await answer.arrayBuffer();
      answers.push(answer.status);
    }
    expect(answers).toEqual(answers.map(() => 401));
    // Before: each was refused for its form token (403), and audited under the person's name, past the budget: a
    // sibling's page could fill the audit with what looked like the person's own attempts.
    const rows = await waitFor(
      'the forged writes audited',
      async () => {
        const found = await stack.database.opsAction.findMany({
          where: { at: { gte: since }, path: { contains: fundingId } },
        });
        return found.length >= 20 ? found : undefined;
      },
      15_000,
    );
    expect(rows.filter((row) => row.keyName !== null || row.actor !== null)).toEqual([]);
    // Within a minute's budget for the address, or two minutes' where the flood ran over into the next.
    expect(rows.length).toBeLessThanOrEqual(40);
    // The person's own session goes on.
    expect((await get(stack.apiBase, '/console/audit', lead, navigation)).status).toBe(200);
  });

  it('records every sign-in with a key under the key’s name, and a wrong key without one', async () => {
    const since = new Date();
    const address = nextAddress();
    const pre = await signInFormCookie(stack.apiBase, address);
    expect(await wrongKeyFrom(address, pre)).toBe(401);
    await signIn(stack.apiBase, keys.steady, address);
    const rows = await waitFor(
      'both sign-ins audited',
      async () => {
        const found = await stack.database.opsAction.findMany({
          where: { at: { gte: since }, path: '/console/sign-in', method: 'POST' },
          orderBy: { id: 'asc' },
        });
        return found.length >= 2 ? found : undefined;
      },
      15_000,
    );
    // Written once each answer has gone, in either order: compared by status.
    expect(
      rows
        .map((row) => ({ status: row.status, keyName: row.keyName, channel: row.channel }))
        .sort((a, b) => a.status - b.status),
    ).toEqual([
      { status: 200, keyName: 'steady', channel: 'console' },
      { status: 401, keyName: null, channel: 'console' },
    ]);
  });

  it('records a wrong key sent from a browser still signed in as someone else without that person’s name', async () => {
    const since = new Date();
    const address = nextAddress();
    const session = await signIn(stack.apiBase, keys.crowded, address);
    // A sign-in page opened before (its form's cookie), sent with another key while the session is live.
    const pre = await signInFormCookie(stack.apiBase, address);
    expect(await wrongKeyFrom(address, pre, session)).toBe(401);
    const row = await waitFor(
      'the wrong key audited',
      async () =>
        (await stack.database.opsAction.findFirst({
          where: { at: { gte: since }, path: '/console/sign-in', method: 'POST', status: 401 },
        })) ?? undefined,
      15_000,
    );
    // Before: 'crowded', whose session the browser held, as if they had failed a sign-in.
    expect(row.keyName).toBeNull();
  });
});

describe('requests without a session or a key are audited within a budget', () => {
  it('records them one by one up to a budget per address and minute, then one summary row per address, door and minute saying how many; others go on being recorded', async () => {
    skewMs = 0;
    // The budget's minutes are the database's own (date_trunc('minute', now())): the flood starts early in one, so
    // that it is counted in one minute rather than two.
    if (Date.now() % MINUTE > (MINUTE * 3) / 4)
      await new Promise((resolve) => setTimeout(resolve, MINUTE - (Date.now() % MINUTE) + 500));
    const flooder = `198.18.${Math.floor(Math.random() * 250)}.${Math.floor(Math.random() * 250)}`;
    const neighbour = `198.19.${Math.floor(Math.random() * 250)}.${Math.floor(Math.random() * 250)}`;
    const fundingId = randomUUID();
    const form = { 'content-type': 'application/x-www-form-urlencoded', origin: stack.apiBase };
    const send = async (base: string, path: string, init: RequestInit, address: string) => {
      const answer = await fetch(`${base}${path}`, {
        redirect: 'manual',
        ...init,
        headers: { ...(init.headers as Record<string, string>), ...from(address) },
      });
      await answer.arrayBuffer();
      return answer.status;
    };
    // 60 console forms without a session and 30 callbacks this browser did not start, from one address, at both
    // processes.
    for (let index = 0; index < 60; index += 1)
      expect(
        await send(
          processes()[index % 2]!,
          `/console/fundings/${fundingId}/cancel`,
          { method: 'POST', headers: form, body: '' },
          flooder,
        ),
      ).toBe(401);
    for (let index = 0; index < 30; index += 1)
      expect(
        await send(processes()[index % 2]!, `/console/oidc/callback?state=${fundingId}&code=x`, {}, flooder),
      ).toBeGreaterThanOrEqual(400);
    // 50 ops writes without a key or with a wrong one.
    for (let index = 0; index < 50; index += 1) {
      const headers: Record<string, string> = index % 2 === 0 ? {} : { authorization: `Bearer ${newKey()}` };
      expect(
        await send(processes()[index % 2]!, `/ops/fundings/${fundingId}/cancel`, { method: 'POST', headers }, flooder),
      ).toBeGreaterThanOrEqual(401);
    }
    // A neighbour's few are recorded one by one.
    for (let index = 0; index < 5; index += 1)
      expect(
        await send(
          stack.apiBase,
          `/console/fundings/${fundingId}/cancel`,
          { method: 'POST', headers: form, body: '' },
          neighbour,
        ),
      ).toBe(401);

    const rowsOf = (client: string, channel: string) =>
      stack.database.opsAction.findMany({ where: { client, channel }, orderBy: { id: 'asc' } });
    const total = (rows: Array<{ count: number }>) => rows.reduce((sum, row) => sum + row.count, 0);
    const consoleRows = await waitFor(
      'the console’s 90 accounted for',
      async () => {
        const rows = await rowsOf(flooder, 'console');
        return total(rows) >= 90 ? rows : undefined;
      },
      20_000,
    );
    const ops = await waitFor(
      'the ops API’s 50 accounted for',
      async () => {
        const rows = await rowsOf(flooder, 'api');
        return total(rows) >= 50 ? rows : undefined;
      },
      20_000,
    );
    for (const [rows, requests] of [
      [consoleRows, 90],
      [ops, 50],
    ] as const) {
      expect(total(rows)).toBe(requests);
      const summaries = rows.filter((row) => row.summaryOf !== null);
      const single = rows.filter((row) => row.summaryOf === null);
      expect(single.every((row) => row.count === 1 && row.path.includes(fundingId) && row.keyName === null)).toBe(true);
      // The requests were sent within a minute or two: per minute at most the budget one by one, and one summary.
      const minutes = new Set(summaries.map((row) => row.at.toISOString()));
      expect(minutes.size).toBe(summaries.length);
      expect(summaries.length).toBeGreaterThanOrEqual(1);
      expect(summaries.length).toBeLessThanOrEqual(2);
      expect(single.length).toBeLessThanOrEqual(ANONYMOUS_AUDIT_PER_CLIENT_PER_MINUTE * summaries.length);
      for (const summary of summaries) {
        expect(summary).toMatchObject({ keyName: null, method: '*', client: flooder });
        expect(summary.path).toMatch(/without a session or key/);
      }
    }
    const neighbours = await waitFor(
      'the neighbour’s 5',
      async () => {
        const rows = await rowsOf(neighbour, 'console');
        return rows.length >= 5 ? rows : undefined;
      },
      20_000,
    );
    expect(
      neighbours.map((row) => ({ path: row.path, status: row.status, count: row.count, summaryOf: row.summaryOf })),
    ).toEqual(
      Array.from({ length: 5 }, () => ({
        path: `/console/fundings/${fundingId}/cancel`,
        status: 401,
        count: 1,
        summaryOf: null,
      })),
    );
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
        expect(await stream.until((text) => text.length > before && firstPush(text.slice(before)))).not.toContain(
          'event: end',
        );
      }
    } finally {
      await Promise.all([...streams, other].map((stream) => stream.close()));
    }
  });
});

describe('a stream another site’s page opens with a person’s cookie', () => {
  it('has no session and ends none of theirs (an image or an EventSource on a sibling subdomain’s page)', async () => {
    skewMs = 0;
    const session = await signIn(stack.apiBase, keys.auditor);
    const own = await LiveStream.open(stack.apiBase, '/console/live/home', session);
    try {
      expect(await own.until(firstPush)).toContain('Treasury');
      const sibling = { 'sec-fetch-site': 'same-site' };
      const made: Array<[Record<string, string>, number]> = [
        [{ ...sibling, 'sec-fetch-mode': 'no-cors', 'sec-fetch-dest': 'image', accept: 'image/*' }, 303],
        [{ ...sibling, 'sec-fetch-mode': 'cors', 'sec-fetch-dest': 'empty', accept: 'text/event-stream' }, 200],
        // A window of the sibling's own, navigated there by its script again and again (no person's click).
        [{ ...sibling, 'sec-fetch-mode': 'navigate', 'sec-fetch-dest': 'document', accept: 'text/html' }, 303],
      ];
      // More than the session's bound of streams (4): before, each joined it, and the person's page was told it had
      // been replaced.
      for (let index = 0; index < 6; index += 1) {
        const [headers, status] = made[index % made.length]!;
        // A redirect to the sign-in page, or a stream told at once that it has no session: either ends (an open stream
        // would be cut off here, and fail).
        const answer = await send('GET', `${stack.apiBase}/console/live/home`, { cookie: session, ...headers }, 5000);
        expect(answer.status).toBe(status);
        expect(await answer.text()).not.toContain('Treasury');
      }
      const before = own.text.length;
      expect(await own.until((text) => text.length > before && firstPush(text.slice(before)))).not.toContain(
        'event: end',
      );
      // The person's own click on a link on the sibling's page opens theirs.
      const clicked = await get(stack.apiBase, '/console/audit', session, {
        ...navigation,
        ...sibling,
        'sec-fetch-user': '?1',
      });
      await clicked.arrayBuffer();
      expect(clicked.status).toBe(200);
    } finally {
      await own.close();
    }
  });
});

describe('live streams are bounded per person too', () => {
  it('a person signed in many times holds at most their own bound of streams, however many sessions; signing in again from a browser ends the session its cookie named', async () => {
    skewMs = 0;
    // The same browser signing in again: its earlier session ends (its cookie sent with the new sign-in).
    // A key of its own here, so no other test's streams are this person's.
    const first = await signIn(stack.apiBase, keys.rotated);
    const second = await signIn(stack.apiBase, keys.rotated, nextAddress(), stack.apiBase, `; ${first}`);
    await expectSignInAsked(await get(stack.apiBase, '/console', first, navigation));
    expect((await get(stack.apiBase, '/console', second, navigation)).status).toBe(200);
    // Other browsers (no cookie sent): sessions of their own, one person.
    const sessions = [
      second,
      ...(await Promise.all(Array.from({ length: 3 }, () => signIn(stack.apiBase, keys.rotated)))),
    ];
    const other = await LiveStream.open(stack.apiBase, '/console/live/home', await signIn(stack.apiBase, keys.steady));
    const streams: LiveStream[] = [];
    try {
      expect(await other.until(firstPush)).toContain('Treasury');
      // Three streams per session, four sessions: twelve asked for, one person.
      for (const session of sessions) {
        for (let index = 0; index < 3; index += 1) {
          const stream = await LiveStream.open(stack.apiBase, '/console/live/home', session);
          expect(stream.response.status).toBe(200);
          await stream.until(firstPush);
          streams.push(stream);
        }
      }
      const over = streams.length - MAX_STREAMS_PER_PERSON;
      for (const stream of streams.slice(0, over))
        expect(await stream.until(endEvent)).toContain('event: end\ndata: replaced');
      // The person's newest go on, and so does another person's.
      for (const stream of [...streams.slice(over), other]) {
        const before = stream.text.length;
        expect(await stream.until((text) => text.length > before && firstPush(text.slice(before)))).not.toContain(
          'event: end',
        );
      }
    } finally {
      await Promise.all([...streams, other].map((stream) => stream.close()));
    }
  });
});

describe('a stream ended by one bound no longer counts toward the other', () => {
  it('a person at their bound opening one stream too many in a full session loses only that session’s oldest', async () => {
    skewMs = 0;
    // Two browsers of one person (a key of its own: no other test's streams are this person's), four streams each:
    // the person's bound (8) is reached with B's streams the oldest.
    const [a, b] = await Promise.all([signIn(stack.apiBase, keys.crowded), signIn(stack.apiBase, keys.crowded)]);
    const open = async (session: string) => {
      const stream = await LiveStream.open(stack.apiBase, '/console/live/home', session);
      expect(stream.response.status).toBe(200);
      await stream.until(firstPush);
      return stream;
    };
    const streams: LiveStream[] = [];
    try {
      for (let index = 0; index < MAX_STREAMS_PER_SESSION; index += 1) streams.push(await open(b));
      for (let index = 0; index < MAX_STREAMS_PER_SESSION; index += 1) streams.push(await open(a));
      expect(streams).toHaveLength(MAX_STREAMS_PER_PERSON);
      // A fifth in A: A's oldest ends (its session's bound), which leaves the person at 8, so nothing else ends.
      streams.push(await open(a));
      const aOldest = streams[MAX_STREAMS_PER_SESSION]!;
      expect(await aOldest.until(endEvent)).toContain('event: end\ndata: replaced');
      for (const stream of streams.filter((each) => each !== aOldest)) {
        const before = stream.text.length;
        expect(await stream.until((text) => text.length > before && firstPush(text.slice(before)))).not.toContain(
          'event: end',
        );
      }
    } finally {
      await Promise.all(streams.map((stream) => stream.close()));
    }
  });
});

describe('sessions and attempt counts are on the database’s clock, not each process’s', () => {
  it('a process whose clock runs 20 minutes ahead neither ends a live session nor counts wrong keys in windows of its own', async () => {
    skewMs = 0;
    const session = await signIn(stack.apiBase, keys.steady);
    for (const base of [ahead.apiBase, stack.apiBase]) {
      const home = await get(base, '/console', session);
      await home.arrayBuffer();
      expect(home.status, base).toBe(200);
    }
    // Idle by the database's clock: ended at the process ahead as at the others.
    const cookieHash = createHash('sha256').update(session.split('=')[1]!).digest('hex');
    const [row] = await stack.database.$queryRaw<Array<{ idle: Date }>>`SELECT now() - interval '16 minutes' AS idle`;
    await stack.database.consoleSession.updateMany({ where: { cookieHash }, data: { lastSeenAt: row!.idle } });
    await expectSignInAsked(await get(ahead.apiBase, '/console', session));
    // Wrong keys from one address, half at each process: one count, one window.
    const address = '203.0.113.90';
    for (let index = 0; index < 20; index += 1) {
      const base = index % 2 === 0 ? stack.apiBase : ahead.apiBase;
      const guess = await fetch(`${base}/ops/fundings`, {
        headers: { authorization: `Bearer ${newKey()}`, ...from(address) },
      });
      await guess.arrayBuffer();
      expect(guess.status, `guess ${index + 1}`).toBe(401);
    }
    for (const base of [stack.apiBase, ahead.apiBase]) {
      const limited = await fetch(`${base}/ops/fundings`, {
        headers: { authorization: `Bearer ${newKey()}`, ...from(address) },
      });
      await limited.arrayBuffer();
      expect(limited.status, base).toBe(429);
    }
  });
});

/** The console's Sign out, sent from its own page with this browser's cookie: the answer's status. */
async function signOutFromTheConsole(cookie: string): Promise<number> {
  const signOut = await fetch(`${stack.apiBase}/console/sign-out`, {
    method: 'POST',
    headers: { cookie, 'content-type': 'application/x-www-form-urlencoded', 'sec-fetch-site': 'same-origin' },
    body: '',
    redirect: 'manual',
  });
  await signOut.arrayBuffer();
  return signOut.status;
}

describe('an upload whose session ends while its file arrives', () => {
  it('stores nothing and says so (401): signed out in another tab while the file was sent', async () => {
    skewMs = 0;
    const session = await signIn(stack.apiBase, keys.lead);
    const csrf = await csrfOf(stack.apiBase, session);
    const name = `upload-signed-out-${randomUUID()}`;
    const boundary = `----walletflow${randomBytes(8).toString('hex')}`;
    const field = (fieldName: string, value: string) =>
      `--${boundary}\r\nContent-Disposition: form-data; name="${fieldName}"\r\n\r\n${value}\r\n`;
    const head =
      field('_csrf', csrf) +
      field('idempotencyKey', randomUUID()) +
      field('name', name) +
      field('source', 'TREASURY') +
      field('partnerUserId', '') +
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="batch.csv"\r\nContent-Type: text/csv\r\n\r\n` +
      'reference,recipient_type,recipient,amount\nr-1,CODE,7654321,5.00\n';
    const answer = new Promise<{ status: number; body: string }>((resolve, reject) => {
      const request = httpRequest(`${stack.apiBase}/console/batches`, {
        method: 'POST',
        headers: {
          cookie: session,
          'content-type': `multipart/form-data; boundary=${boundary}`,
          'sec-fetch-site': 'same-origin',
          'sec-fetch-mode': 'navigate',
        },
      });
      request.on('error', reject);
      request.on('response', (response) => {
        let body = '';
        response.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
        response.on('end', () => resolve({ status: response.statusCode ?? 0, body }));
      });
      request.write(head);
      // Half the file sent; the person signs out in another tab; then the rest arrives.
      void (async () => {
        await new Promise((resolve) => setTimeout(resolve, 300));
        const signOut = await fetch(`${stack.apiBase}/console/sign-out`, {
          method: 'POST',
          headers: { cookie: session, 'content-type': 'application/x-www-form-urlencoded', origin: stack.apiBase },
          body: `_csrf=${csrf}`,
          redirect: 'manual',
        });
        await signOut.arrayBuffer();
        expect(signOut.status).toBe(303);
        request.end(`r-2,CODE,7654322,6.00\n\r\n--${boundary}--\r\n`);
      })().catch(reject);
    });
    const { status, body } = await answer;
    // Before: stored under the person who had signed out (303 to the batch).
    expect(status, body).toBe(401);
    expect(body).toContain('nothing was stored');
    expect(await stack.database.fundingBatch.count({ where: { name } })).toBe(0);
  });
});

describe('an upload whose session’s touch is refused a connection', () => {
  it('answers 503 with Retry-After at once and stores nothing, however small the file: the form is read to its end', async () => {
    skewMs = 0;
    const session = await signIn(stack.apiBase, keys.lead);
    const csrf = await csrfOf(stack.apiBase, session);
    // Past the half minute after which a person's act is written again (touch), which a burst refuses.
    skewMs = 31_000;
    const database = stack.database as unknown as Record<'$executeRaw', (...args: unknown[]) => Promise<unknown>>;
    const original = database.$executeRaw;
    database.$executeRaw = (...args: unknown[]) => {
      const text = Array.isArray(args[0]) ? (args[0] as string[]).join('?') : '';
      if (text.includes('UPDATE console_session s SET last_seen_at'))
        return Promise.reject(new Error('timeout exceeded when trying to connect'));
      return original.apply(stack.database, args);
    };
    const name = `upload-touch-refused-${randomUUID()}`;
    const form = new FormData();
    form.set('_csrf', csrf);
    form.set('idempotencyKey', randomUUID());
    form.set('name', name);
    form.set('source', 'TREASURY');
    form.set('partnerUserId', '');
    form.set(
      'file',
      new Blob(['reference,recipient_type,recipient,amount\nr-1,CODE,7654321,5.00\n'], { type: 'text/csv' }),
      'batch.csv',
    );
    try {
      // Before: the file's stream was never read once the touch failed, the form never ended, and no answer came.
      const answer = await fetch(`${stack.apiBase}/console/batches`, {
        method: 'POST',
        headers: { cookie: session, origin: stack.apiBase },
        body: form,
        redirect: 'manual',
        signal: AbortSignal.timeout(10_000),
      });
      const body = await answer.text();
      expect(answer.status, body).toBe(503);
      expect(Number(answer.headers.get('retry-after'))).toBeGreaterThan(0);
    } finally {
      database.$executeRaw = original;
      skewMs = 0;
    }
    expect(await stack.database.fundingBatch.count({ where: { name } })).toBe(0);
  });
});

describe('a sign-out from a browser whose session already ended', () => {
  it('signs the person out everywhere all the same: their session in another browser ends too', async () => {
    skewMs = 0;
    const desk = await signIn(stack.apiBase, keys.steady);
    const laptop = await signIn(stack.apiBase, keys.steady);
    // The desk's session idles out (by the database's clock); the laptop's is live.
    const cookieHash = createHash('sha256').update(desk.split('=')[1]!).digest('hex');
    const [row] = await stack.database.$queryRaw<Array<{ idle: Date }>>`SELECT now() - interval '16 minutes' AS idle`;
    await stack.database.consoleSession.updateMany({ where: { cookieHash }, data: { lastSeenAt: row!.idle } });
    const home = await get(stack.apiBase, '/console', laptop);
    await home.arrayBuffer();
    expect(home.status).toBe(200);
    // The desk's open page asks on its own (its stream, a reload) before the person is back: the session is read, and
    // found over. Before: it was deleted as it was read, and the sign-out below found nothing.
    await expectSignInAsked(await get(stack.apiBase, '/console', desk));
    await expectSignInAsked(await get(stack.apiBase, '/console', desk));
    // The person comes back to the desk and signs out, from the console's own page.
    const since = new Date();
    expect(await signOutFromTheConsole(desk)).toBe(303);
    // Before: the desk's session was deleted as ended, so whose it was was lost, and the laptop's stayed live.
    await expectSignInAsked(await get(stack.apiBase, '/console', laptop));
    await expectSignOutAuditedAs('steady', since);
  });

  it('and from a browser whose sign-in no longer holds (signed in with the key’s secret before it was changed)', async () => {
    skewMs = 0;
    const desk = await signIn(stack.apiBase, keys.steady);
    const laptop = await signIn(stack.apiBase, keys.steady);
    // The desk signed in with the key's earlier secret (its fingerprint is not today's); the laptop with today's.
    const cookieHash = createHash('sha256').update(desk.split('=')[1]!).digest('hex');
    await stack.database.consoleSession.updateMany({
      where: { cookieHash },
      data: { keyFingerprint: 'an-earlier-secret' },
    });
    await expectSignInAsked(await get(stack.apiBase, '/console', desk));
    const home = await get(stack.apiBase, '/console', laptop);
    await home.arrayBuffer();
    expect(home.status).toBe(200);
    const since = new Date();
    expect(await signOutFromTheConsole(desk)).toBe(303);
    // Before: a session live by time whose sign-in no longer held was neither live nor ended, and the sign-out found
    // no one: the laptop's stayed live.
    await expectSignInAsked(await get(stack.apiBase, '/console', laptop));
    await expectSignOutAuditedAs('steady', since);
  });
});

/**
 * The sign-out since `since` is audited under the person whose sessions it ended, with no scope: it ended every one of
 * them. Before: with no name (the anonymous budget's), so the audit's filter by person never found it.
 */
async function expectSignOutAuditedAs(keyName: string, since: Date): Promise<void> {
  const row = await waitFor(
    'the sign-out audited',
    () =>
      stack.database.opsAction
        .findFirst({
          where: { at: { gte: since }, method: 'POST', path: '/console/sign-out' },
          orderBy: { id: 'desc' },
        })
        .then((found) => found ?? undefined),
    15_000,
  );
  expect({ keyName: row.keyName, status: row.status, channel: row.channel }).toEqual({
    keyName,
    status: 303,
    channel: 'console',
  });
}

describe('the key sign-in form shown again in the same browser (another tab, a reload)', () => {
  it('still signs in from the form shown first: the browser keeps one form token while it holds one', async () => {
    skewMs = 0;
    const address = nextAddress();
    const first = await signInFormCookie(stack.apiBase, address);
    // The second tab's page, with the browser's cookie: before, it set a new token, and the first tab's form was
    // refused (403) and counted as a failed sign-in.
    const again = await fetch(`${stack.apiBase}/console/sign-in`, { headers: { cookie: first, ...from(address) } });
    await again.arrayBuffer();
    const jar = cookiePair(again, 'walletflow_console_pre');
    const signedIn = await fetch(`${stack.apiBase}/console/sign-in`, {
      method: 'POST',
      redirect: 'manual',
      headers: {
        cookie: jar,
        'content-type': 'application/x-www-form-urlencoded',
        origin: stack.apiBase,
        ...from(address),
      },
      body: `_csrf=${first.split('=')[1]}&return=%2Fconsole&key=${encodeURIComponent(keys.lead)}`,
    });
    await signedIn.arrayBuffer();
    expect(signedIn.status).toBe(200);
    expect(setCookieOf(signedIn, 'walletflow_console')).toBeDefined();
  });
});

describe('sign-in attempts and wrong keys are limited across API processes', () => {
  it('counts wrong keys once for both processes, at the ops API and the console’s sign-in alike, IPv6 by the /64; the right key is never locked out', async () => {
    skewMs = freshLimitWindow();
    const guess = async (base: string, address: string) => {
      const response = await fetch(`${base}/ops/fundings`, {
        headers: { authorization: `Bearer ${newKey()}`, ...from(address) },
      });
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
        const pre = await signInFormCookie(base, rest);
        const signIn = await fetch(`${base}/console/sign-in`, {
          method: 'POST',
          headers: { cookie: pre, 'content-type': 'application/x-www-form-urlencoded', origin: base, ...from(rest) },
          body: `_csrf=${pre.split('=')[1]}&key=${newKey()}`,
        });
        expect(signIn.status).toBe(429);
        expect(await signIn.text()).toContain('Too many wrong keys');
        // The right key still works from there.
        const right = await fetch(`${base}/ops/fundings/${randomUUID()}`, {
          headers: { authorization: `Bearer ${keys.steady}`, ...from(rest) },
        });
        await right.arrayBuffer();
        expect(right.status).toBe(404);
      }
    }
    // Another /64 is another subscriber.
    expect((await guess(stack.apiBase, '2001:db8:77:2::1')).status).toBe(401);
  });

  it('counts only failed sign-ins: a person signing in again and again is never held back, nor is a right key after an address’s failures; starts through the provider have a looser limit of their own', async () => {
    skewMs = freshLimitWindow();
    // Staff behind one office address signing in, many times a minute: never refused.
    const office = '203.0.113.70';
    for (let index = 0; index < 25; index += 1) await signIn(processes()[index % 2]!, keys.steady, office);
    // Starting a sign-in through the provider (a GET a browser may repeat) does not count against signing in.
    const starts = '203.0.113.71';
    for (let index = 0; index < 30; index += 1) {
      const start = await fetch(`${processes()[index % 2]!}/console/sign-in/oidc`, {
        redirect: 'manual',
        headers: from(starts),
      });
      await start.arrayBuffer();
      expect(start.status, `start ${index + 1}`).not.toBe(429);
    }
    await signIn(stack.apiBase, keys.steady, starts);
    // Twenty failures (forms from no sign-in page, callbacks this browser did not start): the next failure is refused…
    const failing = '203.0.113.72';
    for (let index = 0; index < 20; index += 1) {
      const failure =
        index % 2 === 0
          ? await fetch(`${processes()[index % 4 === 0 ? 0 : 1]!}/console/sign-in`, {
              method: 'POST',
              headers: { 'content-type': 'application/x-www-form-urlencoded', origin: stack.apiBase, ...from(failing) },
              body: 'key=x',
            })
          : await fetch(
              `${processes()[index % 4 === 1 ? 0 : 1]!}/console/oidc/callback?state=${randomBytes(16).toString('base64url')}&code=x`,
              { headers: from(failing) },
            );
      await failure.arrayBuffer();
      expect(failure.status, `failure ${index + 1}`).toBeGreaterThanOrEqual(400);
      expect(failure.status, `failure ${index + 1}`).not.toBe(429);
    }
    const refused = await fetch(`${stack.apiBase}/console/oidc/callback?state=x&code=x`, { headers: from(failing) });
    expect(refused.status).toBe(429);
    expect(await refused.text()).toContain('Too many failed sign-ins');
    // …and a right key from that address still signs in.
    await signIn(restarted.apiBase, keys.steady, failing);
  });

  it('reads the sign-in form, which anyone may send, within its own small bounds: past 4 KB or 10 fields it is 413, unread; no form at all is a refused form', async () => {
    const address = nextAddress();
    const pre = await signInFormCookie(stack.apiBase, address);
    const post = (body: string) =>
      fetch(`${stack.apiBase}/console/sign-in`, {
        method: 'POST',
        redirect: 'manual',
        headers: {
          cookie: pre,
          'content-type': 'application/x-www-form-urlencoded',
          origin: stack.apiBase,
          ...from(address),
        },
        body,
      });
    const head = `_csrf=${pre.split('=')[1]}&return=%2Fconsole`;
    // Before: the console's form reader for signed-in pages (64 KB, 50 fields) read it first, and the key was tried.
    for (const body of [
      `${head}&key=${'k'.repeat(10 * 1024)}`,
      `${head}&key=x${Array.from({ length: 12 }, (_, index) => `&f${index}=1`).join('')}`,
    ]) {
      const answer = await post(body);
      await answer.arrayBuffer();
      expect(answer.status).toBe(413);
      expect(setCookieOf(answer, 'walletflow_console')).toBeUndefined();
    }
    // No form at all (no body, or not a form's type): refused as a form from no sign-in page (it was a 500).
    for (const init of [{}, { body: 'key=x', headers: { 'content-type': 'text/plain' } }]) {
      const answer = await fetch(`${stack.apiBase}/console/sign-in`, {
        method: 'POST',
        redirect: 'manual',
        ...init,
        headers: { cookie: pre, origin: stack.apiBase, ...from(address), ...init.headers },
      });
      await answer.arrayBuffer();
      expect(answer.status).toBe(403);
    }
    // Within bounds, the key signs in as ever.
    const fine = await post(`${head}&key=${encodeURIComponent(keys.steady)}`);
    await fine.arrayBuffer();
    expect(fine.status).toBe(200);
  });

  it('limits starts through the provider per address, more loosely than failures, across processes', async () => {
    skewMs = freshLimitWindow();
    const address = '203.0.113.73';
    for (let index = 0; index < CONSOLE_SIGN_IN_STARTS_PER_MINUTE; index += 1) {
      const start = await fetch(`${processes()[index % 2]!}/console/sign-in/oidc`, {
        redirect: 'manual',
        headers: from(address),
      });
      await start.arrayBuffer();
      expect(start.status, `start ${index + 1}`).not.toBe(429);
    }
    for (const base of processes()) {
      const limited = await fetch(`${base}/console/sign-in/oidc`, { redirect: 'manual', headers: from(address) });
      expect(limited.status).toBe(429);
      expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(await limited.text()).toContain('Too many sign-ins started');
    }
  });

  it('begins nothing and counts nothing for a start a page elsewhere makes (an image, a fetch, a frame) or a HEAD: the office’s people still start theirs', async () => {
    skewMs = freshLimitWindow();
    const office = '203.0.113.74';
    const before = await stack.database.consoleSignIn.count();
    const made: Record<string, string>[] = [
      { 'sec-fetch-dest': 'image', 'sec-fetch-mode': 'no-cors', 'sec-fetch-site': 'cross-site' },
      { 'sec-fetch-dest': 'empty', 'sec-fetch-mode': 'cors', 'sec-fetch-site': 'cross-site' },
      { 'sec-fetch-dest': 'iframe', 'sec-fetch-mode': 'navigate', 'sec-fetch-site': 'cross-site' },
      // A window another site opened, sent there again and again: no person's click.
      { 'sec-fetch-dest': 'document', 'sec-fetch-mode': 'navigate', 'sec-fetch-site': 'cross-site' },
      {
        'sec-fetch-dest': 'document',
        'sec-fetch-mode': 'navigate',
        'sec-fetch-site': 'none',
        'sec-purpose': 'prefetch',
      },
    ];
    const answers: number[] = [];
    for (let index = 0; index < CONSOLE_SIGN_IN_STARTS_PER_MINUTE + 10; index += 1) {
      const start = await fetch(`${processes()[index % 2]!}/console/sign-in/oidc`, {
        method: index % 10 === 9 ? 'HEAD' : 'GET',
        redirect: 'manual',
        headers: { ...from(office), ...made[index % made.length]! },
      });
      await start.arrayBuffer();
      answers.push(start.status);
    }
    expect(new Set(answers)).toEqual(new Set([400]));
    expect(await stack.database.consoleSignIn.count()).toBe(before);
    // People behind the same address, typing it or clicking a link on another site: not held back (no provider is
    // configured here: 404, not 429).
    const sites: Record<string, string>[] = [
      { 'sec-fetch-site': 'none' },
      { 'sec-fetch-site': 'cross-site', 'sec-fetch-user': '?1' },
    ];
    for (const site of sites) {
      const person = await fetch(`${stack.apiBase}/console/sign-in/oidc`, {
        redirect: 'manual',
        headers: { ...from(office), 'sec-fetch-dest': 'document', 'sec-fetch-mode': 'navigate', ...site },
      });
      await person.arrayBuffer();
      expect(person.status).toBe(404);
    }
  });

  it('answers a start whose identity provider cannot be reached 503 with Retry-After', async () => {
    const unreachable = await startPartnerApi({
      ...anotherProcess(),
      hardening: { now, sqlClock: now, attemptCountScope },
      console: {
        // Nothing listens on port 1: the provider's discovery is refused.
        oidc: {
          issuer: 'http://127.0.0.1:1/',
          clientId: 'walletflow-console',
          clientSecret: randomBytes(16).toString('hex'),
          roles: parseConsoleRoles(['walletflow-readers=read']),
          groupsClaim: 'groups',
        },
        idleMinutes: 15,
        sessionHours: 8,
        temporalUiUrl: undefined,
      },
    });
    try {
      const start = await fetch(`${unreachable.apiBase}/console/sign-in/oidc`, {
        redirect: 'manual',
        headers: { ...from('203.0.113.81'), 'sec-fetch-dest': 'document', 'sec-fetch-mode': 'navigate' },
      });
      // Before: 503 "try again in a minute" without Retry-After.
      expect(start.status).toBe(503);
      expect(Number(start.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(await start.text()).toContain('The identity provider cannot be reached just now.');
    } finally {
      await unreachable.close();
    }
  });

  it('counts failed console sign-ins once for both processes, an IPv4 client as itself however its address is written', async () => {
    skewMs = freshLimitWindow();
    for (const [address, later] of [
      // 203.0.113.60 as an IPv4-mapped IPv6 address, in hex.
      ['203.0.113.60', '::ffff:cb00:713c'],
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
        const limited = await fetch(`${base}/console/sign-in`, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded', origin: base, ...from(later) },
          body: 'key=x',
        });
        expect(limited.status).toBe(429);
        expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
        expect(await limited.text()).toContain('Too many failed sign-ins');
      }
    }
  });
});
