// Embedded-app sessions on real infrastructure: the session URL (sender allowlist, every
// malformed call refused with nothing stored, an answer before onboarding runs), the landing page
// (single use, 404/410, loading state, web session, CSRF-protected forms scoped to the session),
// the onboarding workflow creating the EMBEDDED link, the ops profile route for every granted
// scope, and an expired embedded refresh token ending in "reopen the app from your wallet".
import { randomUUID } from 'node:crypto';
import { Agent, request } from 'undici';
import { createLedger } from '../../ledger/ledger.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { WorkflowHandle } from '@temporalio/client';
import { hashBearer } from '../../links/embedded-sessions.ts';
import { actorNamedIn } from '../../domain/actor.ts';
import { opsRoutes } from '../../api/ops/ops-routes.ts';
import { onboardingWorkflowId } from '../../workflows/onboard-embedded-session.contract.ts';
import { startPartnerStack, type PartnerStack } from '../support/partner-stack.ts';
import { createEmbeddedLink } from '../support/embedded-link.ts';
import { waitUntil } from '../support/wait-for.ts';

let stack: PartnerStack;
const fromOutside = new Agent({ localAddress: '127.0.0.2' });

beforeAll(async () => {
  // The worker starts later: the session URL must answer without it.
  stack = await startPartnerStack();
});
afterAll(async () => {
  await fromOutside.close();
  await stack?.close();
});

const uuidV4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/** Rows stored under these Request-Reference-Nos (other test files share the database). */
async function rowsFor(references: string[]): Promise<number> {
  return stack.database.embeddedSession.count({ where: { requestReferenceNo: { in: references } } });
}

async function callSessionUrl(options: {
  body?: string;
  headers?: Record<string, string>;
  dispatcher?: Agent;
  target?: PartnerStack;
}): Promise<{ status: number; body: Record<string, unknown>; ms: number; reference: string }> {
  const started = Date.now();
  const reference = randomUUID();
  const response = await request(`${(options.target ?? stack).apiBase}/embedded/session`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'request-reference-no': reference, ...options.headers },
    body: options.body ?? '{}',
    ...(options.dispatcher ? { dispatcher: options.dispatcher } : {}),
  });
  const text = await response.body.text();
  return {
    status: response.statusCode,
    body: text ? (JSON.parse(text) as Record<string, unknown>) : {},
    ms: Date.now() - started,
    reference,
  };
}

/** Every payload of a workflow's history (inputs, activity arguments and results), as text. */
async function historyPayloads(handle: WorkflowHandle): Promise<string> {
  const history = await handle.fetchHistory();
  return (history.events ?? [])
    .flatMap((event) => [
      event.workflowExecutionStartedEventAttributes?.input,
      event.activityTaskScheduledEventAttributes?.input,
      event.activityTaskCompletedEventAttributes?.result,
      event.workflowExecutionCompletedEventAttributes?.result,
    ])
    .flatMap((payloads) => payloads?.payloads ?? [])
    .map((payload) => Buffer.from(payload.data ?? []).toString('utf8'))
    .join('\n');
}

async function freshTokens(target: PartnerStack = stack) {
  const user = await target.admin.createUser({ kycLevel: 'KYC1', balance: '500.00' });
  return target.admin.embeddedTokens(user.userId);
}

/** A browser-like client: keeps the web session cookie, never follows redirects. */
function browser() {
  let cookie: string | undefined;
  return {
    get cookie() {
      return cookie;
    },
    async get(path: string) {
      const response = await fetch(`${stack.apiBase}${path}`, {
        redirect: 'manual',
        headers: cookie ? { cookie } : {},
      });
      const setCookie = response.headers.getSetCookie()[0];
      if (setCookie) cookie = setCookie.split(';')[0];
      return { status: response.status, headers: response.headers, text: await response.text(), setCookie };
    },
    async post(path: string, fields: Record<string, string>) {
      const response = await fetch(`${stack.apiBase}${path}`, {
        method: 'POST',
        redirect: 'manual',
        headers: { 'content-type': 'application/x-www-form-urlencoded', ...(cookie ? { cookie } : {}) },
        body: new URLSearchParams(fields).toString(),
      });
      return { status: response.status, location: response.headers.get('location'), text: await response.text() };
    },
  };
}

async function launch(userId: string): Promise<{ sessionId: string; landingUrl: string }> {
  const answer = await stack.admin.call<{ sessionId: string; landingUrl: string }>('POST', '/launch', { userId });
  expect(answer.status).toBe(200);
  return answer.body;
}

const field = (html: string, name: string) => new RegExp(`name="${name}" value="([^"]+)"`).exec(html)?.[1] ?? '';

/** Opens the tile for a new user and lands: the browser then holds a ready web session. */
async function landedUser(options: { kycLevel?: 'KYC0' | 'KYC1'; firstName?: string; balance?: string } = {}) {
  await stack.startWorker();
  const user = await stack.admin.createUser({
    kycLevel: options.kycLevel ?? 'KYC1',
    balance: options.balance ?? '500.00',
    ...(options.firstName ? { firstName: options.firstName } : {}),
  });
  const { sessionId } = await launch(user.userId);
  const client = browser();
  // The landing URL itself answers with the partner page (and the web session's cookie).
  const home = await client.get(`/app?sessionId=${sessionId}`);
  expect(home.status).toBe(200);
  expect(home.text).toContain('name="csrf"');
  const link = await stack.database.link.findUniqueOrThrow({
    where: { profileId_kind: { profileId: user.profileId, kind: 'EMBEDDED' } },
  });
  // A withdrawal draws on the user's partner balance (section 10): give them one.
  await createLedger().adjust(stack.database, {
    idempotencyKey: `landed-${randomUUID()}`,
    account: `USER:${link.partnerUserId}`,
    currency: 'PHP',
    amount: 1_000_000n,
    reason: 'test balance',
    fingerprint: '0'.repeat(64),
  });
  return { user, client, home, link, sessionId };
}

describe('session URL: sender allowlist', () => {
  it('refuses a sender outside SESSION_ALLOWED_IPS with 403 and stores nothing', async () => {
    const tokens = await freshTokens();
    const answer = await callSessionUrl({ body: JSON.stringify(tokens), dispatcher: fromOutside });
    expect(answer.status).toBe(403);
    expect(answer.body).toMatchObject({ code: 'FORBIDDEN', message: expect.any(String) });
    // X-Forwarded-For is not believed without a configured trusted proxy.
    const spoofed = await callSessionUrl({
      body: JSON.stringify(tokens),
      dispatcher: fromOutside,
      headers: { 'x-forwarded-for': '127.0.0.1' },
    });
    expect(spoofed.status).toBe(403);
    expect(await rowsFor([answer.reference, spoofed.reference])).toBe(0);
  });

  it('behind a configured trusted proxy, judges the forwarded client address', async () => {
    const proxied = await startPartnerStack({
      sessionAllowedIps: ['203.0.113.7', '2001:db8::/32'],
      trustedProxies: ['127.0.0.1'],
    });
    try {
      const tokens = await freshTokens(proxied);
      const allowed = await callSessionUrl({
        target: proxied,
        body: JSON.stringify(tokens),
        headers: { 'x-forwarded-for': '203.0.113.7' },
      });
      expect(allowed.status).toBe(200);
      const allowedV6 = await callSessionUrl({
        target: proxied,
        body: JSON.stringify(await freshTokens(proxied)),
        headers: { 'x-forwarded-for': '2001:db8::42' },
      });
      expect(allowedV6.status).toBe(200);
      const other = await callSessionUrl({
        target: proxied,
        body: JSON.stringify(tokens),
        headers: { 'x-forwarded-for': '203.0.113.8' },
      });
      expect(other.status).toBe(403);
      // The proxy itself is not an allowed sender.
      const direct = await callSessionUrl({ target: proxied, body: JSON.stringify(tokens) });
      expect(direct.status).toBe(403);
      // A proxy that is not trusted cannot forward for anyone.
      const untrusted = await callSessionUrl({
        target: proxied,
        body: JSON.stringify(tokens),
        dispatcher: fromOutside,
        headers: { 'x-forwarded-for': '203.0.113.7' },
      });
      expect(untrusted.status).toBe(403);
    } finally {
      await proxied.close();
    }
  });
});

describe('session URL: malformed calls', () => {
  it('answers each with 400 { code, message } and stores nothing', async () => {
    const tokens = await freshTokens();
    const now = Math.floor(Date.now() / 1000);
    const body = (patch: Record<string, unknown>) => JSON.stringify({ ...tokens, ...patch });
    const withoutField = (name: string) => {
      const copy: Record<string, unknown> = { ...tokens };
      delete copy[name];
      return JSON.stringify(copy);
    };
    const cases: Array<[string, Parameters<typeof callSessionUrl>[0]]> = [
      ['wrong content type', { body: JSON.stringify(tokens), headers: { 'content-type': 'text/plain' } }],
      [
        'form content type',
        {
          body: new URLSearchParams({ accessToken: tokens.accessToken }).toString(),
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
        },
      ],
      ['missing Request-Reference-No', { body: JSON.stringify(tokens), headers: { 'request-reference-no': '' } }],
      [
        'Request-Reference-No not a UUID',
        { body: JSON.stringify(tokens), headers: { 'request-reference-no': 'ref-123' } },
      ],
      [
        'Request-Reference-No a UUIDv1',
        { body: JSON.stringify(tokens), headers: { 'request-reference-no': 'c232ab00-9414-11ec-b3c8-9f6bdeced846' } },
      ],
      ['not JSON', { body: '{"accessToken":' }],
      ['JSON but not an object', { body: '[1,2]' }],
      ['missing accessToken', { body: withoutField('accessToken') }],
      ['missing refreshToken', { body: withoutField('refreshToken') }],
      ['missing expiresAt', { body: withoutField('expiresAt') }],
      ['accessToken a JWT, not a JWE', { body: body({ accessToken: tokens.refreshToken }) }],
      ['accessToken five parts of garbage', { body: body({ accessToken: 'a.b.c.d.e' }) }],
      ['refreshToken not a JWT', { body: body({ refreshToken: 'opaque-refresh-token' }) }],
      ['refreshToken a JWE', { body: body({ refreshToken: tokens.accessToken }) }],
      ['expiresAt in the past', { body: body({ expiresAt: now - 10 }) }],
      ['expiresAt not an integer', { body: body({ expiresAt: now + 600.5 }) }],
      ['expiresAt a string', { body: body({ expiresAt: String(now + 600) }) }],
      ['expiresAt in milliseconds', { body: body({ expiresAt: (now + 600) * 1000 }) }],
      ['oversized body', { body: body({ accessToken: `${tokens.accessToken}${'A'.repeat(20_000)}` }) }],
    ];
    const references: string[] = [];
    for (const [name, call] of cases) {
      const answer = await callSessionUrl(call);
      references.push(answer.reference);
      expect(answer.status, name).toBe(400);
      expect(answer.body, name).toEqual({ code: expect.any(String), message: expect.any(String) });
      expect(JSON.stringify(answer.body), name).not.toContain(tokens.accessToken);
    }
    expect(await rowsFor(references)).toBe(0);
    // The same tokens in a well-formed call are accepted: the refusals were about the form. A
    // field the interface does not name is ignored (and not stored), not refused; so is an expiry
    // days ahead of our clock (the wallet service's clock may run ahead).
    const good = await callSessionUrl({ body: JSON.stringify({ ...tokens, tokenType: 'Bearer' }) });
    expect(good.status).toBe(200);
    const ahead = await callSessionUrl({ body: body({ expiresAt: now + 8 * 86_400 }) });
    expect(ahead.status).toBe(200);
  });
});

describe('session URL and landing page', () => {
  it('answers at once with a UUIDv4 while no worker runs; the landing page shows a loading state until onboarding links the user (the profile unreachable, so not on demand either)', async () => {
    const user = await stack.admin.createUser({ kycLevel: 'KYC1', balance: '500.00', firstName: 'Ana' });
    const tokens = await stack.admin.embeddedTokens(user.userId);
    const answer = await callSessionUrl({ body: JSON.stringify(tokens) });
    expect(answer.status).toBe(200);
    expect(Object.keys(answer.body)).toEqual(['sessionId']);
    const sessionId = String(answer.body.sessionId);
    expect(sessionId).toMatch(uuidV4);
    // At once: not after onboarding, which no worker runs (a wall-clock bound would measure the machine, not this).

    // Stored: hashed id, encrypted tokens; onboarding started by the dispatcher right after the
    // answer (its outbox row gone once the start succeeded), but not done (no worker yet).
    const row = await stack.database.embeddedSession.findFirstOrThrow({
      where: { requestReferenceNo: answer.reference },
    });
    expect(row).toMatchObject({ status: 'PENDING', linkId: null, consumedAt: null });
    expect(row.sessionIdHash).not.toContain(sessionId);
    expect(Buffer.from(row.accessTokenEncrypted!).includes(Buffer.from(tokens.accessToken))).toBe(false);
    expect(Buffer.from(row.refreshTokenEncrypted!).includes(Buffer.from(tokens.refreshToken))).toBe(false);
    expect(row.sessionIdHash).toBe(hashBearer(sessionId));
    expect(row.expiresAt.getTime() - row.createdAt.getTime()).toBeGreaterThan(110_000);
    expect(row.expiresAt.getTime() - row.createdAt.getTime()).toBeLessThanOrEqual(121_000);
    const handle = stack.temporal.workflow.getHandle(onboardingWorkflowId(row.id));
    await waitUntil(
      () => stack.database.onboardingOutbox.count({ where: { sessionId: row.id } }),
      (pending) => pending === 0,
      10_000,
    );
    expect((await handle.describe()).status.name).toBe('RUNNING');
    expect(await historyPayloads(handle)).toContain(row.id);

    // The web view arrives before onboarding is done, and the wallet does not answer the profile
    // call that would onboard the user on demand (links/embedded-onboarding.ts): the landing URL
    // answers with the web session's cookie and a loading page that drops the id from its address
    // (a reload asks for /app), and keeps answering the loading page at /app.
    await stack.admin.setFaults([{ endpoint: 'op.profile', mode: 'error-before-effect', rate: 1 }]);
    const client = browser();
    const landing = await client.get(`/app?sessionId=${sessionId}`);
    expect(landing.status).toBe(200);
    expect(landing.setCookie).toMatch(
      /^walletflow_app=[A-Za-z0-9_-]{43}; Path=\/app; Max-Age=\d+; HttpOnly; SameSite=Lax$/,
    );
    expect(landing.text).toContain('Opening your account');
    // The page's script (a file under the response's nonce) takes the id out of the address.
    const nonce = /script-src 'nonce-([^']+)'/.exec(landing.headers.get('content-security-policy') ?? '')?.[1];
    const [, scriptNonce, scriptSrc] =
      /<script nonce="([^"]+)" src="(\/app\/assets\/loading\.[0-9a-f]{16}\.js)"><\/script>/.exec(landing.text) ?? [];
    expect(scriptSrc, landing.text).toBeDefined();
    expect(scriptNonce).toBe(nonce);
    const script = await fetch(`${stack.apiBase}${scriptSrc}`);
    expect(script.status).toBe(200);
    expect(script.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(script.headers.get('x-content-type-options')).toBe('nosniff');
    expect(script.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expect(await script.text()).toContain("history.replaceState(null, '', location.pathname)");
    expect(landing.text).toContain('<meta http-equiv="refresh" content="2;url=/app">');
    const loading = await client.get('/app');
    expect(loading.status).toBe(200);
    expect(loading.text).toContain('Opening your account');
    expect(loading.headers.get('cache-control')).toBe('no-store');
    expect(loading.headers.get('content-security-policy')).toContain("script-src 'nonce-");
    expect(await (await fetch(`${stack.apiBase}/app/status`, { headers: { cookie: client.cookie! } })).json()).toEqual({
      state: 'pending',
    });

    await stack.admin.clearFaults();
    await stack.startWorker();
    expect(await handle.result()).toMatchObject({ status: 'READY', errorCode: null, linkId: expect.any(String) });
    const payloads = await historyPayloads(handle);
    for (const secret of [tokens.accessToken, tokens.refreshToken, sessionId, 'Ana'])
      expect(payloads).not.toContain(secret);
    const home = await client.get('/app');
    expect(home.status).toBe(200);
    expect(home.text).toContain('Hello, Ana');
    expect(home.text).toContain('Verified (KYC1)');
    expect(home.text).not.toMatch(/target="_blank"|window\.open|type="file"|capture=/);

    // The link: EMBEDDED, by the profile's profileId, holding the delivered tokens; the session row keeps none.
    const link = await stack.database.link.findUniqueOrThrow({
      where: { profileId_kind: { profileId: user.profileId, kind: 'EMBEDDED' } },
    });
    expect(link).toMatchObject({ status: 'ACTIVE', partnerUserId: `wallet:${user.profileId}` });
    expect(link.scopes).toContain('openid');
    expect((await stack.tokens.read(stack.database, link.id))?.accessToken).toBe(tokens.accessToken);
    const done = await stack.database.embeddedSession.findUniqueOrThrow({ where: { id: row.id } });
    expect(done).toMatchObject({
      status: 'READY',
      linkId: link.id,
      firstName: 'Ana',
      kycStatus: 'KYC1',
      accessTokenEncrypted: null,
      refreshTokenEncrypted: null,
    });
  });

  // Found by reads: LINK_UNLINKED (links/embedded-onboarding.ts) answered 503 "the wallet did not answer in time"; a
  // failed onboarding, 503 with no Retry-After, for a state that coming back to cannot change (its tokens are gone).
  it.each([
    { errorCode: 'LINK_UNLINKED', why: 'found its link revoked since it began' },
    { errorCode: 'ONBOARDING_FAILED', why: 'gave up (the wallet did not answer in time)' },
  ])(
    'a session whose onboarding $why ($errorCode) asks the user to open the app again: 401, not a 503 to come back to',
    async ({ errorCode }) => {
      const user = await stack.admin.createUser({ kycLevel: 'KYC1' });
      const { sessionId } = await launch(user.userId);
      await stack.database.embeddedSession.update({
        where: { sessionIdHash: hashBearer(sessionId) },
        data: { status: 'FAILED', errorCode, linkId: null },
      });
      const page = await browser().get(`/app?sessionId=${sessionId}`);
      expect(page.status).toBe(401);
      expect(page.text).toContain('open the app again from your wallet');
    },
  );

  it('stores a session whose refresh token’s exp is no date (milliseconds sent as seconds, or negative): 200, its expiry unknown, never 500', async () => {
    const segment = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
    for (const exp of [1e13, -1e13]) {
      const tokens = await freshTokens();
      const refreshToken = `${segment({ alg: 'HS256', typ: 'JWT' })}.${segment({ sub: 'someone', exp })}.c2ln`;
      const answer = await callSessionUrl({ body: JSON.stringify({ ...tokens, refreshToken }) });
      // Before: 500 INTERNAL ("the session could not be stored; retry"), every time the wallet called again.
      expect([answer.status, Object.keys(answer.body)], String(exp)).toEqual([200, ['sessionId']]);
      const row = await stack.database.embeddedSession.findFirstOrThrow({
        where: { requestReferenceNo: answer.reference },
      });
      expect(row.refreshTokenExpiresAt, String(exp)).toBeNull();
      // Onboarded all the same, the token's lifetime taken from the interface (a second read found onboarding reading
      // the exp again with a copy of its own, and failing on the same invalid Date).
      await stack.startWorker();
      // Its workflow is started by the outbox's dispatcher, a moment after the answer.
      await waitUntil(
        () => stack.database.onboardingOutbox.count({ where: { sessionId: row.id } }),
        (pending) => pending === 0,
        10_000,
      );
      const onboarded = await stack.temporal.workflow.getHandle(onboardingWorkflowId(row.id)).result();
      expect(onboarded, String(exp)).toMatchObject({ status: 'READY', errorCode: null });
    }
  });

  it('a reused session id gets 410, an unknown or malformed one 404, an expired one 410 — never partner content', async () => {
    const user = await stack.admin.createUser({ kycLevel: 'KYC1', firstName: 'Liza' });
    const { sessionId } = await launch(user.userId);
    const first = browser();
    expect((await first.get(`/app?sessionId=${sessionId}`)).status).toBe(200);

    const reuse = await browser().get(`/app?sessionId=${sessionId}`);
    expect(reuse.status).toBe(410);
    expect(reuse.text).toContain('already used');
    expect(reuse.text).not.toContain('Liza');
    expect(reuse.setCookie).toBeUndefined();
    // The same browser asking for the original URL again (it holds the web session) gets the same answer.
    expect((await first.get(`/app?sessionId=${sessionId}`)).status).toBe(410);

    const unknown = await browser().get(`/app?sessionId=${randomUUID()}`);
    expect(unknown.status).toBe(404);
    expect((await browser().get('/app?sessionId=not-a-session')).status).toBe(404);
    expect((await browser().get('/app?sessionId=a&sessionId=b')).status).toBe(404);
    expect((await browser().get('/app')).status).toBe(401);

    const late = await launch(user.userId);
    await stack.database.embeddedSession.update({
      where: { sessionIdHash: hashBearer(late.sessionId) },
      data: { expiresAt: new Date(Date.now() - 1000) },
    });
    const expired = await browser().get(`/app?sessionId=${late.sessionId}`);
    expect(expired.status).toBe(410);
    expect(expired.text).toContain('expired');
    expect(expired.text).not.toContain('Liza');
  });

  it('only one of many concurrent requests with the same session id wins it', async () => {
    const user = await stack.admin.createUser({ kycLevel: 'KYC1' });
    const { sessionId } = await launch(user.userId);
    const answers = await Promise.all(Array.from({ length: 8 }, () => browser().get(`/app?sessionId=${sessionId}`)));
    expect(answers.map((answer) => answer.status).sort()).toEqual([200, 410, 410, 410, 410, 410, 410, 410]);
  });

  it('shows the upgrade hint to a KYC0 user', async () => {
    const { home } = await landedUser({ kycLevel: 'KYC0', firstName: 'Ramon' });
    expect(home.text).toContain('Hello, Ramon');
    expect(home.text).toContain('Not upgraded (KYC0)');
    expect(home.text).toContain('Upgrade your account in the wallet app');
  });
});

describe('landing page forms', () => {
  it('refuses a form without the session’s CSRF token (403) and starts nothing', async () => {
    const { client, home, link } = await landedUser();
    const fundings = () => stack.database.funding.count({ where: { linkId: link.id } });
    const noToken = await client.post('/app/withdraw', { formKey: field(home.text, 'formKey'), amount: '10.00' });
    expect(noToken.status).toBe(403);
    const wrongToken = await client.post('/app/withdraw', {
      csrf: 'x'.repeat(43),
      formKey: field(home.text, 'formKey'),
      amount: '10.00',
    });
    expect(wrongToken.status).toBe(403);
    // Another session's token does not work either.
    const other = await landedUser();
    const foreign = await client.post('/app/withdraw', {
      csrf: field(other.home.text, 'csrf'),
      formKey: field(home.text, 'formKey'),
      amount: '10.00',
    });
    expect(foreign.status).toBe(403);
    expect(await fundings()).toBe(0);
  });

  it('a double submit of one withdraw form is one funding; its status is visible to this web session only', async () => {
    const { client, home, link, user } = await landedUser({ balance: '0.00' });
    const fields = { csrf: field(home.text, 'csrf'), formKey: field(home.text, 'formKey'), amount: '25' };
    const [first, second] = await Promise.all([
      client.post('/app/withdraw', fields),
      client.post('/app/withdraw', fields),
    ]);
    expect(first.status).toBe(303);
    expect(second.location).toBe(first.location);
    const fundingId = first.location!.split('/').pop()!;
    const funding = await stack.database.funding.findUniqueOrThrow({ where: { id: fundingId } });
    expect(funding).toMatchObject({ recipientType: 'TOKEN', linkId: link.id });

    const status = await waitUntil(
      async () =>
        (await (
          await fetch(`${stack.apiBase}/app/withdrawals/${fundingId}/status`, { headers: { cookie: client.cookie! } })
        ).json()) as Record<string, unknown>,
      (value) => value.final === true,
    );
    expect(status).toMatchObject({
      status: 'APPROVED',
      title: 'Withdrawal approved',
      message: 'PHP 25.00 was added to your wallet.',
    });
    expect((await stack.admin.user(user.userId)).balance).toBe('25.00');
    const page = await client.get(`/app/withdrawals/${fundingId}`);
    expect(page.text).toContain('Withdrawal approved');

    const stranger = await landedUser();
    expect((await stranger.client.get(`/app/withdrawals/${fundingId}`)).status).toBe(404);
    expect(
      (
        await fetch(`${stack.apiBase}/app/withdrawals/${fundingId}/status`, {
          headers: { cookie: stranger.client.cookie! },
        })
      ).status,
    ).toBe(404);
    expect((await fetch(`${stack.apiBase}/app/withdrawals/${fundingId}/status`)).status).toBe(401);
  });

  it('an invalid amount re-shows the form with a message and starts nothing', async () => {
    const { client, home, link } = await landedUser();
    // A decimal comma too (found by a read: every comma was dropped, so 1,50 deposited 150.00).
    for (const amount of ['-5', '1,50', '1,5', '12,3', '1,500', '1,000.50', ',500']) {
      const answer = await client.post('/app/deposit', {
        csrf: field(home.text, 'csrf'),
        formKey: field(home.text, 'formKey'),
        amount,
      });
      expect(answer.status, amount).toBe(400);
      expect(answer.text).toContain('Enter an amount in pesos');
    }
    expect(await stack.database.payment.count({ where: { linkId: link.id } })).toBe(0);
  });

  it('records a withdrawal and a deposit from the page as the user’s own, with the session they opened it with', async () => {
    // Found by a read: the page's fundings and payments said "requested", by nobody (the console: "By: walletflow");
    // a day later, its sessions purged, nothing tied the money to the user's session.
    const { client, home, link, sessionId } = await landedUser();
    const { requestReferenceNo } = await stack.database.embeddedSession.findUniqueOrThrow({
      where: { sessionIdHash: hashBearer(sessionId) },
    });
    const byTheUser = `by wallet user ${link.partnerUserId} (app:${requestReferenceNo})`;
    const withdrawn = await client.post('/app/withdraw', {
      csrf: field(home.text, 'csrf'),
      formKey: field(home.text, 'formKey'),
      amount: '5',
    });
    expect(withdrawn.status).toBe(303);
    const fundingId = withdrawn.location!.split('/').pop()!;
    const again = await client.get('/app');
    const deposited = await client.post('/app/deposit', {
      csrf: field(again.text, 'csrf'),
      formKey: field(again.text, 'formKey'),
      amount: '5',
    });
    expect(deposited.status).toBe(303);
    const paymentId = deposited.location!.split('/').pop()!;
    const requested = async () => [
      (await stack.database.fundingEvent.findFirstOrThrow({ where: { fundingId, status: 'PENDING' } })).detail,
      (await stack.database.paymentEvent.findFirstOrThrow({ where: { paymentId, status: 'PENDING' } })).detail,
    ];
    expect(await requested()).toEqual([`funding requested ${byTheUser}`, `payment requested ${byTheUser}`]);
    expect(actorNamedIn(`funding requested ${byTheUser}`)).toBe(`${link.partnerUserId} (app:${requestReferenceNo})`);
  });

  it('ends with a revoke of its link: a copied cookie reads nothing, and does nothing once the user links again', async () => {
    // Found by a read: web sessions outlived an unlink (the page and its activity still answered), and a new login of
    // the same wallet made the same link ACTIVE again, so every earlier cookie could withdraw and deposit again.
    const { client, home, link, user } = await landedUser();
    // A second tile opened before the revoke, its session id used only after it (a second read: its web session was
    // made on the revoked link, and came back with a relink).
    const older = await launch(user.userId);
    await waitUntil(
      () => stack.database.embeddedSession.findUniqueOrThrow({ where: { sessionIdHash: hashBearer(older.sessionId) } }),
      (row) => row.status === 'READY',
    );
    const revoked = await stack.opsFetch(`/ops/links/${link.id}`, { method: 'DELETE' });
    expect(revoked.status).toBeLessThan(300);
    expect((await client.get('/app/activity')).status).toBe(401);
    const lateClient = browser();
    const late = await lateClient.get(`/app?sessionId=${older.sessionId}`);
    expect(late.status).toBe(401);
    expect(late.text).toContain('open the app again from your wallet');
    // The user opens the tile again: the same link, ACTIVE again, with new tokens.
    const { sessionId } = await launch(user.userId);
    expect((await browser().get(`/app?sessionId=${sessionId}`)).status).toBe(200);
    expect((await stack.database.link.findUniqueOrThrow({ where: { id: link.id } })).status).toBe('ACTIVE');
    const copied = await client.post('/app/withdraw', {
      csrf: field(home.text, 'csrf'),
      formKey: field(home.text, 'formKey'),
      amount: '5',
    });
    expect(copied.status).toBe(401);
    if (lateClient.cookie) expect((await lateClient.get('/app')).status).toBe(401);
    expect(await stack.database.funding.count({ where: { linkId: link.id } })).toBe(0);
  });
});

describe('GET /ops/links/{linkId}/profile', () => {
  it('reads the link named by its id in upper case as the same link: its profile, never a 500', async () => {
    // Found by a read: the id was taken as given; PostgreSQL found the link and its tokens whatever the case, and the
    // tokens, sealed under the lower-case id, failed to open under the upper-case one: 500 INTERNAL, logged as a
    // stored token that failed authentication.
    const { link, user } = await landedUser({ firstName: 'Upper' });
    const response = await stack.opsFetch(`/ops/links/${link.id.toUpperCase()}/profile`);
    expect(response.status).toBe(200);
    const body = (await response.json()) as { profile: { openid: { id: string } } };
    expect(body.profile.openid.id).toBe(user.userId);
  });

  it('returns every scope the sandbox grants, decrypted and validated, fetched fresh each time', async () => {
    const { link, user } = await landedUser({ firstName: 'Carmela' });
    const response = await stack.opsFetch(`/ops/links/${link.id}/profile`);
    expect(response.status).toBe(200);
    const body = (await response.json()) as {
      requestReferenceNo: string;
      scopes: string[];
      fetchedAt: string;
      documentUrlsExpireAt: string | null;
      profile: Record<string, Record<string, unknown>>;
    };
    expect(body.scopes).toEqual(stack.sandbox.partner.scopes);
    expect(body.scopes).toEqual(['openid', 'profile', 'contact', 'address', 'workDetails', 'identity_document']);
    expect(body.profile.openid).toEqual({ id: user.userId, profileId: user.profileId, kycStatus: 'KYC1' });
    expect(body.profile.profile).toMatchObject({
      name: { firstName: 'Carmela' },
      birthDetails: { birthDate: expect.stringMatching(/^\d{2}-\d{2}-\d{4}$/) },
    });
    expect(body.profile.contact?.contact).toEqual(
      expect.arrayContaining([expect.objectContaining({ type: 'MSISDN', value: user.mobile })]),
    );
    expect(body.profile.address?.address).toEqual([expect.objectContaining({ type: 'PRESENT', country: 'PH' })]);
    expect(body.profile.workDetails?.workDetails).toMatchObject({
      natureOfWork: expect.any(String),
      sourceOfIncome: expect.any(String),
    });
    const documents = body.profile.identity_document?.identityDocument as Array<{ frontUrl: string | null }>;
    expect(documents[0]?.frontUrl).toMatch(/^https?:\/\//);
    expect(Date.parse(body.documentUrlsExpireAt!) - Date.parse(body.fetchedAt)).toBe(15 * 60_000);

    // Never cached: a second read is a second profile call (each answer names its wallet call).
    const again = (await (await stack.opsFetch(`/ops/links/${link.id}/profile`)).json()) as typeof body;
    expect(again.requestReferenceNo).not.toBe(body.requestReferenceNo);
    const calls = await stack.database.walletCall.findMany({
      where: { requestReferenceNo: { in: [body.requestReferenceNo, again.requestReferenceNo] } },
    });
    expect(calls.map((call) => call.operation)).toEqual(['op.profile', 'op.profile']);
    // Nothing of the URLs was stored.
    const stored = JSON.stringify(await stack.database.embeddedSession.findMany({ where: { linkId: link.id } }));
    expect(stored).not.toContain('http');
  });

  it('a HEAD of it, or of any other ops GET, calls no wallet and changes nothing: the profile’s is 405', async () => {
    // A monitor or a link checker's HEAD: the GET of the profile calls the wallet (and may refresh, or give up, the
    // user's tokens), so its HEAD is refused; every other GET's HEAD answers from what is stored.
    const { link } = await landedUser();
    const today = new Date().toISOString().slice(0, 10);
    const valueOf: Record<string, string> = {
      linkId: link.id,
      account: encodeURIComponent(`USER:${link.partnerUserId}`),
      date: today,
    };
    const callsBefore = await stack.database.walletCall.count();
    const linkBefore = await stack.database.link.findUniqueOrThrow({ where: { id: link.id } });
    const answers: Record<string, number> = {};
    for (const route of opsRoutes.filter((candidate) => candidate.method === 'get')) {
      const path = route.path.replace(/\{(\w+)\}/g, (_whole, name: string) => valueOf[name] ?? randomUUID());
      const answer = await stack.opsFetch(path, { method: 'HEAD' });
      answers[route.path] = answer.status;
    }
    expect(answers['/ops/links/{linkId}/profile']).toBe(405);
    expect(Object.entries(answers).filter(([, status]) => status >= 500)).toEqual([]);
    const profileHead = await stack.opsFetch(`/ops/links/${link.id}/profile`, { method: 'HEAD' });
    expect(profileHead.headers.get('allow')).toBe('GET');
    expect(await stack.database.walletCall.count()).toBe(callsBefore);
    expect(await stack.database.link.findUniqueOrThrow({ where: { id: link.id } })).toEqual(linkBefore);
    // The GET still reads the profile.
    expect((await stack.opsFetch(`/ops/links/${link.id}/profile`)).status).toBe(200);
  });

  it('404 for an unknown link, 409 for an unlinked one', async () => {
    expect((await stack.opsFetch(`/ops/links/${randomUUID()}/profile`)).status).toBe(404);
    const { link } = await landedUser();
    expect((await stack.opsFetch(`/ops/links/${link.id}`, { method: 'DELETE' })).status).toBe(200);
    const unlinked = await stack.opsFetch(`/ops/links/${link.id}/profile`);
    expect(unlinked.status).toBe(409);
    expect(await unlinked.json()).toMatchObject({ code: 'LINK_UNLINKED' });
  });

  it('tells a read the wallet slowed down when to come back: its 429 on the profile, or on the token refresh, is 503 with Retry-After', async () => {
    const { link } = await landedUser();
    const expired = await createEmbeddedLink(stack, { kycLevel: 'KYC1' }, { expired: true });
    try {
      await stack.admin.setFaults([{ endpoint: 'op.profile', mode: 'rate-limited', rate: 1, retryAfterSeconds: 7 }]);
      // Before: 502 WALLET_UNAVAILABLE, and no Retry-After.
      const profile = await stack.opsFetch(`/ops/links/${link.id}/profile`);
      expect([profile.status, profile.headers.get('retry-after')]).toEqual([503, '7']);
      expect(await profile.json()).toMatchObject({ code: 'WALLET_RATE_LIMITED' });
      await stack.admin.setFaults([{ endpoint: 'op.tokens', mode: 'rate-limited', rate: 1, retryAfterSeconds: 9 }]);
      // Before: 503 TOKEN_REFRESH_FAILED without Retry-After.
      const refresh = await stack.opsFetch(`/ops/links/${expired.linkId}/profile`);
      expect([refresh.status, refresh.headers.get('retry-after')]).toEqual([503, '9']);
      expect(await refresh.json()).toMatchObject({ code: 'TOKEN_REFRESH_FAILED' });
    } finally {
      await stack.admin.clearFaults();
    }
    // The link stays usable: once the wallet takes reads again, the profile is read.
    expect((await stack.opsFetch(`/ops/links/${expired.linkId}/profile`)).status).toBe(200);
  });

  it('keeps a session opening, never ended "open it again", while the wallet refuses walletflow’s own client token', async () => {
    await stack.startWorker();
    const user = await stack.admin.createUser({ kycLevel: 'KYC1', balance: '500.00', firstName: 'Ines' });
    const client = browser();
    let sessionId: string;
    try {
      await stack.admin.setFaults([
        { endpoint: 'op.profile', mode: 'error-before-effect', rate: 1, status: 401, code: 'CLIENT_TOKEN_INVALID' },
      ]);
      ({ sessionId } = await launch(user.userId));
      // Before: the on-demand onboarding ended the session REAUTH_REQUIRED, "open the app again from your wallet".
      const landing = await client.get(`/app?sessionId=${sessionId}`);
      expect(landing.status).toBe(200);
      expect(landing.text).toContain('Opening your account');
      const row = await stack.database.embeddedSession.findFirstOrThrow({
        where: { sessionIdHash: hashBearer(sessionId) },
      });
      expect([row.status, row.errorCode]).toEqual(['PENDING', null]);
    } finally {
      await stack.admin.clearFaults();
    }
    const home = await waitUntil(
      () => client.get('/app'),
      (page) => page.text.includes('Hello, Ines'),
      30_000,
    );
    expect(home.status).toBe(200);
  });

  it('asks the wallet for a waiting session’s profile no more often than it said: a page polling meanwhile is no call a poll', async () => {
    // Found by a read: each GET of a session still onboarding asked the wallet for the profile at once, its
    // Retry-After unheard (and, with the partner's credentials refused, fetched a client token each time).
    await stack.startWorker();
    const user = await stack.admin.createUser({ kycLevel: 'KYC1', balance: '500.00' });
    const client = browser();
    const since = new Date();
    try {
      await stack.admin.setFaults([{ endpoint: 'op.profile', mode: 'rate-limited', rate: 1, retryAfterSeconds: 60 }]);
      const { sessionId } = await launch(user.userId);
      expect((await client.get(`/app?sessionId=${sessionId}`)).text).toContain('Opening your account');
      // The page's next visit (each waits up to 5 s for the onboarding before it answers the loading page).
      const page = await client.get('/app');
      expect([page.status, page.text.includes('Opening your account')]).toEqual([200, true]);
      // One on demand, and at most one of the onboarding workflow's (it waits out the same Retry-After). Before: one
      // more a visit.
      const calls = await stack.database.walletCall.count({
        where: { operation: 'op.profile', startedAt: { gte: since } },
      });
      expect(calls).toBeGreaterThanOrEqual(1);
      expect(calls).toBeLessThanOrEqual(2);
    } finally {
      await stack.admin.clearFaults();
    }
  });

  it('answers a refusal of walletflow’s own client token as the wallet not giving the profile, never as the user having to log in again', async () => {
    const { link } = await landedUser();
    try {
      await stack.admin.setFaults([
        { endpoint: 'op.profile', mode: 'error-before-effect', rate: 1, status: 401, code: 'CLIENT_TOKEN_INVALID' },
      ]);
      // Before: 409 REAUTH_REQUIRED, "the user must log in again", for the partner's own credentials.
      const profile = await stack.opsFetch(`/ops/links/${link.id}/profile`);
      expect(profile.status).toBe(502);
      expect(await profile.json()).toMatchObject({ code: 'WALLET_UNAVAILABLE' });
    } finally {
      await stack.admin.clearFaults();
    }
    expect((await stack.database.link.findUniqueOrThrow({ where: { id: link.id } })).status).toBe('ACTIVE');
    expect((await stack.opsFetch(`/ops/links/${link.id}/profile`)).status).toBe(200);
  });
});

describe('a session whose access token expired before it was onboarded', () => {
  // Next to last in this file: it moves the sandbox clock past an access token's lifetime.
  it('is onboarded with the pair its refresh token gets, refreshed once: the user lands, never told to open the app again', async () => {
    // Found by a read: a 401 for the delivered access token ended the session REAUTH_REQUIRED at once, its refresh
    // token never tried; a backlog of ten minutes (a storm, a worker away) sent every user back to the wallet.
    await stack.stopWorker();
    try {
      const user = await stack.admin.createUser({ kycLevel: 'KYC1', balance: '500.00', firstName: 'Rosa' });
      const { sessionId } = await launch(user.userId);
      // The access token's 600 s pass while the session waits; the refresh token's 1200 s do not.
      await stack.admin.advanceClock(601);
      const since = new Date();
      const client = browser();
      expect((await client.get(`/app?sessionId=${sessionId}`)).status).toBe(200);
      const home = await waitUntil(
        () => client.get('/app'),
        (page) => page.text.includes('Hello, Rosa') || page.text.includes('open the app again'),
        30_000,
      );
      expect(home.text).toContain('Hello, Rosa');
      const row = await stack.database.embeddedSession.findFirstOrThrow({
        where: { sessionIdHash: hashBearer(sessionId) },
      });
      expect([row.status, row.errorCode]).toEqual(['READY', null]);
      const calls = await stack.database.walletCall.groupBy({
        by: ['operation', 'outcome'],
        where: { operation: { in: ['op.tokens', 'op.profile'] }, startedAt: { gte: since } },
        _count: true,
      });
      expect(Object.fromEntries(calls.map((call) => [`${call.operation} ${call.outcome}`, call._count]))).toMatchObject(
        { 'op.tokens ok': 1, 'op.profile ok': 1 },
      );
      expect(await stack.database.link.findUniqueOrThrow({ where: { id: row.linkId! } })).toMatchObject({
        status: 'ACTIVE',
      });
    } finally {
      await stack.startWorker();
    }
  });
});

describe('an expired embedded refresh token', () => {
  // Last in this file: it moves the sandbox clock past every token's lifetime.
  it('ends the withdrawal with the reopen-from-wallet message, marks the link REAUTH_REQUIRED, and the page says so', async () => {
    const { client, home, link } = await landedUser({ firstName: 'Teresa' });
    await stack.admin.advanceClock(1300);

    const started = await client.post('/app/withdraw', {
      csrf: field(home.text, 'csrf'),
      formKey: field(home.text, 'formKey'),
      amount: '10.00',
    });
    expect(started.status).toBe(303);
    const statusUrl = `${stack.apiBase}${started.location}/status`;
    const status = await waitUntil(
      async () =>
        (await (await fetch(statusUrl, { headers: { cookie: client.cookie! } })).json()) as Record<string, unknown>,
      (value) => value.final === true,
    );
    expect(status).toMatchObject({
      status: 'FAILED',
      tone: 'error',
      message: expect.stringContaining('open the app again from your wallet'),
    });
    expect(await stack.database.link.findUniqueOrThrow({ where: { id: link.id } })).toMatchObject({
      status: 'REAUTH_REQUIRED',
    });

    const page = await client.get('/app');
    expect(page.status).toBe(401);
    expect(page.text).toContain('open the app again from your wallet');
    expect(page.text).not.toContain('Teresa');
    expect(page.text).not.toMatch(/at .*\.ts:\d+/);

    const profile = await stack.opsFetch(`/ops/links/${link.id}/profile`);
    expect(profile.status).toBe(409);
    expect(await profile.json()).toMatchObject({ code: 'REAUTH_REQUIRED' });
  });
});
