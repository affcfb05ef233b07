// The client's transport against a real local HTTP server: request references, headers and
// paths, amounts across the JSON boundary, failure mapping, and the audit hook.
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createWalletClient, isWalletError } from '../../wallet/index.ts';
import type { WalletCallRecord, WalletClient, WalletClientConfig, WalletError } from '../../wallet/index.ts';
import { sendJson, startStubServer } from '../support/wallet-stub-server.ts';
import type { StubRequest, StubServer } from '../support/wallet-stub-server.ts';
import { stubClientConfig, stubSecrets } from '../support/wallet-stub-config.ts';

const uuidV4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const transferId = '9f1c2d34-5e6f-4a7b-8c9d-0e1f2a3b4c5d';

function transferRecord(request: StubRequest, status = 'CREATED', value: unknown = 100.5) {
  return {
    transferId,
    status,
    recipient: { type: 'CODE', value: '4567' },
    amount: { currency: 'PHP', value },
    requestReferenceNumber: String(request.headers['request-reference-no']),
    createdAt: '2030-01-01T00:00:00.000Z',
    updatedAt: '2030-01-01T00:00:00.000Z',
    decline: null,
  };
}

let server: StubServer;
let client: WalletClient | undefined;
let records: WalletCallRecord[];

function makeClient(overrides: Partial<WalletClientConfig> = {}, url = server.url): WalletClient {
  client = createWalletClient(stubClientConfig(url, { onCall: (record) => void records.push(record), ...overrides }));
  return client;
}

async function failure(promise: Promise<unknown>): Promise<WalletError> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  if (!isWalletError(error)) throw new Error(`expected a WalletError, got ${String(error)}`);
  return error;
}

const secretValues = ['user-access-token-SECRET', '7654321', stubSecrets.clientSecret, stubSecrets.transferApiKey];
function expectNoSecrets(text: string) {
  for (const secret of secretValues) expect(text).not.toContain(secret);
  expect(text).not.toContain(Buffer.from(`${stubSecrets.transferApiKey}:`).toString('base64'));
}

beforeEach(async () => {
  records = [];
  server = await startStubServer();
});

afterEach(async () => {
  await client?.close();
  client = undefined;
  await server.close();
});

describe('request references', () => {
  it('sends a fresh UUIDv4 Request-Reference-No with every call and returns it', async () => {
    server.handle((request, response) => sendJson(response, 200, transferRecord(request)));
    const wallet = makeClient();
    const results = await Promise.all([1, 2, 3].map(() => wallet.retrieveTransfer(transferId)));
    const sent = server.requests.map((request) => request.headers['request-reference-no']);
    const returned = results.map((result) => result.requestReferenceNo);
    for (const reference of returned) expect(reference).toMatch(uuidV4);
    expect(new Set(returned).size).toBe(3);
    expect(new Set(sent)).toEqual(new Set(returned));
    expect(records.map((record) => record.requestReferenceNo).sort()).toEqual([...returned].sort());
  });

  it('returns the reference with every error too', async () => {
    server.handle((_request, response) => sendJson(response, 404, { code: 'TRANSFER_NOT_FOUND', message: 'unknown' }));
    const error = await failure(makeClient().retrieveTransfer(transferId));
    expect(error.requestReferenceNo).toMatch(uuidV4);
    expect(error.requestReferenceNo).toBe(server.requests[0]?.headers['request-reference-no']);
  });
});

describe('requests', () => {
  it('transfers: Basic with the API key and an empty password, JSON body, path after the base prefix', async () => {
    server.handle((request, response) => sendJson(response, 201, transferRecord(request)));
    const result = await makeClient().createTransfer({
      recipient: { type: 'CODE', value: '7654321' },
      amount: { currency: 'PHP', value: '100.50' },
    });
    const [request] = server.requests;
    expect(request?.method).toBe('POST');
    expect(request?.path).toBe('/v1/transfers');
    expect(request?.headers.authorization).toBe(
      `Basic ${Buffer.from(`${stubSecrets.transferApiKey}:`).toString('base64')}`,
    );
    expect(request?.headers['content-type']).toBe('application/json');
    expect(request?.headers.accept).toBe('application/json');
    expect(JSON.parse(request?.body ?? '')).toEqual({
      recipient: { type: 'CODE', value: '7654321' },
      amount: { currency: 'PHP', value: 100.5 },
    });
    expect(result.data).toMatchObject({ transferId, status: 'CREATED', amount: { currency: 'PHP', value: '100.50' } });
  });

  it('execute and retrieve use PUT …/execute and GET …', async () => {
    server.handle((request, response) => sendJson(response, 200, transferRecord(request, 'APPROVED')));
    const wallet = makeClient();
    await wallet.executeTransfer(transferId);
    await wallet.retrieveTransfer(transferId);
    expect(server.requests.map((r) => `${r.method} ${r.path}`)).toEqual([
      `PUT /v1/transfers/${transferId}/execute`,
      `GET /v1/transfers/${transferId}`,
    ]);
  });

  it('connect: form body, Basic client credentials, expires_in string read as an integer', async () => {
    server.handle((_request, response) =>
      sendJson(response, 200, {
        access_token: 'at',
        token_type: 'Bearer',
        refresh_token: 'rt',
        expires_in: '3600',
        scope: 'openid profile',
        id_token: 'idt',
      }),
    );
    const now = Date.UTC(2030, 0, 1);
    const result = await makeClient({ now: () => now }).exchangeCode('auth-code-1');
    const [request] = server.requests;
    expect(request?.path).toBe('/connect/token');
    expect(request?.headers['content-type']).toBe('application/x-www-form-urlencoded');
    expect(request?.headers.authorization).toBe(
      `Basic ${Buffer.from(`${stubSecrets.clientId}:${stubSecrets.clientSecret}`).toString('base64')}`,
    );
    expect(Object.fromEntries(new URLSearchParams(request?.body))).toEqual({
      grant_type: 'authorization_code',
      code: 'auth-code-1',
      redirect_uri: 'https://partner.example/connect/callback',
    });
    expect(result.data).toEqual({
      accessToken: 'at',
      tokenType: 'Bearer',
      refreshToken: 'rt',
      expiresIn: 3600,
      expiresAt: new Date(now + 3_600_000),
      scope: 'openid profile',
      idToken: 'idt',
    });
  });

  it('standalone refresh sends the scope when given and keeps a missing refresh token as null', async () => {
    server.handle((_request, response) =>
      sendJson(response, 200, { access_token: 'at2', token_type: 'Bearer', expires_in: '3600' }),
    );
    const result = await makeClient().refreshStandalone('rt', 'openid');
    expect(Object.fromEntries(new URLSearchParams(server.requests[0]?.body))).toEqual({
      grant_type: 'refresh_token',
      refresh_token: 'rt',
      scope: 'openid',
    });
    expect(result.data.refreshToken).toBeNull();
  });

  it('builds the authorization URL', () => {
    const url = new URL(makeClient().authorizeUrl({ mobile: '+639171234567', state: 's-1' }));
    expect(`${url.origin}${url.pathname}`).toBe(`${server.url}/connect/authorize`);
    expect(Object.fromEntries(url.searchParams)).toEqual({
      response_type: 'code',
      client_id: stubSecrets.clientId,
      redirect_uri: 'https://partner.example/connect/callback',
      prompt: 'login',
      user_id: '+639171234567',
      state: 's-1',
    });
  });

  it('op: Bearer client token, X-Authorization user token, JSON headers, p2mId from config', async () => {
    server.handle((request, response) => {
      if (request.path === '/connect/token') return sendJson(response, 200, { access_token: 'client-token' });
      return sendJson(response, 201, {
        id: 'pay-1',
        p2mId: stubSecrets.p2mId,
        requestReferenceNumber: String(request.headers['request-reference-no']),
        amount: { currency: 'PHP', value: 250.75 },
        fee: { currency: 'PHP', value: 0 },
      });
    });
    const result = await makeClient().createPayment({
      userAccessToken: 'user-access-token-SECRET',
      amount: { currency: 'PHP', value: '250.75' },
    });
    const request = server.requests[1];
    expect(request?.path).toBe('/op/merchant/payments');
    expect(request?.headers.authorization).toBe('Bearer client-token');
    expect(request?.headers['x-authorization']).toBe('user-access-token-SECRET');
    expect(request?.headers['content-type']).toBe('application/json');
    expect(request?.headers.accept).toBe('application/json');
    expect(JSON.parse(request?.body ?? '')).toEqual({
      p2mId: stubSecrets.p2mId,
      amount: { currency: 'PHP', value: 250.75 },
    });
    expect(result.data).toEqual({
      walletPaymentId: 'pay-1',
      p2mId: stubSecrets.p2mId,
      requestReferenceNumber: result.requestReferenceNo,
      amount: { currency: 'PHP', value: '250.75' },
      fee: { currency: 'PHP', value: '0.00' },
    });
  });

  it('op.tokens reads expiresAt (UNIX seconds) into a Date', async () => {
    server.handle((request, response) => {
      if (request.path === '/connect/token') return sendJson(response, 200, { access_token: 'client-token' });
      return sendJson(response, 200, { accessToken: 'a2', refreshToken: 'r2', expiresAt: 1_900_000_000 });
    });
    const result = await makeClient().refreshEmbedded('r1');
    expect(server.requests[1]?.path).toBe('/op/tokens');
    expect(JSON.parse(server.requests[1]?.body ?? '')).toEqual({ refreshToken: 'r1' });
    expect(result.data).toEqual({ accessToken: 'a2', refreshToken: 'r2', expiresAt: new Date(1_900_000_000_000) });
  });
});

describe('amounts across the JSON boundary', () => {
  it.each([
    ['0.01', '0.01'],
    ['0.10', '0.1'],
    ['0.29', '0.29'],
    ['100.10', '100.1'],
    ['1234567.89', '1234567.89'],
    ['9999999999.99', '9999999999.99'],
    ['100', '100'],
  ])('%s goes out as the JSON number %s and comes back as the same decimal string', async (value, wire) => {
    server.handle((request, response) => {
      const sent = /"value":([0-9.]+)/.exec(request.body)?.[1] ?? 'missing';
      // Echo the number exactly as written on the wire.
      const body = JSON.stringify(transferRecord(request, 'CREATED', 0)).replace('"value":0', `"value":${sent}`);
      response.writeHead(201, { 'content-type': 'application/json' });
      response.end(body);
    });
    const result = await makeClient().createTransfer({
      recipient: { type: 'TOKEN', value: 't' },
      amount: { currency: 'PHP', value },
    });
    expect(/"value":([0-9.]+)/.exec(server.requests[0]?.body ?? '')?.[1]).toBe(wire);
    const expected = value.includes('.') ? value : `${value}.00`;
    expect(result.data.amount.value).toBe(expected);
  });

  it('reads float noise from the service (0.1 + 0.2) back as 0.30', async () => {
    server.handle((request, response) => sendJson(response, 200, transferRecord(request, 'APPROVED', 0.1 + 0.2)));
    expect((await makeClient().retrieveTransfer(transferId)).data.amount.value).toBe('0.30');
  });

  it('refuses an invalid amount before sending anything', async () => {
    const wallet = makeClient();
    for (const value of ['0.001', '1e3', '-1', '10000000000.00', '1.234']) {
      const error = await failure(
        wallet.createTransfer({ recipient: { type: 'TOKEN', value: 't' }, amount: { currency: 'PHP', value } }),
      );
      expect([error.code, error.outcome, error.httpStatus]).toEqual(['INVALID_ARGUMENT', 'rejected', null]);
    }
    expect(server.requests).toHaveLength(0);
  });
});

describe('failures', () => {
  it('a hang past timeoutMs is TIMEOUT: unknown for execute, retryable for retrieve', async () => {
    server.handle(() => undefined); // never answers
    const wallet = makeClient({ timeoutMs: 200 });
    const execute = await failure(wallet.executeTransfer(transferId));
    expect([execute.code, execute.outcome, execute.httpStatus]).toEqual(['TIMEOUT', 'unknown', null]);
    const retrieve = await failure(wallet.retrieveTransfer(transferId));
    expect([retrieve.code, retrieve.outcome]).toEqual(['TIMEOUT', 'retryable']);
  });

  it('a body that stops half way is a TIMEOUT too', async () => {
    server.handle((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json' });
      response.write('{"transferId":');
    });
    const error = await failure(makeClient({ timeoutMs: 200 }).executeTransfer(transferId));
    expect([error.code, error.outcome]).toEqual(['TIMEOUT', 'unknown']);
  });

  it('a reset connection is CONNECTION_RESET: unknown for create, retryable for retrieve', async () => {
    server.handle((_request, response) => void response.socket?.destroy());
    const wallet = makeClient();
    const create = await failure(
      wallet.createTransfer({ recipient: { type: 'TOKEN', value: 't' }, amount: { currency: 'PHP', value: '1.00' } }),
    );
    expect([create.code, create.outcome]).toEqual(['CONNECTION_RESET', 'unknown']);
    expect((await failure(wallet.retrieveTransfer(transferId))).outcome).toBe('retryable');
  });

  it('a refused connection is CONNECTION_REFUSED and retryable even for execute', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const { port } = closed.address() as AddressInfo;
    await new Promise((resolve) => closed.close(resolve));
    const error = await failure(makeClient({}, `http://127.0.0.1:${port}`).executeTransfer(transferId));
    expect([error.code, error.outcome, error.httpStatus]).toEqual(['CONNECTION_REFUSED', 'retryable', null]);
  });

  it('an unparsable 2xx body is UNPARSABLE_RESPONSE: unknown for execute, retryable for retrieve', async () => {
    server.handle((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end('{"transferId": "abc", garbage');
    });
    const wallet = makeClient();
    const execute = await failure(wallet.executeTransfer(transferId));
    expect([execute.code, execute.outcome, execute.httpStatus]).toEqual(['UNPARSABLE_RESPONSE', 'unknown', 200]);
    expect((await failure(wallet.retrieveTransfer(transferId))).outcome).toBe('retryable');
  });

  it('a 2xx body of the wrong shape is UNPARSABLE_RESPONSE and names the field', async () => {
    server.handle((request, response) => sendJson(response, 200, { ...transferRecord(request), status: 'WEIRD' }));
    const error = await failure(makeClient().executeTransfer(transferId));
    expect([error.code, error.outcome]).toEqual(['UNPARSABLE_RESPONSE', 'unknown']);
    expect(error.message).toContain('status');
  });

  it('429 is retryable with retryAfterMs from Retry-After', async () => {
    server.handle((_request, response) =>
      sendJson(response, 429, { code: 'RATE_LIMITED', message: 'slow down' }, { 'retry-after': '2' }),
    );
    const error = await failure(makeClient().executeTransfer(transferId));
    expect([error.code, error.outcome, error.httpStatus, error.retryAfterMs]).toEqual([
      'RATE_LIMITED',
      'retryable',
      429,
      2000,
    ]);
  });

  it('a 5xx without a body is HTTP_5XX: unknown for execute', async () => {
    server.handle((_request, response) => {
      response.writeHead(503);
      response.end('<html>gateway</html>');
    });
    const error = await failure(makeClient().executeTransfer(transferId));
    expect([error.code, error.outcome, error.httpStatus]).toEqual(['HTTP_5XX', 'unknown', 503]);
  });

  it('7011 on create is retryable, on execute unknown', async () => {
    server.handle((_request, response) => sendJson(response, 400, { code: '7011', message: 'temporary failure' }));
    const wallet = makeClient();
    const create = await failure(
      wallet.createTransfer({ recipient: { type: 'TOKEN', value: 't' }, amount: { currency: 'PHP', value: '1.00' } }),
    );
    expect([create.code, create.outcome]).toEqual(['7011', 'retryable']);
    expect((await failure(wallet.executeTransfer(transferId))).outcome).toBe('unknown');
  });

  it('409 TRANSFER_ALREADY_EXECUTED is unknown: the caller reconciles', async () => {
    server.handle((_request, response) =>
      sendJson(response, 409, { code: 'TRANSFER_ALREADY_EXECUTED', message: 'once' }),
    );
    const error = await failure(makeClient().executeTransfer(transferId));
    expect([error.code, error.outcome, error.httpStatus]).toEqual(['TRANSFER_ALREADY_EXECUTED', 'unknown', 409]);
  });

  it('keeps secrets out of messages, even when the service echoes them', async () => {
    server.handle((_request, response) =>
      sendJson(response, 400, {
        code: 'CODE_INVALID',
        message: 'code 7654321 for user-access-token-SECRET is not valid',
      }),
    );
    const error = await failure(
      makeClient().createTransfer({
        recipient: { type: 'CODE', value: '7654321' },
        amount: { currency: 'PHP', value: '1.00' },
      }),
    );
    expect([error.code, error.outcome]).toEqual(['CODE_INVALID', 'rejected']);
    expectNoSecrets(`${error.message} ${error.serviceMessage ?? ''} ${error.stack ?? ''}`);
    expect(error.serviceMessage).toBe('code [redacted] for [redacted] is not valid');
  });
});

describe('audit hook', () => {
  it('records every call without secrets', async () => {
    server.handle((request, response) => {
      if (request.path === '/connect/token') return sendJson(response, 200, { access_token: 'client-token-SECRET' });
      if (request.path.startsWith('/op/'))
        return sendJson(response, 401, { code: 'USER_TOKEN_INVALID', message: 'expired' });
      return sendJson(response, 201, transferRecord(request));
    });
    const now = Date.UTC(2030, 0, 1);
    const wallet = makeClient({ now: () => now });
    await wallet.createTransfer({
      recipient: { type: 'CODE', value: '7654321' },
      amount: { currency: 'PHP', value: '1.00' },
    });
    await failure(wallet.executePayment({ userAccessToken: 'user-access-token-SECRET', walletPaymentId: 'pay-1' }));
    expect(records).toHaveLength(3);
    expect(records[0]).toEqual({
      requestReferenceNo: expect.stringMatching(uuidV4),
      service: 'transfers',
      operation: 'transfers.create',
      method: 'POST',
      path: '/v1/transfers',
      httpStatus: 201,
      outcome: 'ok',
      errorCode: null,
      durationMs: expect.any(Number),
      startedAt: new Date(now),
    });
    expect(records[1]).toMatchObject({
      service: 'connect',
      operation: 'connect.token.client_credentials',
      path: '/connect/token',
      outcome: 'ok',
    });
    expect(records[2]).toMatchObject({
      service: 'op',
      operation: 'op.payments.execute',
      method: 'POST',
      path: '/op/merchant/payments/pay-1/execute',
      httpStatus: 401,
      outcome: 'rejected',
      errorCode: 'USER_TOKEN_INVALID',
    });
    const text = JSON.stringify(records);
    expectNoSecrets(text);
    expect(text).not.toContain('client-token-SECRET');
  });

  it('an audit hook that throws changes nothing and is reported to onAuditError', async () => {
    server.handle((request, response) => sendJson(response, 200, transferRecord(request)));
    const auditErrors: unknown[] = [];
    const wallet = makeClient({
      onCall: () => Promise.reject(new Error('database down')),
      onAuditError: (error) => void auditErrors.push(error),
    });
    const result = await wallet.retrieveTransfer(transferId);
    expect(result.data.transferId).toBe(transferId);
    expect(auditErrors).toHaveLength(1);
    server.handle((_request, response) => sendJson(response, 404, { code: 'TRANSFER_NOT_FOUND', message: 'no' }));
    expect((await failure(wallet.retrieveTransfer(transferId))).code).toBe('TRANSFER_NOT_FOUND');
  });
});
