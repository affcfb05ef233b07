// Every call of the wallet client against the real sandbox over HTTP: the happy paths, every
// error code of contract-decisions, token and code lifetimes on the sandbox clock, single-use
// codes, embedded rotation, and one audit record per call with no secret in it.
import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { WalletCallRecord, WalletClient, WalletClientConfig } from '../../wallet/index.ts';
import { createWalletTransport } from '../../wallet/transport.ts';
import {
  clientFor,
  expectNoneOf,
  loginThroughPages,
  sandboxAdmin,
  startTestSandbox,
  walletFailure,
} from '../support/wallet-sandbox.ts';
import type { RunningSandbox, SandboxAdmin } from '../support/wallet-sandbox.ts';

const uuidV4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

let sandbox: RunningSandbox;
let admin: SandboxAdmin;
let wallet: WalletClient;
let records: WalletCallRecord[];
/** Tokens, codes and keys a test handled: none may appear in an audit record. */
let secrets: string[];

beforeAll(async () => {
  sandbox = await startTestSandbox();
  admin = sandboxAdmin(sandbox);
});
afterAll(async () => {
  await sandbox.close();
});
beforeEach(async () => {
  await admin.reset();
  ({ wallet, records } = clientFor(sandbox));
  secrets = [
    sandbox.partner.clientSecret,
    sandbox.partner.transferApiKey,
    String(sandbox.partner.profileVerificationJwk.k),
  ];
});
afterEach(async () => {
  await wallet.close();
  // Every call was recorded, and no record carries a secret.
  for (const record of records) {
    expect(record.requestReferenceNo).toMatch(uuidV4);
    expect(record.path).not.toContain('?');
  }
  expectNoneOf(JSON.stringify(records), secrets);
});

const php = (value: string) => ({ currency: 'PHP' as const, value });
const keep = <T extends string>(value: T): T => {
  secrets.push(value);
  return value;
};

async function userWithTokens(input: Parameters<SandboxAdmin['createUser']>[0] = {}) {
  const user = await admin.createUser(input);
  const tokens = await admin.standaloneTokens(user.userId);
  keep(tokens.access_token);
  keep(tokens.refresh_token);
  return { user, accessToken: tokens.access_token, refreshToken: tokens.refresh_token };
}

async function embeddedUser(input: Parameters<SandboxAdmin['createUser']>[0] = {}) {
  const user = await admin.createUser(input);
  const tokens = await admin.embeddedTokens(user.userId);
  keep(tokens.accessToken);
  keep(tokens.refreshToken);
  return { user, ...tokens };
}

describe('connect', () => {
  it('authorization code flow: login pages, single-use code, token response', async () => {
    const { userId, mobile } = await admin.createUser();
    const url = wallet.authorizeUrl({ mobile, state: 'state-123' });
    const callback = await loginThroughPages(sandbox, url);
    expect(callback.get('state')).toBe('state-123');
    const code = keep(callback.get('code') ?? '');
    expect(code).not.toBe('');

    const before = Date.now();
    const result = await wallet.exchangeCode(code);
    keep(result.data.accessToken);
    keep(result.data.refreshToken ?? '');
    expect(result.requestReferenceNo).toMatch(uuidV4);
    expect(result.data).toMatchObject({ tokenType: 'Bearer', expiresIn: 3600 });
    expect(result.data.refreshToken).toEqual(expect.any(String));
    expect(result.data.expiresAt.getTime()).toBeGreaterThanOrEqual(before + 3_600_000);
    expect(result.data.expiresAt.getTime()).toBeLessThanOrEqual(Date.now() + 3_600_000);

    // The token works: it funds the user's wallet.
    const transfer = await wallet.createTransfer({
      recipient: { type: 'TOKEN', value: result.data.accessToken },
      amount: php('1.00'),
    });
    expect((await wallet.executeTransfer(transfer.data.transferId)).data.status).toBe('APPROVED');
    expect((await admin.user(userId)).balance).toBe('1001.00');

    // Single use: a second exchange is refused.
    const reused = await walletFailure(wallet.exchangeCode(code));
    expect([reused.httpStatus, reused.code, reused.outcome]).toEqual([400, 'invalid_grant', 'rejected']);
    expect(records.map((r) => [r.operation, r.outcome, r.errorCode])).toEqual([
      ['connect.token.authorization_code', 'ok', null],
      ['transfers.create', 'ok', null],
      ['transfers.execute', 'ok', null],
      ['connect.token.authorization_code', 'rejected', 'invalid_grant'],
    ]);
  });

  it('an authorization code expires after 5 minutes', async () => {
    const { mobile } = await admin.createUser();
    const code = keep((await loginThroughPages(sandbox, wallet.authorizeUrl({ mobile }))).get('code') ?? '');
    await admin.advanceClock(301);
    const error = await walletFailure(wallet.exchangeCode(code));
    expect([error.code, error.outcome]).toEqual(['invalid_grant', 'rejected']);
  });

  it('an unknown code is invalid_grant', async () => {
    const error = await walletFailure(wallet.exchangeCode('no-such-code'));
    expect([error.httpStatus, error.code, error.outcome, error.operation]).toEqual([
      400,
      'invalid_grant',
      'rejected',
      'connect.token.authorization_code',
    ]);
  });

  it('wrong client credentials are invalid_client, for every grant', async () => {
    const { wallet: wrong, records: wrongRecords } = clientFor(sandbox, { clientSecret: 'not-the-secret' });
    try {
      for (const call of [
        () => wrong.exchangeCode('c'),
        () => wrong.refreshStandalone('r'),
        () => wrong.clientCredentials(),
      ]) {
        const error = await walletFailure(call());
        expect([error.httpStatus, error.code, error.outcome]).toEqual([401, 'invalid_client', 'rejected']);
        expect(error.message).not.toContain('not-the-secret');
      }
      expectNoneOf(JSON.stringify(wrongRecords), ['not-the-secret']);
    } finally {
      await wrong.close();
    }
  });

  it('an unsupported grant is unsupported_grant_type (through the client transport)', async () => {
    const transport = createWalletTransport({ timeoutMs: 5_000, now: Date.now });
    try {
      const { clientId, clientSecret } = sandbox.partner;
      const error = await walletFailure(
        transport.send({
          operation: 'connect.token.client_credentials',
          method: 'POST',
          baseUrl: `${sandbox.url}/connect`,
          path: '/token',
          headers: {
            'content-type': 'application/x-www-form-urlencoded',
            authorization: `Basic ${Buffer.from(`${clientId}:${clientSecret}`).toString('base64')}`,
          },
          body: 'grant_type=password&username=u&password=p',
          secrets: [clientSecret],
          parse: (body) => body,
        }),
      );
      expect([error.httpStatus, error.code, error.outcome]).toEqual([400, 'unsupported_grant_type', 'rejected']);
    } finally {
      await transport.close();
    }
  });

  it('standalone refresh: a new access token, the same refresh token, the old access token refused', async () => {
    const { accessToken, refreshToken } = await userWithTokens();
    const refreshed = await wallet.refreshStandalone(refreshToken);
    keep(refreshed.data.accessToken);
    expect(refreshed.data.accessToken).not.toBe(accessToken);
    expect(refreshed.data.refreshToken).toBe(refreshToken);
    expect(refreshed.data.expiresIn).toBe(3600);

    const old = await walletFailure(
      wallet.createTransfer({ recipient: { type: 'TOKEN', value: accessToken }, amount: php('1.00') }),
    );
    expect([old.httpStatus, old.code, old.outcome]).toEqual([401, 'UNAUTHORIZED', 'rejected']);
    await wallet.createTransfer({
      recipient: { type: 'TOKEN', value: refreshed.data.accessToken },
      amount: php('1.00'),
    });

    // Scope narrowing: the profile then carries the openid fields only.
    const narrowed = await wallet.refreshStandalone(refreshToken, 'openid');
    keep(narrowed.data.accessToken);
    expect(narrowed.data.scope).toBe('openid');
    const profile = await wallet.getProfile(narrowed.data.accessToken);
    expect(Object.keys(profile.data).sort()).toEqual(['id', 'kycStatus', 'profileId']);
  });

  it('a standalone access token lives 3600 s and its refresh token 604800 s', async () => {
    const { accessToken, refreshToken } = await userWithTokens();
    await admin.advanceClock(3601);
    const expired = await walletFailure(
      wallet.createTransfer({ recipient: { type: 'TOKEN', value: accessToken }, amount: php('1.00') }),
    );
    expect([expired.code, expired.outcome]).toEqual(['UNAUTHORIZED', 'rejected']);
    keep((await wallet.refreshStandalone(refreshToken)).data.accessToken);
    await admin.advanceClock(604800 - 3601 + 1);
    const gone = await walletFailure(wallet.refreshStandalone(refreshToken));
    expect([gone.httpStatus, gone.code, gone.outcome]).toEqual([400, 'invalid_grant', 'rejected']);
  });

  it('client credentials: a client token with its expiry', async () => {
    const before = Date.now();
    const result = await wallet.clientCredentials();
    keep(result.data.accessToken);
    expect(result.data.expiresAt.getTime()).toBeGreaterThanOrEqual(before + 3_599_000);
    expect(result.data.expiresAt.getTime()).toBeLessThanOrEqual(Date.now() + 3_600_000);
  });
});

describe('op: embedded tokens', () => {
  it('rotation: the new pair works, the old refresh and access tokens are refused', async () => {
    const { accessToken, refreshToken } = await embeddedUser();
    const rotated = await wallet.refreshEmbedded(refreshToken);
    keep(rotated.data.accessToken);
    keep(rotated.data.refreshToken);
    expect(rotated.data.refreshToken).not.toBe(refreshToken);
    expect(rotated.data.expiresAt.getTime()).toBeGreaterThan(Date.now() + 590_000);

    const again = await walletFailure(wallet.refreshEmbedded(refreshToken));
    expect([again.httpStatus, again.code, again.outcome]).toEqual([400, 'REFRESH_TOKEN_INVALID', 'rejected']);
    const oldAccess = await walletFailure(wallet.getProfile(accessToken));
    expect([oldAccess.httpStatus, oldAccess.code, oldAccess.outcome]).toEqual([401, 'USER_TOKEN_INVALID', 'rejected']);

    expect((await wallet.getProfile(rotated.data.accessToken)).data.kycStatus).toBe('KYC1');
    keep((await wallet.refreshEmbedded(rotated.data.refreshToken)).data.refreshToken);
  });

  it('an embedded access token lives 600 s and its refresh token 1200 s', async () => {
    const { accessToken, refreshToken } = await embeddedUser();
    await admin.advanceClock(601);
    const expired = await walletFailure(wallet.getProfile(accessToken));
    expect([expired.code, expired.outcome]).toEqual(['USER_TOKEN_INVALID', 'rejected']);
    await admin.advanceClock(600);
    const gone = await walletFailure(wallet.refreshEmbedded(refreshToken));
    expect([gone.code, gone.outcome]).toEqual(['REFRESH_TOKEN_INVALID', 'rejected']);
  });

  it('an expired client token (3600 s) is renewed and the call sent once more', async () => {
    const first = await embeddedUser();
    await wallet.getProfile(first.accessToken);
    await admin.advanceClock(3601);
    const second = await embeddedUser();
    const profile = await wallet.getProfile(second.accessToken);
    expect(profile.data.id).toBe(second.user.userId);
    expect(records.map((r) => [r.operation, r.httpStatus, r.errorCode])).toEqual([
      ['connect.token.client_credentials', 200, null],
      ['op.profile', 200, null],
      ['op.profile', 401, 'CLIENT_TOKEN_INVALID'],
      ['connect.token.client_credentials', 200, null],
      ['op.profile', 200, null],
    ]);
    expect(profile.requestReferenceNo).toBe(records[4]?.requestReferenceNo);
  });

  it('a refusal of the partner’s own client credentials is retryable, never the call’s or the user’s refusal', async () => {
    const { accessToken } = await embeddedUser();
    // The secret rotated at the wallet and not here: the token endpoint answers 401 invalid_client.
    const stale = clientFor(sandbox, { clientSecret: 'rotated-at-the-wallet' });
    try {
      const refused = await walletFailure(stale.wallet.getProfile(accessToken));
      // Before: outcome "rejected", which a payment read as its execute refused and a session as "log in again".
      expect([refused.operation, refused.httpStatus, refused.code, refused.outcome]).toEqual([
        'connect.token.client_credentials',
        401,
        'invalid_client',
        'retryable',
      ]);
      expect(stale.records.map((record) => record.operation)).toEqual(['connect.token.client_credentials']);
    } finally {
      await stale.wallet.close();
    }
    // The op service refusing the client token twice (the cached one, then one fetched anew) reads the same.
    await admin.setFaults([
      { endpoint: 'op.profile', mode: 'error-before-effect', rate: 1, status: 401, code: 'CLIENT_TOKEN_INVALID' },
    ]);
    const twice = await walletFailure(wallet.getProfile(accessToken));
    expect([twice.operation, twice.httpStatus, twice.code, twice.outcome]).toEqual([
      'op.profile',
      401,
      'CLIENT_TOKEN_INVALID',
      'retryable',
    ]);
    expect(records.map((record) => [record.operation, record.httpStatus])).toEqual([
      ['connect.token.client_credentials', 200],
      ['op.profile', 401],
      ['connect.token.client_credentials', 200],
      ['op.profile', 401],
    ]);
  });

  it('a bad user token is USER_TOKEN_INVALID', async () => {
    const error = await walletFailure(wallet.getProfile('not-a-token'));
    expect([error.httpStatus, error.code, error.outcome, error.operation]).toEqual([
      401,
      'USER_TOKEN_INVALID',
      'rejected',
      'op.profile',
    ]);
  });
});

describe('op: profile', () => {
  it('decrypts and verifies the profile with every scope (the default registration)', async () => {
    const { user, accessToken } = await embeddedUser({ firstName: 'Maria', lastName: 'Santos' });
    const { data } = await wallet.getProfile(accessToken);
    const stored = (await admin.user(user.userId)).profile;
    expect(data).toEqual({
      id: user.userId,
      profileId: user.profileId,
      kycStatus: 'KYC1',
      name: stored.name,
      birthDetails: stored.birthDetails,
      contact: stored.contact,
      address: stored.address,
      workDetails: stored.workDetails,
      identityDocument: [
        expect.objectContaining({
          type: 'PASSPORT',
          value: null,
          frontUrl: expect.stringContaining('/_sandbox/documents/'),
        }),
      ],
    });
    expect(data.name?.firstName).toBe('Maria');
  });

  const scopeFields = {
    openid: [],
    profile: ['birthDetails', 'name'],
    contact: ['contact'],
    address: ['address'],
    workDetails: ['workDetails'],
    identity_document: ['identityDocument'],
  } as const;

  it.each(Object.keys(scopeFields) as Array<keyof typeof scopeFields>)(
    'a partner granted only openid and %s gets exactly those fields',
    async (scope) => {
      const scoped = await startTestSandbox({ scopes: ['openid', scope] });
      const scopedAdmin = sandboxAdmin(scoped);
      const { wallet: scopedWallet } = clientFor(scoped);
      try {
        const user = await scopedAdmin.createUser({ kycLevel: 'KYC0' });
        const { accessToken } = await scopedAdmin.embeddedTokens(user.userId);
        const { data } = await scopedWallet.getProfile(accessToken);
        expect(Object.keys(data).sort()).toEqual(['id', 'kycStatus', 'profileId', ...scopeFields[scope]].sort());
        expect(data.kycStatus).toBe('KYC0');
      } finally {
        await scopedWallet.close();
        await scoped.close();
      }
    },
  );

  it('a client with the wrong decryption key gets PROFILE_DECRYPTION_FAILED, rejected', async () => {
    const other = await startTestSandbox();
    const { wallet: wrongKey } = clientFor(sandbox, {
      profileDecryptionJwk: other.partner.profileDecryptionJwk as WalletClientConfig['profileDecryptionJwk'],
    });
    try {
      const { accessToken } = await embeddedUser();
      const error = await walletFailure(wrongKey.getProfile(accessToken));
      expect([error.httpStatus, error.code, error.outcome]).toEqual([200, 'PROFILE_DECRYPTION_FAILED', 'rejected']);
    } finally {
      await wrongKey.close();
      await other.close();
    }
  });

  it('a client with the wrong verification key gets PROFILE_SIGNATURE_INVALID, rejected', async () => {
    const { wallet: wrongKey } = clientFor(sandbox, {
      profileVerificationJwk: { kty: 'oct', k: Buffer.from(randomUUID()).toString('base64url') },
    });
    try {
      const { accessToken } = await embeddedUser();
      const error = await walletFailure(wrongKey.getProfile(accessToken));
      expect([error.code, error.outcome]).toEqual(['PROFILE_SIGNATURE_INVALID', 'rejected']);
    } finally {
      await wrongKey.close();
    }
  });
});

describe('op: merchant payments', () => {
  it('create debits nothing; execute debits amount plus fee once', async () => {
    await admin.settings({ merchantFee: '1.50' });
    const { user, accessToken } = await embeddedUser({ balance: '100.00' });
    const created = await wallet.createPayment({ userAccessToken: accessToken, amount: php('20.10') });
    expect(created.data).toEqual({
      walletPaymentId: expect.stringMatching(uuidV4),
      p2mId: sandbox.partner.p2mId,
      requestReferenceNumber: created.requestReferenceNo,
      amount: php('20.10'),
      fee: php('1.50'),
    });
    expect((await admin.user(user.userId)).balance).toBe('100.00');

    const executed = await wallet.executePayment({
      userAccessToken: accessToken,
      walletPaymentId: created.data.walletPaymentId,
    });
    expect(executed.data).toMatchObject({
      walletPaymentId: created.data.walletPaymentId,
      amount: php('20.10'),
      fee: php('1.50'),
    });
    expect((await admin.user(user.userId)).balance).toBe('78.40');

    const again = await walletFailure(
      wallet.executePayment({ userAccessToken: accessToken, walletPaymentId: created.data.walletPaymentId }),
    );
    expect([again.httpStatus, again.code, again.outcome]).toEqual([409, 'PAYMENT_ALREADY_EXECUTED', 'unknown']);
    expect((await admin.ledger()).payments).toEqual([expect.objectContaining({ executions: 1 })]);
  });

  it('INSUFFICIENT_BALANCE when the wallet cannot cover amount plus fee, and again on a repeat', async () => {
    const { accessToken } = await embeddedUser({ balance: '5.00' });
    const { data } = await wallet.createPayment({ userAccessToken: accessToken, amount: php('10.00') });
    for (let attempt = 0; attempt < 2; attempt++) {
      const error = await walletFailure(
        wallet.executePayment({ userAccessToken: accessToken, walletPaymentId: data.walletPaymentId }),
      );
      expect([error.httpStatus, error.code, error.outcome]).toEqual([400, 'INSUFFICIENT_BALANCE', 'rejected']);
    }
  });

  it('PAYMENT_NOT_FOUND for an unknown payment id', async () => {
    const { accessToken } = await embeddedUser();
    const error = await walletFailure(
      wallet.executePayment({ userAccessToken: accessToken, walletPaymentId: randomUUID() }),
    );
    expect([error.httpStatus, error.code, error.outcome]).toEqual([404, 'PAYMENT_NOT_FOUND', 'rejected']);
  });

  it('VALIDATION_ERROR for a body the service refuses (a currency the wallet does not hold)', async () => {
    const { accessToken } = await embeddedUser();
    const error = await walletFailure(
      wallet.createPayment({ userAccessToken: accessToken, amount: { currency: 'USD', value: '1.00' } }),
    );
    expect([error.httpStatus, error.code, error.outcome]).toEqual([400, 'VALIDATION_ERROR', 'rejected']);
  });

  it('USER_TOKEN_INVALID for payments with a bad user token', async () => {
    const error = await walletFailure(wallet.createPayment({ userAccessToken: 'nope', amount: php('1.00') }));
    expect([error.httpStatus, error.code, error.outcome]).toEqual([401, 'USER_TOKEN_INVALID', 'rejected']);
  });
});

describe('transfers', () => {
  it('TOKEN recipient: create (no money moves), execute (APPROVED), retrieve', async () => {
    const { user, accessToken } = await userWithTokens({ balance: '10.00' });
    const created = await wallet.createTransfer({
      recipient: { type: 'TOKEN', value: accessToken },
      amount: php('0.30'),
    });
    expect(created.data).toMatchObject({
      status: 'CREATED',
      recipient: { type: 'TOKEN', value: expect.stringMatching(new RegExp(`^\\**${accessToken.slice(-4)}$`)) },
      amount: php('0.30'),
      requestReferenceNumber: created.requestReferenceNo,
      decline: null,
    });
    expect((await admin.user(user.userId)).balance).toBe('10.00');
    const executed = await wallet.executeTransfer(created.data.transferId);
    expect(executed.data).toMatchObject({
      transferId: created.data.transferId,
      status: 'APPROVED',
      amount: php('0.30'),
    });
    const retrieved = await wallet.retrieveTransfer(created.data.transferId);
    expect(retrieved.data).toEqual(executed.data);
    expect((await admin.user(user.userId)).balance).toBe('10.30');
  });

  it('CODE recipient: a cash-in code is single use', async () => {
    const user = await admin.createUser();
    const { code } = await admin.cashInCode(user.userId);
    keep(code);
    const created = await wallet.createTransfer({ recipient: { type: 'CODE', value: code }, amount: php('25.00') });
    expect((await wallet.executeTransfer(created.data.transferId)).data.status).toBe('APPROVED');
    const reused = await walletFailure(
      wallet.createTransfer({ recipient: { type: 'CODE', value: code }, amount: php('25.00') }),
    );
    expect([reused.httpStatus, reused.code, reused.outcome]).toEqual([400, 'CODE_INVALID', 'rejected']);
    expect(reused.message).not.toContain(code);
  });

  it('a cash-in code expires after 30 minutes', async () => {
    const user = await admin.createUser();
    const { code } = await admin.cashInCode(user.userId);
    keep(code);
    await admin.advanceClock(1801);
    const error = await walletFailure(
      wallet.createTransfer({ recipient: { type: 'CODE', value: code }, amount: php('1.00') }),
    );
    expect([error.code, error.outcome]).toEqual(['CODE_INVALID', 'rejected']);
  });

  it('M133 for a recipient wallet that is not upgraded (KYC0), accepted once upgraded', async () => {
    const { user, accessToken } = await userWithTokens({ kycLevel: 'KYC0' });
    const error = await walletFailure(
      wallet.createTransfer({ recipient: { type: 'TOKEN', value: accessToken }, amount: php('1.00') }),
    );
    expect([error.httpStatus, error.code, error.outcome, error.operation]).toEqual([
      400,
      'M133',
      'rejected',
      'transfers.create',
    ]);
    await admin.setKyc(user.userId, 'KYC1');
    await wallet.createTransfer({ recipient: { type: 'TOKEN', value: accessToken }, amount: php('1.00') });
  });

  it('1096 when sender and recipient are the same account', async () => {
    const { accessToken } = await userWithTokens({ isPartnerAccount: true });
    const error = await walletFailure(
      wallet.createTransfer({ recipient: { type: 'TOKEN', value: accessToken }, amount: php('1.00') }),
    );
    expect([error.httpStatus, error.code, error.outcome]).toEqual([400, '1096', 'rejected']);
  });

  it('UNAUTHORIZED for a wrong API key, without the key in the error', async () => {
    const { wallet: wrong } = clientFor(sandbox, { transferApiKey: 'wrong-api-key-value' });
    try {
      const error = await walletFailure(wrong.retrieveTransfer(randomUUID()));
      expect([error.httpStatus, error.code, error.outcome]).toEqual([401, 'UNAUTHORIZED', 'rejected']);
      expect(`${error.message} ${error.serviceMessage ?? ''}`).not.toContain('wrong-api-key-value');
    } finally {
      await wrong.close();
    }
  });

  it('TRANSFER_NOT_FOUND for an unknown transfer id, on retrieve and execute', async () => {
    for (const call of [() => wallet.retrieveTransfer(randomUUID()), () => wallet.executeTransfer(randomUUID())]) {
      const error = await walletFailure(call());
      expect([error.httpStatus, error.code, error.outcome]).toEqual([404, 'TRANSFER_NOT_FOUND', 'rejected']);
    }
  });

  it('TRANSFER_ALREADY_EXECUTED on a second execute: unknown, and the ledger shows one execution', async () => {
    const { accessToken } = await userWithTokens();
    const { data } = await wallet.createTransfer({
      recipient: { type: 'TOKEN', value: accessToken },
      amount: php('5.00'),
    });
    await wallet.executeTransfer(data.transferId);
    const error = await walletFailure(wallet.executeTransfer(data.transferId));
    expect([error.httpStatus, error.code, error.outcome]).toEqual([409, 'TRANSFER_ALREADY_EXECUTED', 'unknown']);
    expect((await admin.ledger()).transfers).toEqual([
      expect.objectContaining({ transferId: data.transferId, executions: 1 }),
    ]);
  });

  it('VALIDATION_ERROR for a body the service refuses (a currency the wallet does not hold)', async () => {
    const { accessToken } = await userWithTokens();
    const error = await walletFailure(
      wallet.createTransfer({
        recipient: { type: 'TOKEN', value: accessToken },
        amount: { currency: 'USD', value: '1.00' },
      }),
    );
    expect([error.httpStatus, error.code, error.outcome]).toEqual([400, 'VALIDATION_ERROR', 'rejected']);
  });

  it('UNAUTHORIZED for an expired or unknown recipient token', async () => {
    const error = await walletFailure(
      wallet.createTransfer({ recipient: { type: 'TOKEN', value: 'unknown-token' }, amount: php('1.00') }),
    );
    expect([error.httpStatus, error.code, error.outcome]).toEqual([401, 'UNAUTHORIZED', 'rejected']);
  });

  it('PROCESSING then a final state read by retrieve, on the sandbox clock', async () => {
    await admin.settings({ processingDelayMs: 60_000 });
    const { accessToken } = await userWithTokens();
    const { data } = await wallet.createTransfer({
      recipient: { type: 'TOKEN', value: accessToken },
      amount: php('2.00'),
    });
    expect((await wallet.executeTransfer(data.transferId)).data.status).toBe('PROCESSING');
    expect((await wallet.retrieveTransfer(data.transferId)).data.status).toBe('PROCESSING');
    await admin.advanceClock(61);
    expect((await wallet.retrieveTransfer(data.transferId)).data.status).toBe('APPROVED');
  });

  it('a declined execution is a 200 with status DECLINED and its 60xx code', async () => {
    const { accessToken } = await userWithTokens({ balance: '10.00', walletLimit: '50.00' });
    const { data } = await wallet.createTransfer({
      recipient: { type: 'TOKEN', value: accessToken },
      amount: php('45.00'),
    });
    const executed = await wallet.executeTransfer(data.transferId);
    expect(executed.data.status).toBe('DECLINED');
    expect(executed.data.decline).toEqual({ code: '6001', message: expect.any(String) });
  });

  it('TRANSFER_EXPIRED when the operator imposes a time limit (sandbox setting)', async () => {
    await admin.settings({ transferExpirySeconds: 60 });
    const { accessToken } = await userWithTokens();
    const { data } = await wallet.createTransfer({
      recipient: { type: 'TOKEN', value: accessToken },
      amount: php('1.00'),
    });
    await admin.advanceClock(61);
    const error = await walletFailure(wallet.executeTransfer(data.transferId));
    expect([error.httpStatus, error.code, error.outcome]).toEqual([409, 'TRANSFER_EXPIRED', 'rejected']);
    expect((await wallet.retrieveTransfer(data.transferId)).data.status).toBe('EXPIRED');
  });

  it('amounts cross the boundary as exact decimals', async () => {
    const { user, accessToken } = await userWithTokens({ balance: '0.00' });
    for (const value of ['0.10', '0.20', '9999.99']) {
      const { data } = await wallet.createTransfer({
        recipient: { type: 'TOKEN', value: accessToken },
        amount: php(value),
      });
      expect(data.amount.value).toBe(value);
      await wallet.executeTransfer(data.transferId);
    }
    expect((await admin.user(user.userId)).balance).toBe('10000.29');
  });
});

describe('audit records', () => {
  it('one record per call with the fields of the wallet call table and no secret', async () => {
    const { accessToken } = await userWithTokens();
    const started = Date.now();
    const created = await wallet.createTransfer({
      recipient: { type: 'TOKEN', value: accessToken },
      amount: php('1.00'),
    });
    const missing = await walletFailure(wallet.retrieveTransfer(randomUUID()));
    expect(records).toEqual([
      {
        requestReferenceNo: created.requestReferenceNo,
        service: 'transfers',
        operation: 'transfers.create',
        method: 'POST',
        path: '/v1/transfers',
        httpStatus: 201,
        outcome: 'ok',
        errorCode: null,
        durationMs: expect.any(Number),
        startedAt: expect.any(Date),
      },
      expect.objectContaining({
        requestReferenceNo: missing.requestReferenceNo,
        service: 'transfers',
        operation: 'transfers.retrieve',
        method: 'GET',
        httpStatus: 404,
        outcome: 'rejected',
        errorCode: 'TRANSFER_NOT_FOUND',
      }),
    ]);
    expect(records[0]?.startedAt.getTime()).toBeGreaterThanOrEqual(started);
    expect(records[0]?.durationMs).toBeGreaterThanOrEqual(0);
  });
});
