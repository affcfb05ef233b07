// The sandbox's op service over HTTP: embedded token rotation, the encrypted profile per scope
// (decrypted here with node:crypto alone), identity document URL expiry, and merchant payments.
import { randomUUID } from 'node:crypto';
import { compactDecrypt, compactVerify, importJWK } from 'jose';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startSandbox, type RunningSandbox } from '../../sandbox/server.ts';
import {
  adminOf,
  callJson,
  clientToken,
  opHeaders,
  openProfile,
  tokenRequest,
  type Admin,
} from '../support/sandbox-harness.ts';

let sandbox: RunningSandbox;
let admin: Admin;
let client: string;

beforeAll(async () => {
  sandbox = await startSandbox({ port: 0 });
  admin = adminOf(sandbox);
});
afterAll(async () => {
  await sandbox.close();
});
beforeEach(async () => {
  await admin.reset();
  client = await clientToken(sandbox);
});

interface EmbeddedPair {
  accessToken: string;
  refreshToken: string;
  expiresAt: number;
}

function refresh(refreshToken: string) {
  return callJson<EmbeddedPair & { code?: string }>(`${sandbox.url}/op/tokens`, {
    method: 'POST',
    headers: opHeaders(client),
    body: { refreshToken },
  });
}

function getProfile(userToken: string, headers: Record<string, string> = {}) {
  return callJson<{ data: string; code?: string }>(`${sandbox.url}/op/profile`, {
    headers: { ...opHeaders(client, userToken), ...headers },
  });
}

function decrypt(data: string) {
  return openProfile(data, sandbox.partner.profileDecryptionJwk, sandbox.partner.profileVerificationJwk);
}

describe('sandbox op: embedded token refresh', () => {
  it('rotates the pair: new tokens work, the old access and refresh tokens stop working', async () => {
    const user = await admin.createUser({ mobile: '09171234567', kycLevel: 'KYC1', balance: '0' });
    const first = await admin.embeddedTokens(user.userId);
    const second = await refresh(first.refreshToken);
    expect(second.status).toBe(200);
    expect(second.body.accessToken.split('.')).toHaveLength(5);
    expect(second.body.refreshToken.split('.')).toHaveLength(3);
    expect(second.body.accessToken).not.toBe(first.accessToken);
    expect(second.body.refreshToken).not.toBe(first.refreshToken);
    expect(Number.isInteger(second.body.expiresAt)).toBe(true);

    expect((await getProfile(first.accessToken)).body).toMatchObject({ code: 'USER_TOKEN_INVALID' });
    expect((await getProfile(second.body.accessToken)).status).toBe(200);
    const reused = await refresh(first.refreshToken);
    expect(reused.status).toBe(400);
    expect(reused.body).toMatchObject({ code: 'REFRESH_TOKEN_INVALID', message: expect.any(String) });
    expect((await admin.ledger()).refreshes).toEqual([
      { kind: 'embedded', userId: user.userId, at: expect.any(String) },
    ]);
  });

  it('expires embedded access tokens after 600 s and refresh tokens after 1200 s', async () => {
    const user = await admin.createUser({ mobile: '09171234567', kycLevel: 'KYC1', balance: '0' });
    const pair = await admin.embeddedTokens(user.userId);
    await admin.advanceClock(601);
    expect((await getProfile(pair.accessToken)).status).toBe(401);
    await admin.advanceClock(598);
    client = await clientToken(sandbox);
    const late = await refresh(pair.refreshToken);
    expect(late.status).toBe(200);
    await admin.advanceClock(1201);
    client = await clientToken(sandbox);
    expect((await refresh(late.body.refreshToken)).body.code).toBe('REFRESH_TOKEN_INVALID');
  });

  it('refuses a missing client token, a non-UUIDv4 reference and a missing body field', async () => {
    const user = await admin.createUser({ mobile: '09171234567', kycLevel: 'KYC1', balance: '0' });
    const pair = await admin.embeddedTokens(user.userId);
    const noClient = await callJson(`${sandbox.url}/op/tokens`, {
      method: 'POST',
      headers: { 'request-reference-no': randomUUID() },
      body: { refreshToken: pair.refreshToken },
    });
    expect([noClient.status, noClient.body.code]).toEqual([401, 'CLIENT_TOKEN_INVALID']);
    const badReference = await callJson(`${sandbox.url}/op/tokens`, {
      method: 'POST',
      headers: opHeaders(client, undefined, 'not-a-uuid'),
      body: { refreshToken: pair.refreshToken },
    });
    expect([badReference.status, badReference.body.code]).toEqual([400, 'VALIDATION_ERROR']);
    const noField = await callJson(`${sandbox.url}/op/tokens`, {
      method: 'POST',
      headers: opHeaders(client),
      body: {},
    });
    expect([noField.status, noField.body.code]).toEqual([400, 'VALIDATION_ERROR']);
    // Nothing of this rotated the pair.
    expect((await refresh(pair.refreshToken)).status).toBe(200);
  });
});

describe('sandbox op: profile', () => {
  it('answers a JWE (RSA-OAEP, A256GCM, DEF) holding an HS256 JWS with every scope of the registration', async () => {
    const user = await admin.createUser({
      mobile: '09171234567',
      kycLevel: 'KYC1',
      balance: '0',
      firstName: 'Ana',
      lastName: 'Cruz',
    });
    const pair = await admin.embeddedTokens(user.userId);
    const answer = await getProfile(pair.accessToken);
    expect(answer.status).toBe(200);
    const opened = decrypt(answer.body.data);
    expect(opened.header).toMatchObject({ alg: 'RSA-OAEP', enc: 'A256GCM', zip: 'DEF' });
    expect(opened.jwsHeader).toMatchObject({ alg: 'HS256' });
    const profile = opened.payload;
    expect(profile).toMatchObject({
      id: user.userId,
      profileId: user.profileId,
      kycStatus: 'KYC1',
      name: { firstName: 'Ana', middleName: null, lastName: 'Cruz', verificationStatus: 'PASS' },
      birthDetails: { birthDate: expect.stringMatching(/^\d{2}-\d{2}-\d{4}$/), country: 'PH' },
      contact: expect.arrayContaining([
        { type: 'MSISDN', subType: 'PRIMARY', value: '09171234567', verificationStatus: 'PASS' },
        expect.objectContaining({ type: 'EMAIL' }),
      ]),
      address: [expect.objectContaining({ type: 'PRESENT', country: 'PH', zipCode: expect.any(String) })],
      workDetails: expect.objectContaining({ natureOfWork: expect.any(String), sourceOfIncome: expect.any(String) }),
      identityDocument: [
        expect.objectContaining({
          value: null,
          frontUrl: expect.any(String),
          backUrl: expect.any(String),
          expiryDate: expect.any(String),
        }),
      ],
    });

    // The partner's way, as the interface describes it: jose with the two JWKs.
    const privateKey = await importJWK(sandbox.partner.profileDecryptionJwk, 'RSA-OAEP');
    const secret = await importJWK(sandbox.partner.profileVerificationJwk, 'HS256');
    const { plaintext } = await compactDecrypt(answer.body.data, privateKey);
    const { payload } = await compactVerify(new TextDecoder().decode(plaintext), secret);
    expect(JSON.parse(new TextDecoder().decode(payload))).toEqual(profile);
  });

  it('gives exactly the fields of each scope (narrowed through a standalone refresh)', async () => {
    const user = await admin.createUser({ mobile: '09171234567', kycLevel: 'KYC0', balance: '0' });
    const tokens = await admin.standaloneTokens(user.userId);
    const expected: Record<string, string[]> = {
      openid: ['id', 'kycStatus', 'profileId'],
      profile: ['birthDetails', 'name'],
      contact: ['contact'],
      address: ['address'],
      workDetails: ['workDetails'],
      identity_document: ['identityDocument'],
    };
    for (const [scope, fields] of Object.entries(expected)) {
      const narrowed = await tokenRequest(sandbox, {
        grant_type: 'refresh_token',
        refresh_token: tokens.refresh_token,
        scope: `openid ${scope}`,
      });
      const answer = await getProfile(narrowed.body.access_token ?? '');
      const keys = Object.keys(decrypt(answer.body.data).payload).sort();
      expect(keys, scope).toEqual([...new Set([...expected.openid!, ...fields])].sort());
    }
  });

  it('limits the profile to the scopes of the registration', async () => {
    const narrow = await startSandbox({ port: 0, registration: { scopes: ['contact'] } });
    try {
      const narrowAdmin = adminOf(narrow);
      expect(narrow.partner.scopes).toEqual(['openid', 'contact']);
      const user = await narrowAdmin.createUser({ mobile: '09171234567', kycLevel: 'KYC1', balance: '0' });
      const pair = await narrowAdmin.embeddedTokens(user.userId);
      const answer = await callJson<{ data: string }>(`${narrow.url}/op/profile`, {
        headers: opHeaders(await clientToken(narrow), pair.accessToken),
      });
      const payload = openProfile(
        answer.body.data,
        narrow.partner.profileDecryptionJwk,
        narrow.partner.profileVerificationJwk,
      ).payload;
      expect(Object.keys(payload).sort()).toEqual(['contact', 'id', 'kycStatus', 'profileId']);
    } finally {
      await narrow.close();
    }
  });

  it('serves identity document images for 15 minutes of sandbox time', async () => {
    const user = await admin.createUser({ mobile: '09171234567', kycLevel: 'KYC1', balance: '0' });
    const pair = await admin.embeddedTokens(user.userId);
    const profile = decrypt((await getProfile(pair.accessToken)).body.data).payload;
    const document = (profile.identityDocument as { frontUrl: string; backUrl: string }[])[0]!;
    expect(document.frontUrl.startsWith(`${sandbox.url}/_sandbox/documents/`)).toBe(true);
    const front = await fetch(document.frontUrl);
    expect(front.status).toBe(200);
    expect(front.headers.get('content-type')).toContain('image/svg+xml');
    const tampered = await fetch(document.frontUrl.replace(/sig=[^&]+/, 'sig=AAAA'));
    expect(tampered.status).toBe(403);
    await admin.advanceClock(14 * 60);
    expect((await fetch(document.backUrl)).status).toBe(200);
    await admin.advanceClock(61);
    expect((await fetch(document.backUrl)).status).toBe(403);
  });

  it('refuses a missing or bad user token and a bad client token', async () => {
    const user = await admin.createUser({ mobile: '09171234567', kycLevel: 'KYC1', balance: '0' });
    const pair = await admin.embeddedTokens(user.userId);
    expect((await getProfile('garbage')).body).toMatchObject({ code: 'USER_TOKEN_INVALID' });
    const noUser = await callJson(`${sandbox.url}/op/profile`, { headers: opHeaders(client) });
    expect([noUser.status, noUser.body.code]).toEqual([401, 'USER_TOKEN_INVALID']);
    const badClient = await getProfile(pair.accessToken, { authorization: 'Bearer not.a.token' });
    expect([badClient.status, badClient.body.code]).toEqual([401, 'CLIENT_TOKEN_INVALID']);
    const noReference = await callJson(`${sandbox.url}/op/profile`, {
      headers: { authorization: `Bearer ${client}`, 'x-authorization': pair.accessToken },
    });
    expect([noReference.status, noReference.body.code]).toEqual([400, 'VALIDATION_ERROR']);
  });
});

describe('sandbox op: merchant payments', () => {
  interface PaymentBody {
    id: string;
    p2mId: string;
    requestReferenceNumber: string;
    amount: { currency: string; value: number };
    fee: { currency: string; value: number };
    code?: string;
  }

  async function create(userToken: string, value: number, reference = randomUUID(), p2mId = sandbox.partner.p2mId) {
    return callJson<PaymentBody>(`${sandbox.url}/op/merchant/payments`, {
      method: 'POST',
      headers: opHeaders(client, userToken, reference),
      body: { p2mId, amount: { currency: 'PHP', value } },
    });
  }
  function execute(userToken: string, paymentId: string) {
    return callJson<PaymentBody>(`${sandbox.url}/op/merchant/payments/${paymentId}/execute`, {
      method: 'POST',
      headers: opHeaders(client, userToken),
    });
  }

  it('creates without debit, executes once with the fee, and refuses a second execute with 409', async () => {
    await admin.settings({ merchantFee: '1.50' });
    const user = await admin.createUser({ mobile: '09171234567', kycLevel: 'KYC1', balance: '100.00' });
    const { accessToken } = await admin.embeddedTokens(user.userId);
    const reference = randomUUID();
    const created = await create(accessToken, 25.75, reference);
    expect(created.status).toBe(200);
    expect(created.body).toEqual({
      id: expect.stringMatching(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/),
      p2mId: sandbox.partner.p2mId,
      requestReferenceNumber: reference,
      amount: { currency: 'PHP', value: 25.75 },
      fee: { currency: 'PHP', value: 1.5 },
    });
    expect((await admin.user(user.userId)).balance).toBe('100.00');

    const executed = await execute(accessToken, created.body.id);
    expect(executed.status).toBe(200);
    expect(executed.body).toEqual(created.body);
    expect((await admin.user(user.userId)).balance).toBe('72.75');

    const again = await execute(accessToken, created.body.id);
    expect([again.status, again.body.code]).toEqual([409, 'PAYMENT_ALREADY_EXECUTED']);
    expect((await admin.user(user.userId)).balance).toBe('72.75');
    expect((await admin.ledger()).payments).toEqual([
      expect.objectContaining({ paymentId: created.body.id, status: 'EXECUTED', userId: user.userId, executions: 1 }),
    ]);
  });

  it('fails INSUFFICIENT_BALANCE and answers the same failure on every later execute', async () => {
    const user = await admin.createUser({ mobile: '09171234567', kycLevel: 'KYC1', balance: '10.00' });
    const { accessToken } = await admin.embeddedTokens(user.userId);
    const created = await create(accessToken, 10.01);
    const failed = await execute(accessToken, created.body.id);
    expect([failed.status, failed.body.code]).toEqual([400, 'INSUFFICIENT_BALANCE']);
    await admin.call('PATCH', `/users/${user.userId}`, { balance: '500.00' });
    const repeated = await execute(accessToken, created.body.id);
    expect([repeated.status, repeated.body.code]).toEqual([400, 'INSUFFICIENT_BALANCE']);
    expect((await admin.user(user.userId)).balance).toBe('500.00');
    expect((await admin.ledger()).payments[0]).toMatchObject({ status: 'FAILED', executions: 0 });
  });

  it('validates p2mId, amount bounds and currency, and answers 404 for unknown or foreign payments', async () => {
    const user = await admin.createUser({ mobile: '09171234567', kycLevel: 'KYC1', balance: '10.00' });
    const other = await admin.createUser({ mobile: '09171234568', kycLevel: 'KYC1', balance: '10.00' });
    const { accessToken } = await admin.embeddedTokens(user.userId);
    expect((await create(accessToken, 1, randomUUID(), 'P2M-other')).body.code).toBe('VALIDATION_ERROR');
    expect((await create(accessToken, 0)).body.code).toBe('VALIDATION_ERROR');
    expect((await create(accessToken, 10_000_000_000)).body.code).toBe('VALIDATION_ERROR');
    expect((await create(accessToken, 1.005)).body.code).toBe('VALIDATION_ERROR');
    const usd = await callJson(`${sandbox.url}/op/merchant/payments`, {
      method: 'POST',
      headers: opHeaders(client, accessToken),
      body: { p2mId: sandbox.partner.p2mId, amount: { currency: 'USD', value: 1 } },
    });
    expect(usd.body.code).toBe('VALIDATION_ERROR');
    expect((await execute(accessToken, randomUUID())).status).toBe(404);

    const created = await create(accessToken, 1);
    const { accessToken: otherToken } = await admin.embeddedTokens(other.userId);
    const foreign = await execute(otherToken, created.body.id);
    expect([foreign.status, foreign.body.code]).toEqual([404, 'PAYMENT_NOT_FOUND']);
    expect((await admin.user(other.userId)).balance).toBe('10.00');
  });
});
