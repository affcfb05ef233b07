// The console's sessions over real HTTP: every page and stream needs its scope, Home included, and
// Home shows webhook addresses masked; refused console writes and every sign-in are audited.
import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { consoleRoutes } from '../../api/console/console-router.ts';
import { expressPath } from '../../api/http/route-registration.ts';
import { startPartnerStack, type PartnerStack } from '../support/partner-stack.ts';
import { waitFor } from '../support/wait-for.ts';

const newKey = () => randomBytes(32).toString('base64url');
const keys = { auditor: newKey(), payer: newKey(), lead: newKey(), steady: newKey() };

let stack: PartnerStack;

beforeAll(async () => {
  stack = await startPartnerStack({
    trustedProxies: ['127.0.0.1'],
    extraOpsKeys: [`auditor:read:${keys.auditor}`, `payer:pay:${keys.payer}`, `lead:read+fund:${keys.lead}`, `steady:read:${keys.steady}`],
  });
}, 120_000);

afterAll(async () => {
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

/** The CSRF token of a session, as its pages carry it. */
async function csrfOf(base: string, cookie: string): Promise<string> {
  const page = await (await get(base, '/console/search', cookie)).text();
  return /name="_csrf" value="([^"]+)"/.exec(page)![1]!;
}

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
