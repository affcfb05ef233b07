// Opening the partner's tile: the sandbox calls a real session URL (a tiny server in the test)
// from the registered sender address with fresh embedded tokens, then sends the browser on.
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startSandbox, type RunningSandbox } from '../../sandbox/server.ts';
import { adminOf, callJson, clientToken, opHeaders, type Admin } from '../support/sandbox-harness.ts';

interface SessionCall {
  headers: IncomingHttpHeaders;
  body: Record<string, unknown>;
  remoteAddress: string | undefined;
}

let partner: Server;
let partnerUrl: string;
const calls: SessionCall[] = [];
/** How the fake partner answers the next session call. */
let answer: { status: number; body: string } = { status: 200, body: '' };

let sandbox: RunningSandbox;
let admin: Admin;
const senderIp = '127.0.0.2';

beforeAll(async () => {
  partner = createServer((req, res) => {
    let raw = '';
    req.on('data', (chunk: Buffer) => (raw += chunk.toString('utf8')));
    req.on('end', () => {
      calls.push({
        headers: req.headers,
        body: JSON.parse(raw) as Record<string, unknown>,
        remoteAddress: req.socket.remoteAddress,
      });
      res.writeHead(answer.status, { 'content-type': 'application/json' }).end(answer.body);
    });
  });
  await new Promise<void>((resolve) => partner.listen(0, '127.0.0.1', resolve));
  partnerUrl = `http://127.0.0.1:${(partner.address() as AddressInfo).port}`;
  sandbox = await startSandbox({
    port: 0,
    registration: { sessionUrl: `${partnerUrl}/embedded/session`, landingUrl: `${partnerUrl}/app?lang=en`, senderIp },
  });
  admin = adminOf(sandbox);
});
afterAll(async () => {
  await sandbox.close();
  partner.closeAllConnections();
  await new Promise((resolve) => partner.close(resolve));
});
beforeEach(async () => {
  await admin.reset();
  calls.length = 0;
  answer = { status: 200, body: JSON.stringify({ sessionId: '3f1c2a9e-6b0d-4e57-9a51-2f8d7c1e0b44' }) };
});

describe('sandbox launch', () => {
  it('POSTs fresh embedded tokens to the session URL from the sender address and answers the landing URL', async () => {
    const user = await admin.createUser({ mobile: '09171234567', kycLevel: 'KYC1', balance: '0' });
    const launched = await admin.call('POST', '/launch', { userId: user.userId });
    expect(launched.status).toBe(200);
    expect(launched.body).toEqual({
      sessionId: '3f1c2a9e-6b0d-4e57-9a51-2f8d7c1e0b44',
      landingUrl: `${partnerUrl}/app?lang=en&sessionId=3f1c2a9e-6b0d-4e57-9a51-2f8d7c1e0b44`,
    });
    expect(calls).toHaveLength(1);
    const call = calls[0]!;
    expect(call.remoteAddress).toBe(senderIp);
    expect(call.headers['content-type']).toBe('application/json');
    expect(call.headers['request-reference-no']).toMatch(
      /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
    );
    expect(Object.keys(call.body).sort()).toEqual(['accessToken', 'expiresAt', 'refreshToken']);
    expect(String(call.body.accessToken).split('.')).toHaveLength(5);
    expect(String(call.body.refreshToken).split('.')).toHaveLength(3);
    expect(Number.isInteger(call.body.expiresAt)).toBe(true);

    // The delivered tokens are live: the partner can read the profile and refresh with them.
    const client = await clientToken(sandbox);
    const profile = await callJson(`${sandbox.url}/op/profile`, {
      headers: opHeaders(client, String(call.body.accessToken)),
    });
    expect(profile.status).toBe(200);
    const refreshed = await callJson(`${sandbox.url}/op/tokens`, {
      method: 'POST',
      headers: opHeaders(client),
      body: { refreshToken: call.body.refreshToken },
    });
    expect(refreshed.status).toBe(200);
  });

  it('answers 502 with the partner status when the session URL fails or answers no sessionId', async () => {
    const user = await admin.createUser({ mobile: '09171234567', kycLevel: 'KYC1', balance: '0' });
    answer = { status: 403, body: JSON.stringify({ code: 'FORBIDDEN' }) };
    const refused = await admin.call('POST', '/launch', { userId: user.userId });
    expect(refused.status).toBe(502);
    expect(refused.body).toMatchObject({ code: 'PARTNER_SESSION_FAILED', partnerStatus: 403 });

    answer = { status: 200, body: JSON.stringify({ session: 'x' }) };
    const malformed = await admin.call('POST', '/launch', { userId: user.userId });
    expect(malformed.body).toMatchObject({ code: 'PARTNER_SESSION_FAILED', partnerStatus: 200 });

    expect((await admin.call('POST', '/launch', { userId: 'nobody' })).status).toBe(404);
    expect((await admin.call('POST', '/launch', {})).status).toBe(400);
  });

  it('the launcher page button redirects the browser to the landing page, or shows an error page', async () => {
    const user = await admin.createUser({ mobile: '09171234567', kycLevel: 'KYC1', balance: '0' });
    const launcher = await (await fetch(`${sandbox.url}/_sandbox/launcher`)).text();
    expect(launcher).toContain(`id="open-${user.userId}"`);
    const open = () =>
      fetch(`${sandbox.url}/_sandbox/launcher/open`, {
        method: 'POST',
        redirect: 'manual',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ userId: user.userId }).toString(),
      });
    const opened = await open();
    expect(opened.status).toBe(302);
    expect(opened.headers.get('location')).toBe(
      `${partnerUrl}/app?lang=en&sessionId=3f1c2a9e-6b0d-4e57-9a51-2f8d7c1e0b44`,
    );

    answer = { status: 500, body: 'oops' };
    const failed = await open();
    expect(failed.status).toBe(502);
    expect(await failed.text()).toContain('could not open');
  });

  it('reports an unreachable session URL', async () => {
    const offline = await startSandbox({ port: 0, registration: { sessionUrl: 'http://127.0.0.1:9/session' } });
    try {
      const offlineAdmin = adminOf(offline);
      const user = await offlineAdmin.createUser({ mobile: '09171234567', kycLevel: 'KYC1', balance: '0' });
      const launched = await offlineAdmin.call('POST', '/launch', { userId: user.userId });
      expect(launched.status).toBe(502);
      expect(launched.body).toMatchObject({ code: 'PARTNER_SESSION_FAILED', partnerStatus: null });
    } finally {
      await offline.close();
    }
  });
});
