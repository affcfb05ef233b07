// The sandbox's connect service over HTTP: the login pages driven as forms, and the token
// endpoint's three grants, lifetimes (through the sandbox clock) and OAuth errors.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startSandbox, type RunningSandbox } from '../../sandbox/server.ts';
import {
  adminOf,
  basicAuth,
  callJson,
  clientToken,
  loginForms,
  loginThroughPages,
  opHeaders,
  tokenRequest,
  type Admin,
} from '../support/sandbox-harness.ts';

let sandbox: RunningSandbox;
let admin: Admin;

beforeAll(async () => {
  sandbox = await startSandbox({ port: 0 });
  admin = adminOf(sandbox);
});
afterAll(async () => {
  await sandbox.close();
});
beforeEach(async () => {
  await admin.reset();
});

async function exchange(code: string) {
  return tokenRequest(sandbox, { grant_type: 'authorization_code', code, redirect_uri: sandbox.partner.redirectUri });
}

async function profileStatus(userToken: string): Promise<number> {
  const client = await clientToken(sandbox);
  return (await callJson(`${sandbox.url}/op/profile`, { headers: opHeaders(client, userToken) })).status;
}

describe('sandbox connect: login pages', () => {
  it('logs an existing user in with password then OTP and redirects with code, state, masked userId and profileId', async () => {
    const user = await admin.createUser({
      mobile: '09171234567',
      password: 'secret-1',
      kycLevel: 'KYC1',
      balance: '0',
    });
    const forms = loginForms(sandbox);
    const first = await forms.open({ user_id: '09171234567', state: 'st&te=1/ü' });
    expect(first.status).toBe(200);
    expect(first.html).toMatch(/id="mobile"[^>]*value="09171234567"[^>]*readonly/);
    const otpPage = await forms.submit(first, { password: 'secret-1', action: 'continue' });
    expect(otpPage.html).toContain('id="otp"');
    expect(otpPage.html).toContain('sandbox OTP');
    const done = await forms.submit(otpPage, { otp: '123456', action: 'continue' });
    expect(done.status).toBe(302);
    const callback = new URL(done.location ?? '');
    expect(`${callback.origin}${callback.pathname}`).toBe(sandbox.partner.redirectUri);
    expect(callback.searchParams.get('state')).toBe('st&te=1/ü');
    expect(callback.searchParams.get('code')).toEqual(expect.any(String));
    expect(callback.searchParams.get('userId')).toBe('*******4567');
    expect(callback.searchParams.get('profileId')).toBe(user.profileId);
  });

  it('shows the registration form for an unknown mobile and creates a KYC0 user', async () => {
    const forms = loginForms(sandbox);
    const first = await forms.open({ user_id: '09998887777', state: 'new' });
    expect(first.html).toContain('register-form');
    expect(first.html).toMatch(/id="mobile"[^>]*value="09998887777"[^>]*readonly/);
    const tooShort = await forms.submit(first, { password: 'abc', action: 'continue' });
    expect(tooShort.html).toContain('at least 6');
    const otpPage = await forms.submit(tooShort, { password: 'abcdef', action: 'continue' });
    const done = await forms.submit(otpPage, { otp: '123456', action: 'continue' });
    expect(done.status).toBe(302);
    const users = (await admin.call<{ users: { mobile: string; kycLevel: string }[] }>('GET', '/users')).body.users;
    expect(users).toEqual([expect.objectContaining({ mobile: '09998887777', kycLevel: 'KYC0' })]);
    // The new account logs in with the chosen password.
    expect((await loginThroughPages(sandbox, '09998887777', 'abcdef')).get('code')).toEqual(expect.any(String));
  });

  it('redirects with login_required after three wrong passwords, and access_denied on cancel', async () => {
    await admin.createUser({ mobile: '09171234568', password: 'right-pass', kycLevel: 'KYC1', balance: '0' });
    const forms = loginForms(sandbox);
    let page = await forms.open({ user_id: '09171234568', state: 's1' });
    page = await forms.submit(page, { password: 'wrong', action: 'continue' });
    expect(page.html).toContain('2 attempts left');
    page = await forms.submit(page, { password: 'wrong', action: 'continue' });
    const locked = await forms.submit(page, { password: 'wrong', action: 'continue' });
    expect(locked.status).toBe(302);
    const failed = new URL(locked.location ?? '').searchParams;
    expect(failed.get('error')).toBe('login_required');
    expect(failed.get('state')).toBe('s1');
    expect(failed.get('code')).toBeNull();

    const again = await forms.open({ user_id: '09171234568', state: 's2' });
    const cancelled = await forms.submit(again, { action: 'cancel' });
    const cancelParams = new URL(cancelled.location ?? '').searchParams;
    expect(cancelParams.get('error')).toBe('access_denied');
    expect(cancelParams.get('state')).toBe('s2');
  });

  it('asks for the mobile when user_id is absent', async () => {
    const user = await admin.createUser({ mobile: '09171230000', kycLevel: 'KYC1', balance: '0' });
    const forms = loginForms(sandbox);
    const first = await forms.open({ state: 'no-user-id' });
    expect(first.html).toContain('id="mobile"');
    expect(first.html).not.toMatch(/id="mobile"[^>]*readonly/);
    const unknown = await forms.submit(first, { mobile: '09990000000', password: 'sandbox123', action: 'continue' });
    expect(unknown.html).toContain('No wallet account');
    const otpPage = await forms.submit(unknown, { mobile: '09171230000', password: 'sandbox123', action: 'continue' });
    const done = await forms.submit(otpPage, { otp: '123456', action: 'continue' });
    const callback = new URL(done.location ?? '').searchParams;
    expect(callback.get('profileId')).toBe(user.profileId);
    expect(callback.get('state')).toBe('no-user-id');
  });

  it('shows an error page, never a redirect, for an unknown client or redirect URI', async () => {
    const forms = loginForms(sandbox);
    const badClient = await forms.open({ client_id: 'someone-else', user_id: '09171234567' });
    expect(badClient.status).toBe(400);
    expect(badClient.location).toBeNull();
    const badRedirect = await forms.open({ redirect_uri: 'https://evil.example/cb', user_id: '09171234567' });
    expect(badRedirect.status).toBe(400);
    expect(badRedirect.location).toBeNull();
    expect(badRedirect.html).toContain('redirect_uri');
    const badResponseType = await forms.open({ response_type: 'token', state: 'q' });
    expect(new URL(badResponseType.location ?? '').searchParams.get('error')).toBe('unsupported_response_type');
  });
});

describe('sandbox connect: token endpoint', () => {
  it('exchanges a code once for a token response; a second use fails invalid_grant and revokes the tokens', async () => {
    await admin.createUser({ mobile: '09171234567', kycLevel: 'KYC1', balance: '0' });
    const code = (await loginThroughPages(sandbox, '09171234567', 'sandbox123')).get('code') ?? '';
    const first = await exchange(code);
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({
      token_type: 'Bearer',
      expires_in: '3600',
      scope: 'openid profile contact address workDetails identity_document',
      access_token: expect.any(String),
      refresh_token: expect.any(String),
      id_token: expect.any(String),
    });
    expect(first.headers.get('cache-control')).toBe('no-store');
    expect(await profileStatus(first.body.access_token ?? '')).toBe(200);

    const second = await exchange(code);
    expect(second.status).toBe(400);
    expect(second.body).toEqual({ error: 'invalid_grant', error_description: expect.any(String) });
    expect(await profileStatus(first.body.access_token ?? '')).toBe(401);
  });

  it('refuses a code after 5 minutes and a code issued for another redirect_uri', async () => {
    await admin.createUser({ mobile: '09171234567', kycLevel: 'KYC1', balance: '0' });
    const stale = (await loginThroughPages(sandbox, '09171234567', 'sandbox123')).get('code') ?? '';
    await admin.advanceClock(5 * 60 + 1);
    expect((await exchange(stale)).body.error).toBe('invalid_grant');

    const fresh = (await loginThroughPages(sandbox, '09171234567', 'sandbox123')).get('code') ?? '';
    await admin.advanceClock(4 * 60);
    const wrongUri = await tokenRequest(sandbox, {
      grant_type: 'authorization_code',
      code: fresh,
      redirect_uri: 'http://127.0.0.1:3000/other',
    });
    expect(wrongUri.status).toBe(400);
    expect(wrongUri.body.error).toBe('invalid_grant');
  });

  it('takes the client’s Basic credentials as the interface writes them (base64 of id:secret) and as RFC 6749 does (form-encoded first), a secret with + and % in it either way', async () => {
    // Found by the contract hunt: the sandbox form-decoded the id and the secret before comparing (RFC 6749 section
    // 2.3.1), so a secret with a + or a % (a base64 secret of a real operator often has one) sent as the interface
    // writes it, base64(client_id:client_secret), and as walletflow sends it, was refused: 401 invalid_client.
    const secret = 'abc+def/ghi%2Bjkl=';
    const other = await startSandbox({ port: 0, registration: { clientId: 'client+1', clientSecret: secret } });
    try {
      for (const [user, password] of [
        ['client+1', secret],
        [encodeURIComponent('client+1'), encodeURIComponent(secret)],
      ] as const) {
        const answer = await tokenRequest(other, { grant_type: 'client_credentials' }, basicAuth(user, password));
        expect([answer.status, answer.body.error], `${user}:${password}`).toEqual([200, undefined]);
      }
      const wrong = await tokenRequest(other, { grant_type: 'client_credentials' }, basicAuth('client+1', 'abc def'));
      expect(wrong.status).toBe(401);
    } finally {
      await other.close();
    }
  });

  it('answers invalid_client, invalid_request and unsupported_grant_type per RFC 6749', async () => {
    const wrongSecret = await tokenRequest(
      sandbox,
      { grant_type: 'client_credentials' },
      basicAuth(sandbox.partner.clientId, 'nope'),
    );
    expect(wrongSecret.status).toBe(401);
    expect(wrongSecret.body).toEqual({ error: 'invalid_client', error_description: expect.any(String) });
    const noAuth = await fetch(`${sandbox.url}/connect/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'grant_type=client_credentials',
    });
    expect(noAuth.status).toBe(401);

    const noGrant = await tokenRequest(sandbox, {});
    expect([noGrant.status, noGrant.body.error]).toEqual([400, 'invalid_request']);
    const missingCode = await tokenRequest(sandbox, {
      grant_type: 'authorization_code',
      redirect_uri: sandbox.partner.redirectUri,
    });
    expect([missingCode.status, missingCode.body.error]).toEqual([400, 'invalid_request']);
    const unknown = await tokenRequest(sandbox, { grant_type: 'password' });
    expect([unknown.status, unknown.body.error]).toEqual([400, 'unsupported_grant_type']);
    const jsonBody = await fetch(`${sandbox.url}/connect/token`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        authorization: basicAuth(sandbox.partner.clientId, sandbox.partner.clientSecret),
      },
      body: JSON.stringify({ grant_type: 'client_credentials' }),
    });
    expect(jsonBody.status).toBe(400);
    expect(((await jsonBody.json()) as { error: string }).error).toBe('invalid_request');
    const unknownCode = await exchange('no-such-code');
    expect([unknownCode.status, unknownCode.body.error]).toEqual([400, 'invalid_grant']);
  });

  it('refreshes a standalone grant: new access token, same refresh token, old access token invalid, scope subset', async () => {
    const user = await admin.createUser({ mobile: '09171234567', kycLevel: 'KYC1', balance: '0' });
    const tokens = await admin.standaloneTokens(user.userId);
    const refreshed = await tokenRequest(sandbox, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token });
    expect(refreshed.status).toBe(200);
    expect(refreshed.body.refresh_token).toBe(tokens.refresh_token);
    expect(refreshed.body.access_token).not.toBe(tokens.access_token);
    expect(refreshed.body.expires_in).toBe('3600');
    expect(await profileStatus(tokens.access_token)).toBe(401);
    expect(await profileStatus(refreshed.body.access_token ?? '')).toBe(200);

    const narrowed = await tokenRequest(sandbox, {
      grant_type: 'refresh_token',
      refresh_token: tokens.refresh_token,
      scope: 'openid contact',
    });
    expect(narrowed.body.scope).toBe('openid contact');
    const widened = await tokenRequest(sandbox, { grant_type: 'refresh_token', refresh_token: 'unknown' });
    expect([widened.status, widened.body.error]).toEqual([400, 'invalid_grant']);

    const ledger = await admin.ledger();
    expect(ledger.refreshes).toEqual([
      { kind: 'standalone', userId: user.userId, at: expect.any(String) },
      { kind: 'standalone', userId: user.userId, at: expect.any(String) },
    ]);
  });

  it('expires standalone access tokens after 3600 s and refresh tokens after 604800 s', async () => {
    const user = await admin.createUser({ mobile: '09171234567', kycLevel: 'KYC1', balance: '0' });
    const tokens = await admin.standaloneTokens(user.userId);
    await admin.advanceClock(3599);
    expect(await profileStatus(tokens.access_token)).toBe(200);
    await admin.advanceClock(2);
    expect(await profileStatus(tokens.access_token)).toBe(401);
    await admin.advanceClock(604_800 - 3601 - 5);
    expect(
      (await tokenRequest(sandbox, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token })).status,
    ).toBe(200);
    await admin.advanceClock(10);
    expect(
      (await tokenRequest(sandbox, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token })).body.error,
    ).toBe('invalid_grant');
  });

  it('issues an HS256 client token valid 3600 s on the sandbox clock', async () => {
    const answer = await tokenRequest(sandbox, { grant_type: 'client_credentials' });
    expect(answer.status).toBe(200);
    const token = answer.body.access_token ?? '';
    const [header = '', payload = ''] = token.split('.');
    expect(JSON.parse(Buffer.from(header, 'base64url').toString())).toMatchObject({ alg: 'HS256' });
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString()) as {
      sub: string;
      exp: number;
      iat: number;
      scope: string;
    };
    expect(claims.sub).toBe(sandbox.partner.clientId);
    expect(claims.exp - claims.iat).toBe(3600);
    expect(claims.scope).toContain('openid');

    const user = await admin.createUser({ mobile: '09171234567', kycLevel: 'KYC1', balance: '0' });
    const { refreshToken } = await admin.embeddedTokens(user.userId);
    const refresh = () =>
      callJson(`${sandbox.url}/op/tokens`, { method: 'POST', headers: opHeaders(token), body: { refreshToken } });
    await admin.advanceClock(3601);
    const expired = await refresh();
    expect(expired.status).toBe(401);
    expect(expired.body).toMatchObject({ code: 'CLIENT_TOKEN_INVALID' });
  });
});
