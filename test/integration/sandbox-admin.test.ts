// The sandbox's admin API (contract-decisions section 9) over HTTP: registration, users, KYC,
// cash-in codes, token shortcuts, clock, settings, faults, ledger and reset.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startSandbox, type RunningSandbox } from '../../sandbox/server.ts';
import { adminOf, callJson, retrieveTransferCall, type Admin } from '../support/sandbox-harness.ts';

let sandbox: RunningSandbox;
let admin: Admin;

beforeAll(async () => {
  sandbox = await startSandbox({ port: 0, registration: { clientId: 'fixed-client', p2mId: 'P2M000111' } });
  admin = adminOf(sandbox);
});
afterAll(async () => {
  await sandbox.close();
});
beforeEach(async () => {
  await admin.reset();
});

describe('sandbox admin API', () => {
  it('serves the partner registration with the private profile key and the given fields', async () => {
    const answer = await admin.call('GET', '/partner');
    expect(answer.status).toBe(200);
    expect(Object.keys(answer.body).sort()).toEqual(
      [
        'clientId',
        'clientSecret',
        'landingUrl',
        'p2mId',
        'profileDecryptionJwk',
        'profileVerificationJwk',
        'redirectUri',
        'scopes',
        'senderIp',
        'sessionUrl',
        'transferApiKey',
      ].sort(),
    );
    expect(answer.body).toMatchObject({
      clientId: 'fixed-client',
      p2mId: 'P2M000111',
      redirectUri: 'http://127.0.0.1:3000/connect/callback',
      sessionUrl: 'http://127.0.0.1:3000/embedded/session',
      landingUrl: 'http://127.0.0.1:3000/app',
      senderIp: '127.0.0.1',
      scopes: ['openid', 'profile', 'contact', 'address', 'workDetails', 'identity_document'],
      profileVerificationJwk: { kty: 'oct' },
      profileDecryptionJwk: { kty: 'RSA' },
    });
    expect(answer.body.profileDecryptionJwk).toHaveProperty('d');
    expect(sandbox.partner).toEqual(answer.body);
    expect(sandbox.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
  });

  it('creates, lists and reads users with balance and a generated profile', async () => {
    const created = await admin.call('POST', '/users', {
      mobile: '09171234567',
      kycLevel: 'KYC1',
      balance: '1000.5',
      firstName: 'Maria',
      lastName: 'Santos',
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ mobile: '09171234567', kycLevel: 'KYC1', balance: '1000.50' });
    expect(created.body.userId).toEqual(expect.any(String));
    expect(created.body.profileId).toMatch(/^\d+$/);

    const list = await admin.call<{ users: { userId: string }[] }>('GET', '/users');
    expect(list.body.users.map((user) => user.userId)).toEqual([created.body.userId]);

    const one = await admin.call<{ balance: string; profile: Record<string, unknown> }>(
      'GET',
      `/users/${String(created.body.userId)}`,
    );
    expect(one.status).toBe(200);
    expect(one.body.balance).toBe('1000.50');
    expect(one.body.profile).toMatchObject({
      id: created.body.userId,
      profileId: created.body.profileId,
      kycStatus: 'KYC1',
      name: { firstName: 'Maria', lastName: 'Santos' },
      contact: expect.arrayContaining([
        { type: 'MSISDN', subType: 'PRIMARY', value: '09171234567', verificationStatus: 'PASS' },
      ]),
    });
    const document = (one.body.profile.identityDocument as { frontUrl: string }[])[0];
    expect(document?.frontUrl).toContain('/_sandbox/documents/');
  });

  it('takes profile overrides and refuses duplicates and malformed bodies with VALIDATION_ERROR', async () => {
    const created = await admin.createUser({
      mobile: '09170000001',
      kycLevel: 'KYC0',
      balance: '0.00',
      profile: { name: { middleName: 'Cruz' }, workDetails: { natureOfWork: 'SELF_EMPLOYED' } },
    });
    const one = await admin.call<{ profile: { name: { middleName: string }; workDetails: { natureOfWork: string } } }>(
      'GET',
      `/users/${created.userId}`,
    );
    expect(one.body.profile.name.middleName).toBe('Cruz');
    expect(one.body.profile.workDetails.natureOfWork).toBe('SELF_EMPLOYED');

    expect((await admin.call('POST', '/users', { mobile: '09170000001', kycLevel: 'KYC0', balance: '0' })).status).toBe(
      409,
    );
    const bad = await admin.call('POST', '/users', { mobile: 'not-a-phone', kycLevel: 'KYC1', balance: '1.00' });
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ code: 'VALIDATION_ERROR', message: expect.stringContaining('mobile') });
    const badAmount = await admin.call('POST', '/users', { mobile: '09170000002', kycLevel: 'KYC1', balance: '1.005' });
    expect(badAmount.body).toMatchObject({ code: 'VALIDATION_ERROR' });
    const unparsable = await callJson(`${sandbox.url}/_sandbox/users`, { method: 'POST', body: '{not json' });
    expect(unparsable.status).toBe(400);
    expect(unparsable.body).toMatchObject({ code: 'VALIDATION_ERROR' });
    expect((await admin.call('GET', '/users/unknown')).status).toBe(404);
  });

  it('answers a request it cannot read with a 4xx of its own shape, never a 500', async () => {
    // Found by a read: only a body the parser could not read was a 400; a path the router could not decode, a charset
    // or an encoding the parser does not take were 500 INTERNAL_ERROR.
    const undecodable = await callJson(`${sandbox.url}/_sandbox/users/%E0%A4%A`, { method: 'GET' });
    const latin1 = await callJson(`${sandbox.url}/_sandbox/users`, {
      method: 'POST',
      headers: { 'content-type': 'application/json; charset=iso-8859-1' },
      body: '{}',
    });
    const compressed = await callJson(`${sandbox.url}/_sandbox/users`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'content-encoding': 'compress' },
      body: '{}',
    });
    for (const answer of [undecodable, latin1, compressed]) {
      expect(answer.status).toBeGreaterThanOrEqual(400);
      expect(answer.status).toBeLessThan(500);
      expect(answer.body).toMatchObject({ code: 'VALIDATION_ERROR' });
    }
  });

  it('upgrades KYC and patches balance, limit and blocked flag', async () => {
    const user = await admin.createUser({ mobile: '09170000003', kycLevel: 'KYC0', balance: '5.00' });
    const upgraded = await admin.call('POST', `/users/${user.userId}/kyc`, { kycLevel: 'KYC1' });
    expect(upgraded.status).toBe(200);
    expect(upgraded.body).toMatchObject({ kycLevel: 'KYC1', profile: { kycStatus: 'KYC1' } });
    const patched = await admin.call('PATCH', `/users/${user.userId}`, {
      balance: '7.25',
      blocked: true,
      walletLimit: '50.00',
    });
    expect(patched.body).toMatchObject({ balance: '7.25', blocked: true, walletLimit: '50.00' });
  });

  it('issues 7-digit cash-in codes valid 30 minutes on the sandbox clock', async () => {
    const user = await admin.createUser({ mobile: '09170000004', kycLevel: 'KYC1', balance: '0' });
    const { now } = await admin.advanceClock(0);
    const code = await admin.call<{ code: string; expiresAt: string }>('POST', `/users/${user.userId}/cash-in-codes`);
    expect(code.status).toBe(201);
    expect(code.body.code).toMatch(/^\d{7}$/);
    const lifetime = Date.parse(code.body.expiresAt) - Date.parse(now);
    expect(lifetime).toBeGreaterThanOrEqual(30 * 60 * 1000 - 1000);
    expect(lifetime).toBeLessThanOrEqual(30 * 60 * 1000 + 1000);
  });

  it('issues standalone and embedded tokens without the login page', async () => {
    const user = await admin.createUser({ mobile: '09170000005', kycLevel: 'KYC1', balance: '0' });
    const standalone = await admin.call('POST', `/users/${user.userId}/standalone-tokens`);
    expect(standalone.status).toBe(201);
    expect(standalone.body).toMatchObject({
      token_type: 'Bearer',
      expires_in: '3600',
      access_token: expect.any(String),
      id_token: expect.any(String),
    });
    const embedded = await admin.call<{ accessToken: string; refreshToken: string; expiresAt: number }>(
      'POST',
      `/users/${user.userId}/embedded-tokens`,
    );
    expect(embedded.status).toBe(201);
    expect(embedded.body.accessToken.split('.')).toHaveLength(5); // compact JWE
    expect(embedded.body.refreshToken.split('.')).toHaveLength(3); // compact JWT
    const nowSeconds = Date.parse((await admin.advanceClock(0)).now) / 1000;
    expect(embedded.body.expiresAt - nowSeconds).toBeGreaterThan(595);
    expect(embedded.body.expiresAt - nowSeconds).toBeLessThanOrEqual(601);
  });

  it('advances the clock and validates the advance', async () => {
    const before = await admin.advanceClock(0);
    const after = await admin.call<{ now: string }>('POST', '/clock', { advanceSeconds: 3600 });
    expect(after.status).toBe(200);
    expect(Date.parse(after.body.now) - Date.parse(before.now)).toBeGreaterThanOrEqual(3600 * 1000);
    expect((await admin.call('POST', '/clock', { advanceSeconds: -5 })).status).toBe(400);
  });

  it('configures faults and settings and answers what is in force', async () => {
    const faults = await admin.call('PUT', '/faults', {
      seed: 42,
      rules: [{ endpoint: 'transfers.execute', mode: 'error-after-effect', rate: 0.5 }],
    });
    expect(faults.status).toBe(200);
    expect(faults.body).toEqual({
      seed: 42,
      rules: [{ endpoint: 'transfers.execute', mode: 'error-after-effect', rate: 0.5, status: 502, delayMs: 0 }],
    });
    expect((await admin.call('GET', '/faults')).body).toEqual(faults.body);
    const badFault = await admin.call('PUT', '/faults', {
      rules: [{ endpoint: 'transfers.nope', mode: 'latency', rate: 1 }],
    });
    expect(badFault.status).toBe(400);
    expect(badFault.body).toMatchObject({ code: 'VALIDATION_ERROR' });

    const settings = await admin.call('PUT', '/settings', {
      processingDelayMs: 250,
      merchantFee: '2.5',
      transferExpirySeconds: 60,
    });
    expect(settings.body).toMatchObject({ processingDelayMs: 250, merchantFee: '2.50', transferExpirySeconds: 60 });
  });

  it('plants executed transfers in one call: retrieved as APPROVED or DECLINED, executed once, nothing moved', async () => {
    const user = await admin.createUser({ mobile: '09170000007', kycLevel: 'KYC1', balance: '5.00' });
    const planted = await admin.call<{ transferIds: string[] }>('POST', '/transfers', {
      recipientUserId: user.userId,
      amount: '2.50',
      count: 3,
    });
    expect(planted.status).toBe(201);
    expect(planted.body.transferIds).toHaveLength(3);
    const declined = await admin.call<{ transferIds: string[] }>('POST', '/transfers', {
      recipientUserId: user.userId,
      amount: '1.00',
      count: 1,
      status: 'DECLINED',
    });
    for (const transferId of planted.body.transferIds) {
      expect((await retrieveTransferCall(sandbox, transferId)).body).toMatchObject({
        transferId,
        status: 'APPROVED',
        amount: { currency: 'PHP', value: 2.5 },
      });
    }
    expect((await retrieveTransferCall(sandbox, declined.body.transferIds[0]!)).body).toMatchObject({
      status: 'DECLINED',
      decline: { code: '6002' },
    });
    expect((await admin.ledger()).transfers.map((transfer) => transfer.executions)).toEqual([1, 1, 1, 1]);
    expect((await admin.call<{ balance: string }>('GET', `/users/${user.userId}`)).body.balance).toBe('5.00');
    expect(
      (await admin.call('POST', '/transfers', { recipientUserId: user.userId, amount: '1.00', count: 10_001 })).status,
    ).toBe(400);
    expect(
      (await admin.call('POST', '/transfers', { recipientUserId: 'nobody', amount: '1.00', count: 1 })).status,
    ).toBe(404);
  });

  it('resets users, faults, settings and the clock but keeps the registration', async () => {
    await admin.createUser({ mobile: '09170000006', kycLevel: 'KYC1', balance: '1.00' });
    await admin.faults({ rules: [{ endpoint: 'op.profile', mode: 'latency', rate: 1 }] });
    await admin.settings({ processingDelayMs: 999 });
    const advanced = await admin.advanceClock(86_400);
    const reset = await admin.call('POST', '/reset');
    expect(reset.status).toBe(204);
    expect((await admin.call<{ users: unknown[] }>('GET', '/users')).body.users).toEqual([]);
    expect((await admin.call<{ rules: unknown[] }>('GET', '/faults')).body.rules).toEqual([]);
    expect((await admin.call('GET', '/settings')).body).toMatchObject({ processingDelayMs: 0 });
    const now = Date.parse((await admin.advanceClock(0)).now);
    expect(now).toBeLessThan(Date.parse(advanced.now) - 86_000 * 1000);
    expect((await admin.call('GET', '/partner')).body.clientId).toBe('fixed-client');
    expect(await admin.ledger()).toMatchObject({ transfers: [], payments: [], refreshes: [] });
  });

  it('serves an index page describing the OTP and a launcher listing users', async () => {
    const index = await fetch(`${sandbox.url}/_sandbox/`);
    const html = await index.text();
    expect(index.headers.get('content-type')).toContain('text/html');
    expect(html).toContain('123456');
    expect(html).toContain('/_sandbox/launcher');
    await admin.createUser({ mobile: '09170000007', kycLevel: 'KYC1', balance: '0', firstName: '<script>x</script>' });
    const launcher = await (await fetch(`${sandbox.url}/_sandbox/launcher`)).text();
    expect(launcher).toContain('Open partner tile');
    expect(launcher).toContain('&lt;script&gt;x&lt;/script&gt;');
    expect(launcher).not.toContain('<script>x</script>');
  });
});
