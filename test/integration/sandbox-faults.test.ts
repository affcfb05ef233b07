// The sandbox's fault injection over HTTP: what each mode makes the caller see and whether the
// state changed behind it, rules scoped to their endpoint, and reproducibility under a seed.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startSandbox, type RunningSandbox } from '../../sandbox/server.ts';
import {
  adminOf,
  callJson,
  clientToken,
  createTransferCall,
  executeTransferCall,
  loginThroughPages,
  opHeaders,
  retrieveTransferCall,
  tokenRequest,
  transferHeaders,
  type Admin,
} from '../support/sandbox-harness.ts';

let sandbox: RunningSandbox;
let admin: Admin;

beforeAll(async () => {
  sandbox = await startSandbox({ port: 0, seed: 1234 });
  admin = adminOf(sandbox);
});
afterAll(async () => {
  await sandbox.close();
});
beforeEach(async () => {
  await admin.reset();
});

function always(endpoint: string, mode: string, extra: Record<string, unknown> = {}) {
  return admin.faults({ rules: [{ endpoint, mode, rate: 1, ...extra }] });
}

async function recipientCode(balance = '0.00') {
  const user = await admin.createUser({ mobile: '09171234567', kycLevel: 'KYC1', balance });
  return { user, code: (await admin.cashInCode(user.userId)).code };
}

describe('sandbox faults', () => {
  it('latency delays the answer, then answers normally', async () => {
    const { code } = await recipientCode();
    const created = await createTransferCall(sandbox, { type: 'CODE', value: code }, 1);
    await always('transfers.retrieve', 'latency', { delayMs: 300 });
    const started = Date.now();
    const answer = await retrieveTransferCall(sandbox, created.body.transferId);
    expect(Date.now() - started).toBeGreaterThanOrEqual(290);
    expect([answer.status, answer.body.status]).toEqual([200, 'CREATED']);
  });

  it('error-before-effect answers 503 and changes nothing', async () => {
    const { code } = await recipientCode();
    await always('transfers.create', 'error-before-effect');
    const answer = await createTransferCall(sandbox, { type: 'CODE', value: code }, 1);
    expect(answer.status).toBe(503);
    expect(answer.headers.get('content-type')).toContain('text/html');
    expect((await admin.ledger()).transfers).toEqual([]);
  });

  it('error-after-effect answers 502 (or the given status) after the transfer executed', async () => {
    const { user, code } = await recipientCode();
    const created = await createTransferCall(sandbox, { type: 'CODE', value: code }, 7);
    await always('transfers.execute', 'error-after-effect');
    const answer = await executeTransferCall(sandbox, created.body.transferId);
    expect(answer.status).toBe(502);
    expect((await admin.ledger()).transfers[0]).toMatchObject({ status: 'APPROVED', executions: 1 });
    expect((await admin.user(user.userId)).balance).toBe('7.00');
    // The caller's recovery: retrieve tells the outcome.
    expect((await retrieveTransferCall(sandbox, created.body.transferId)).body.status).toBe('APPROVED');

    await always('transfers.retrieve', 'error-after-effect', { status: 504 });
    expect((await retrieveTransferCall(sandbox, created.body.transferId)).status).toBe(504);
  });

  it('a gateway error with a code answers the service’s body carrying it (a relayed or templated error); only for the two error modes', async () => {
    const { user, code } = await recipientCode();
    const created = await createTransferCall(sandbox, { type: 'CODE', value: code }, 3);
    await always('transfers.execute', 'error-after-effect', { status: 503, code: 'TRANSFER_EXPIRED' });
    const answer = await executeTransferCall(sandbox, created.body.transferId);
    expect([answer.status, answer.body.code]).toEqual([503, 'TRANSFER_EXPIRED']);
    expect(answer.headers.get('content-type')).toContain('application/json');
    // The effect took place behind it.
    expect((await admin.ledger()).transfers[0]).toMatchObject({ status: 'APPROVED', executions: 1 });
    expect((await admin.user(user.userId)).balance).toBe('3.00');
    const refused = await callJson(`${sandbox.url}/_sandbox/faults`, {
      method: 'PUT',
      body: { rules: [{ endpoint: 'transfers.execute', mode: 'latency', rate: 1, code: 'TRANSFER_EXPIRED' }] },
    });
    expect(refused.status).toBe(400);
  });

  it('reset-after-effect drops the connection after the payment executed', async () => {
    const user = await admin.createUser({ mobile: '09171234567', kycLevel: 'KYC1', balance: '50.00' });
    const client = await clientToken(sandbox);
    const { accessToken } = await admin.embeddedTokens(user.userId);
    const created = await callJson<{ id: string }>(`${sandbox.url}/op/merchant/payments`, {
      method: 'POST',
      headers: opHeaders(client, accessToken),
      body: { p2mId: sandbox.partner.p2mId, amount: { currency: 'PHP', value: 20 } },
    });
    await always('op.payments.execute', 'reset-after-effect');
    const execute = fetch(`${sandbox.url}/op/merchant/payments/${created.body.id}/execute`, {
      method: 'POST',
      headers: opHeaders(client, accessToken),
    });
    await expect(execute).rejects.toThrow();
    expect((await admin.user(user.userId)).balance).toBe('30.00');
    expect((await admin.ledger()).payments[0]).toMatchObject({ status: 'EXECUTED', executions: 1 });
  });

  it('hang-after-effect never answers, the rotation still happened, and the caller can give up', async () => {
    const user = await admin.createUser({ mobile: '09171234567', kycLevel: 'KYC1', balance: '0' });
    const client = await clientToken(sandbox);
    const pair = await admin.embeddedTokens(user.userId);
    await always('op.tokens', 'hang-after-effect');
    const started = Date.now();
    const hung = fetch(`${sandbox.url}/op/tokens`, {
      method: 'POST',
      headers: opHeaders(client),
      body: JSON.stringify({ refreshToken: pair.refreshToken }),
      signal: AbortSignal.timeout(300),
    });
    await expect(hung).rejects.toThrow();
    expect(Date.now() - started).toBeLessThan(2000);
    expect((await admin.ledger()).refreshes).toHaveLength(1);
    await admin.faults({ rules: [] });
    const reused = await callJson(`${sandbox.url}/op/tokens`, {
      method: 'POST',
      headers: opHeaders(client),
      body: { refreshToken: pair.refreshToken },
    });
    expect(reused.body).toMatchObject({ code: 'REFRESH_TOKEN_INVALID' });
  });

  it('temporary-failure answers 400 7011 and changes nothing', async () => {
    const { code } = await recipientCode();
    await always('transfers.create', 'temporary-failure');
    const answer = await createTransferCall(sandbox, { type: 'CODE', value: code }, 1);
    expect(answer.status).toBe(400);
    expect(answer.body).toMatchObject({ code: '7011' });
    expect((await admin.ledger()).transfers).toEqual([]);
  });

  it('rate-limited answers 429 RATE_LIMITED with Retry-After and changes nothing', async () => {
    const user = await admin.createUser({ mobile: '09171234567', kycLevel: 'KYC1', balance: '0' });
    const client = await clientToken(sandbox);
    const pair = await admin.embeddedTokens(user.userId);
    await always('op.tokens', 'rate-limited');
    const answer = await callJson(`${sandbox.url}/op/tokens`, {
      method: 'POST',
      headers: opHeaders(client),
      body: { refreshToken: pair.refreshToken },
    });
    expect(answer.status).toBe(429);
    expect(answer.headers.get('retry-after')).toBe('1');
    expect(answer.body).toMatchObject({ code: 'RATE_LIMITED' });
    expect((await admin.ledger()).refreshes).toEqual([]);
    // A rule may name its own Retry-After.
    await admin.faults({ rules: [{ endpoint: 'op.tokens', mode: 'rate-limited', rate: 1, retryAfterSeconds: 7 }] });
    const later = await callJson(`${sandbox.url}/op/tokens`, {
      method: 'POST',
      headers: opHeaders(client),
      body: { refreshToken: pair.refreshToken },
    });
    expect([later.status, later.headers.get('retry-after')]).toEqual([429, '7']);
  });

  it('garbage-body answers 200 with an unparsable body after the transfer was created', async () => {
    const { code } = await recipientCode();
    await always('transfers.create', 'garbage-body');
    const response = await fetch(`${sandbox.url}/v1/transfers`, {
      method: 'POST',
      headers: { ...transferHeaders(sandbox), 'content-type': 'application/json' },
      body: JSON.stringify({ recipient: { type: 'CODE', value: code }, amount: { currency: 'PHP', value: 3 } }),
    });
    expect(response.status).toBe(200);
    const text = await response.text();
    expect(() => JSON.parse(text) as unknown).toThrow();
    expect((await admin.ledger()).transfers).toEqual([expect.objectContaining({ status: 'CREATED', executions: 0 })]);
  });

  it('faults connect.token in OAuth style: error-after-effect uses the code up', async () => {
    await admin.createUser({ mobile: '09171234567', kycLevel: 'KYC1', balance: '0' });
    const code = (await loginThroughPages(sandbox, '09171234567', 'sandbox123')).get('code') ?? '';
    await always('connect.token', 'error-after-effect');
    const exchange = () =>
      tokenRequest(sandbox, { grant_type: 'authorization_code', code, redirect_uri: sandbox.partner.redirectUri });
    expect((await exchange()).status).toBe(502);
    await always('connect.token', 'temporary-failure');
    const temporary = await exchange();
    expect([temporary.status, temporary.body.error]).toEqual([400, 'temporarily_unavailable']);
    await admin.faults({ rules: [] });
    expect((await exchange()).body.error).toBe('invalid_grant');
  });

  it('applies a rule to its endpoint only', async () => {
    const { code } = await recipientCode();
    await always('transfers.execute', 'error-before-effect');
    const created = await createTransferCall(sandbox, { type: 'CODE', value: code }, 1);
    expect(created.status).toBe(201);
    expect((await retrieveTransferCall(sandbox, created.body.transferId)).status).toBe(200);
    expect((await executeTransferCall(sandbox, created.body.transferId)).status).toBe(503);
    expect((await retrieveTransferCall(sandbox, created.body.transferId)).body.status).toBe('CREATED');
  });

  it('repeats the same fault sequence under the same seed', async () => {
    const { code } = await recipientCode();
    const created = await createTransferCall(sandbox, { type: 'CODE', value: code }, 1);
    const sequence = async (seed: number) => {
      await admin.faults({ seed, rules: [{ endpoint: 'transfers.retrieve', mode: 'error-before-effect', rate: 0.5 }] });
      const statuses: number[] = [];
      for (let i = 0; i < 24; i += 1)
        statuses.push((await retrieveTransferCall(sandbox, created.body.transferId)).status);
      return statuses;
    };
    const first = await sequence(99);
    expect(new Set(first)).toEqual(new Set([200, 503]));
    expect(await sequence(99)).toEqual(first);
    expect(await sequence(100)).not.toEqual(first);
    // Without a seed, the sandbox's own seed (1234 here) is used.
    const configured = await admin.faults({ rules: [] });
    expect(configured).toMatchObject({ seed: 1234 });
  });

  it('late-effect answers 504 at once and executes the transfer delayMs later (contract section 9)', async () => {
    const { user, code } = await recipientCode();
    const created = await createTransferCall(sandbox, { type: 'CODE', value: code }, 9);
    // Long enough that the retrieve below comes first on a busy machine (the sandbox's timer runs in this process).
    await always('transfers.execute', 'late-effect', { delayMs: 1500 });
    const answer = await executeTransferCall(sandbox, created.body.transferId);
    expect(answer.status).toBe(504);
    // The caller gave up; a retrieve now still shows the intent unexecuted…
    expect((await retrieveTransferCall(sandbox, created.body.transferId)).body.status).toBe('CREATED');
    // …and then the queued execute is processed.
    await expect
      .poll(async () => (await admin.ledger()).transfers[0], { timeout: 15_000 })
      .toMatchObject({ status: 'APPROVED', executions: 1 });
    expect((await admin.user(user.userId)).balance).toBe('9.00');
  });

  it('late-effect: a queued execute takes effect at once when released, and only once', async () => {
    const { user, code } = await recipientCode();
    const created = await createTransferCall(sandbox, { type: 'CODE', value: code }, 7);
    await always('transfers.execute', 'late-effect', { delayMs: 120_000 });
    expect((await executeTransferCall(sandbox, created.body.transferId)).status).toBe(504);
    expect((await admin.ledger()).transfers[0]).toMatchObject({ status: 'CREATED', executions: 0 });
    const release = await callJson<{ released: number }>(`${sandbox.url}/_sandbox/faults/late-effects/release`, {
      method: 'POST',
      body: {},
    });
    // Answered once the effect has taken place: the ledger shows it at once.
    expect([release.status, release.body.released]).toEqual([200, 1]);
    expect((await admin.ledger()).transfers[0]).toMatchObject({ status: 'APPROVED', executions: 1 });
    expect((await admin.user(user.userId)).balance).toBe('7.00');
    // Nothing is left queued: a second release applies none, and the timer of the first never fires.
    const again = await callJson<{ released: number }>(`${sandbox.url}/_sandbox/faults/late-effects/release`, {
      method: 'POST',
      body: {},
    });
    expect(again.body.released).toBe(0);
  });

  it('late-effect behind a second execute: the transfer still executes once', async () => {
    const { user, code } = await recipientCode();
    const created = await createTransferCall(sandbox, { type: 'CODE', value: code }, 4);
    await always('transfers.execute', 'late-effect', { delayMs: 400 });
    expect((await executeTransferCall(sandbox, created.body.transferId)).status).toBe(504);
    await admin.faults({ rules: [] });
    const second = await executeTransferCall(sandbox, created.body.transferId);
    expect([second.status, second.body.status]).toEqual([200, 'APPROVED']);
    await new Promise((resolve) => setTimeout(resolve, 600));
    expect((await admin.ledger()).transfers[0]).toMatchObject({ status: 'APPROVED', executions: 1 });
    expect((await admin.user(user.userId)).balance).toBe('4.00');
  });

  it('late-effect on a payment execute debits after the 504', async () => {
    const user = await admin.createUser({ mobile: '09171234567', kycLevel: 'KYC1', balance: '50.00' });
    const client = await clientToken(sandbox);
    const { accessToken } = await admin.embeddedTokens(user.userId);
    const created = await callJson<{ id: string }>(`${sandbox.url}/op/merchant/payments`, {
      method: 'POST',
      headers: opHeaders(client, accessToken),
      body: { p2mId: sandbox.partner.p2mId, amount: { currency: 'PHP', value: 20 } },
    });
    await always('op.payments.execute', 'late-effect', { delayMs: 1500 });
    const execute = await fetch(`${sandbox.url}/op/merchant/payments/${created.body.id}/execute`, {
      method: 'POST',
      headers: opHeaders(client, accessToken),
    });
    expect(execute.status).toBe(504);
    expect((await admin.user(user.userId)).balance).toBe('50.00');
    await expect.poll(async () => (await admin.user(user.userId)).balance, { timeout: 15_000 }).toBe('30.00');
    expect((await admin.ledger()).payments[0]).toMatchObject({ status: 'EXECUTED', executions: 1 });
  });

  it('late-effect is refused on endpoints other than the two executes', async () => {
    const refused = await callJson(`${sandbox.url}/_sandbox/faults`, {
      method: 'PUT',
      body: { rules: [{ endpoint: 'transfers.create', mode: 'late-effect', rate: 1 }] },
    });
    expect(refused.status).toBe(400);
  });

  it('close() ends hanging and delayed requests promptly', async () => {
    const other = await startSandbox({ port: 0 });
    const otherAdmin = adminOf(other);
    const user = await otherAdmin.createUser({ mobile: '09171234567', kycLevel: 'KYC1', balance: '0' });
    const pair = await otherAdmin.embeddedTokens(user.userId);
    const client = await clientToken(other);
    await otherAdmin.faults({
      rules: [
        { endpoint: 'op.tokens', mode: 'hang-after-effect', rate: 1 },
        { endpoint: 'op.profile', mode: 'latency', rate: 1, delayMs: 60_000 },
      ],
    });
    const hung = fetch(`${other.url}/op/tokens`, {
      method: 'POST',
      headers: opHeaders(client),
      body: JSON.stringify({ refreshToken: pair.refreshToken }),
    }).catch((error: unknown) => error);
    const slow = fetch(`${other.url}/op/profile`, { headers: opHeaders(client, pair.accessToken, randomUUID()) }).catch(
      (error: unknown) => error,
    );
    await new Promise((resolve) => setTimeout(resolve, 100));
    const started = Date.now();
    await other.close();
    expect(Date.now() - started).toBeLessThan(2000);
    expect(await hung).toBeInstanceOf(Error);
    expect(await slow).toBeInstanceOf(Error);
  });
});
