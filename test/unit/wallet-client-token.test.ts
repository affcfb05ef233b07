// The client-token cache against a real local HTTP server that counts token requests: one
// request for many concurrent callers, refresh ahead of expiry, one retry on a refused token.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createWalletClient } from '../../wallet/index.ts';
import type { WalletClient, WalletError } from '../../wallet/index.ts';
import { clientTokenExpiry, createClientTokenCache } from '../../wallet/client-token.ts';
import { sendJson, startStubServer } from '../support/wallet-stub-server.ts';
import type { StubRequest, StubServer } from '../support/wallet-stub-server.ts';
import { stubClientConfig } from '../support/wallet-stub-config.ts';

const unsignedJwt = (claims: Record<string, unknown>) =>
  [{ alg: 'HS256', typ: 'JWT' }, claims]
    .map((part) => Buffer.from(JSON.stringify(part)).toString('base64url'))
    .join('.') + '.sig';

const payment = {
  id: '3b0b6c52-3f59-4c43-8a4b-2f6f2b7d9f10',
  p2mId: 'p2m-0001',
  requestReferenceNumber: 'ref',
  amount: { currency: 'PHP', value: 10 },
  fee: { currency: 'PHP', value: 0 },
};

let server: StubServer;
let client: WalletClient | undefined;
let issued: string[];
let clockMs: number;
/** Tokens the op stub accepts; emptied to simulate the service refusing them. */
let accepted: Set<string>;

function isTokenRequest(request: StubRequest) {
  return request.path === '/connect/token';
}

beforeEach(async () => {
  issued = [];
  accepted = new Set();
  clockMs = Date.UTC(2030, 0, 1);
  server = await startStubServer(async (request, response) => {
    if (isTokenRequest(request)) {
      await new Promise((resolve) => setTimeout(resolve, 50)); // keep the refresh in flight a while
      const iat = Math.floor(clockMs / 1000);
      const token = unsignedJwt({ sub: 'partner', iat, exp: iat + 3600, n: issued.length });
      issued.push(token);
      accepted.add(token);
      return sendJson(response, 200, { access_token: token });
    }
    const bearer = String(request.headers.authorization ?? '').replace(/^Bearer /, '');
    if (!accepted.has(bearer))
      return sendJson(response, 401, { code: 'CLIENT_TOKEN_INVALID', message: 'bad client token' });
    return sendJson(response, 201, payment);
  });
  client = createWalletClient(stubClientConfig(server.url, { now: () => clockMs }));
});

afterEach(async () => {
  await client?.close();
  await server.close();
});

const pay = (wallet: WalletClient) =>
  wallet.createPayment({ userAccessToken: 'user-token', amount: { currency: 'PHP', value: '10.00' } });
const tokenRequests = () => server.requests.filter(isTokenRequest).length;

describe('client-token cache', () => {
  it('shares one token request among concurrent callers', async () => {
    const wallet = client as WalletClient;
    const results = await Promise.all(Array.from({ length: 25 }, () => pay(wallet)));
    expect(results).toHaveLength(25);
    expect(tokenRequests()).toBe(1);
    const bearers = new Set(server.requests.filter((r) => !isTokenRequest(r)).map((r) => r.headers.authorization));
    expect(bearers).toEqual(new Set([`Bearer ${issued[0]}`]));
  });

  it('reuses the token until 60 s before its expiry, then refreshes once', async () => {
    const wallet = client as WalletClient;
    await pay(wallet);
    clockMs += 3600_000 - 61_000;
    await pay(wallet);
    expect(tokenRequests()).toBe(1);
    clockMs += 2_000; // now within the margin
    await Promise.all([pay(wallet), pay(wallet), pay(wallet)]);
    expect(tokenRequests()).toBe(2);
  });

  it('on 401 CLIENT_TOKEN_INVALID renews the token and retries the call once', async () => {
    const wallet = client as WalletClient;
    await pay(wallet);
    accepted.clear(); // the service forgot the token (restart, revocation, skewed clock)
    const result = await pay(wallet);
    expect(result.data.walletPaymentId).toBe(payment.id);
    expect(tokenRequests()).toBe(2);
    const payments = server.requests.filter((r) => !isTokenRequest(r));
    expect(payments.map((r) => r.headers.authorization)).toEqual([
      `Bearer ${issued[0]}`,
      `Bearer ${issued[0]}`,
      `Bearer ${issued[1]}`,
    ]);
  });

  it('retries only once: a second refusal is the caller’s', async () => {
    server.handle((request, response) => {
      if (isTokenRequest(request)) return sendJson(response, 200, { access_token: unsignedJwt({ n: Math.random() }) });
      return sendJson(response, 401, { code: 'CLIENT_TOKEN_INVALID', message: 'no' });
    });
    const error = (await pay(client as WalletClient).catch((caught: unknown) => caught)) as WalletError;
    expect(error.code).toBe('CLIENT_TOKEN_INVALID');
    // The partner's credentials refused: nothing was taken, and the call may be sent again once they are mended.
    expect(error.outcome).toBe('retryable');
    expect(tokenRequests()).toBe(2);
    expect(server.requests.filter((r) => !isTokenRequest(r))).toHaveLength(2);
  });

  it('a failed token request fails every waiting caller and the next call tries again', async () => {
    let failing = true;
    server.handle((request, response) => {
      if (isTokenRequest(request)) {
        if (failing) return sendJson(response, 401, { error: 'invalid_client' });
        const token = unsignedJwt({ ok: true });
        accepted.add(token);
        return sendJson(response, 200, { access_token: token });
      }
      return sendJson(response, 201, payment);
    });
    const wallet = client as WalletClient;
    const errors = (await Promise.all(
      [pay(wallet), pay(wallet)].map((p) => p.catch((e: unknown) => e)),
    )) as WalletError[];
    expect(errors.map((e) => [e.operation, e.code, e.outcome])).toEqual([
      ['connect.token.client_credentials', 'invalid_client', 'retryable'],
      ['connect.token.client_credentials', 'invalid_client', 'retryable'],
    ]);
    expect(tokenRequests()).toBe(1);
    failing = false;
    await pay(wallet);
    expect(tokenRequests()).toBe(2);
  });
});

describe('client-token expiry', () => {
  it('uses the lifetime exp - iat on the client clock, so a skewed service clock does not matter', () => {
    const token = unsignedJwt({ iat: 1_000, exp: 4_600 });
    expect(clientTokenExpiry(token, undefined, 50_000_000).getTime()).toBe(50_000_000 + 3_600_000);
  });
  it('falls back to exp, expires_in, then the interface lifetime', () => {
    expect(clientTokenExpiry(unsignedJwt({ exp: 2_000 }), undefined, 0).getTime()).toBe(2_000_000);
    expect(clientTokenExpiry('opaque', 120, 1_000).getTime()).toBe(121_000);
    expect(clientTokenExpiry('opaque', undefined, 0).getTime()).toBe(3_600_000);
  });
  it('never refetches on every call when the lifetime is shorter than the margin', async () => {
    let now = 0;
    let fetches = 0;
    const cache = createClientTokenCache({
      now: () => now,
      fetchToken: async () => ({ accessToken: `t${++fetches}`, expiresAt: new Date(now + 30_000) }),
    });
    expect(await cache.get()).toBe('t1');
    now = 10_000;
    expect(await cache.get()).toBe('t1');
    now = 16_000;
    expect(await cache.get()).toBe('t2');
  });
  it('invalidate forgets only the refused token', async () => {
    let fetches = 0;
    const cache = createClientTokenCache({
      now: () => 0,
      fetchToken: async () => ({ accessToken: `t${++fetches}`, expiresAt: new Date(3_600_000) }),
    });
    expect(await cache.get()).toBe('t1');
    cache.invalidate('t0');
    expect(await cache.get()).toBe('t1');
    cache.invalidate('t1');
    expect(await cache.get()).toBe('t2');
  });
});
