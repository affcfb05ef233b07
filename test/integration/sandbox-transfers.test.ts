// The sandbox's transfer service over HTTP: CODE and TOKEN recipients, M133, 1096, CODE_INVALID,
// one execution, PROCESSING with a delay, 60xx declines, optional expiry, auth and validation.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startSandbox, type RunningSandbox } from '../../sandbox/server.ts';
import {
  adminOf,
  basicAuth,
  callJson,
  createTransferCall,
  executeTransferCall,
  retrieveTransferCall,
  transferHeaders,
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

async function kyc1User(mobile = '09171234567', extra: Record<string, unknown> = {}) {
  return admin.createUser({ mobile, kycLevel: 'KYC1', balance: '10.00', ...extra });
}

describe('sandbox transfers', () => {
  it('creates a CODE transfer (201, CREATED, masked code), executes it to APPROVED and credits the recipient', async () => {
    const user = await kyc1User();
    const { code } = await admin.cashInCode(user.userId);
    const created = await createTransferCall(sandbox, { type: 'CODE', value: code }, 100.5, 'ref-0001');
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      transferId: expect.any(String),
      status: 'CREATED',
      recipient: { type: 'CODE', value: `***${code.slice(-4)}` },
      amount: { currency: 'PHP', value: 100.5 },
      requestReferenceNumber: 'ref-0001',
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
      decline: null,
    });
    expect((await admin.user(user.userId)).balance).toBe('10.00');

    const executed = await executeTransferCall(sandbox, created.body.transferId);
    expect(executed.status).toBe(200);
    expect(executed.body).toMatchObject({ transferId: created.body.transferId, status: 'APPROVED', decline: null });
    expect((await admin.user(user.userId)).balance).toBe('110.50');
    expect((await retrieveTransferCall(sandbox, created.body.transferId)).body.status).toBe('APPROVED');

    // The code is used up: a new transfer with it is refused.
    const reused = await createTransferCall(sandbox, { type: 'CODE', value: code }, 1);
    expect([reused.status, reused.body.code]).toEqual([400, 'CODE_INVALID']);
    const ledger = await admin.ledger();
    expect(ledger.transfers).toEqual([
      expect.objectContaining({
        transferId: created.body.transferId,
        status: 'APPROVED',
        recipientUserId: user.userId,
        amount: { currency: 'PHP', value: '100.50' },
        executions: 1,
      }),
    ]);
  });

  it('refuses a second execute with 409 TRANSFER_ALREADY_EXECUTED and moves no more money', async () => {
    const user = await kyc1User();
    const { access_token } = await admin.standaloneTokens(user.userId);
    const created = await createTransferCall(sandbox, { type: 'TOKEN', value: access_token }, 5);
    expect(created.body.recipient).toEqual({ type: 'TOKEN', value: `********${access_token.slice(-4)}` });
    await executeTransferCall(sandbox, created.body.transferId);
    const again = await executeTransferCall(sandbox, created.body.transferId);
    expect(again.status).toBe(409);
    expect(again.body).toMatchObject({ code: 'TRANSFER_ALREADY_EXECUTED', message: expect.any(String) });
    expect((await admin.user(user.userId)).balance).toBe('15.00');
    expect((await admin.ledger()).transfers[0]?.executions).toBe(1);
  });

  it('makes a new intent for every create, even with the same Request-Reference-No', async () => {
    const user = await kyc1User();
    const { accessToken } = await admin.embeddedTokens(user.userId);
    const a = await createTransferCall(sandbox, { type: 'TOKEN', value: accessToken }, 1, 'same-ref');
    const b = await createTransferCall(sandbox, { type: 'TOKEN', value: accessToken }, 1, 'same-ref');
    expect(a.body.transferId).not.toBe(b.body.transferId);
    expect((await admin.ledger()).transfers).toHaveLength(2);
  });

  it('rejects a KYC0 recipient with M133 and the partner account with 1096', async () => {
    const basic = await admin.createUser({ mobile: '09170000001', kycLevel: 'KYC0', balance: '0' });
    const { code } = await admin.cashInCode(basic.userId);
    const m133 = await createTransferCall(sandbox, { type: 'CODE', value: code }, 1);
    expect([m133.status, m133.body.code]).toEqual([400, 'M133']);

    const partnerAccount = await kyc1User('09170000002', { isPartnerAccount: true });
    const { access_token } = await admin.standaloneTokens(partnerAccount.userId);
    const same = await createTransferCall(sandbox, { type: 'TOKEN', value: access_token }, 1);
    expect([same.status, same.body.code]).toEqual([400, '1096']);
    expect((await admin.ledger()).transfers).toEqual([]);
  });

  it('answers CODE_INVALID for unknown and expired codes and 401 UNAUTHORIZED for bad recipient tokens', async () => {
    const user = await kyc1User();
    const unknown = await createTransferCall(sandbox, { type: 'CODE', value: '0000000' }, 1);
    expect([unknown.status, unknown.body.code]).toEqual([400, 'CODE_INVALID']);
    const { code } = await admin.cashInCode(user.userId);
    await admin.advanceClock(30 * 60 + 1);
    const expired = await createTransferCall(sandbox, { type: 'CODE', value: code }, 1);
    expect([expired.status, expired.body.code]).toEqual([400, 'CODE_INVALID']);

    const garbage = await createTransferCall(sandbox, { type: 'TOKEN', value: 'not-a-token' }, 1);
    expect([garbage.status, garbage.body.code]).toEqual([401, 'UNAUTHORIZED']);
    const { accessToken } = await admin.embeddedTokens(user.userId);
    await admin.advanceClock(601);
    const stale = await createTransferCall(sandbox, { type: 'TOKEN', value: accessToken }, 1);
    expect([stale.status, stale.body.code]).toEqual([401, 'UNAUTHORIZED']);
  });

  it('keeps a CODE transfer to one execution per code: a second intent on the same code is declined at its execute (200, DECLINED 6003), not refused', async () => {
    // Contract section 2: CODE_INVALID is a create's refusal, and a declined execution is not an HTTP error. Before,
    // the second execute answered 400 CODE_INVALID and its intent stayed CREATED: the partner, reading an execute's
    // 4xx it cannot place as unknown, asked again until it gave up into review.
    const user = await kyc1User();
    const { code } = await admin.cashInCode(user.userId);
    const first = await createTransferCall(sandbox, { type: 'CODE', value: code }, 1);
    const second = await createTransferCall(sandbox, { type: 'CODE', value: code }, 1);
    expect((await executeTransferCall(sandbox, first.body.transferId)).body.status).toBe('APPROVED');
    const declined = await executeTransferCall(sandbox, second.body.transferId);
    expect([declined.status, declined.body.status, declined.body.decline?.code]).toEqual([200, 'DECLINED', '6003']);
    expect((await retrieveTransferCall(sandbox, second.body.transferId)).body).toMatchObject({
      status: 'DECLINED',
      decline: { code: '6003' },
    });
    // Executed once: a second execute is 409, as for any transfer.
    expect((await executeTransferCall(sandbox, second.body.transferId)).status).toBe(409);
    expect((await admin.user(user.userId)).balance).toBe('11.00');
  });

  it('declines the execute of a second intent while the first holds the code (PROCESSING): the code stays the first’s', async () => {
    await admin.settings({ processingDelayMs: 60_000 });
    try {
      const user = await kyc1User();
      const { code } = await admin.cashInCode(user.userId);
      const first = await createTransferCall(sandbox, { type: 'CODE', value: code }, 1);
      const second = await createTransferCall(sandbox, { type: 'CODE', value: code }, 1);
      expect((await executeTransferCall(sandbox, first.body.transferId)).body.status).toBe('PROCESSING');
      const declined = await executeTransferCall(sandbox, second.body.transferId);
      expect([declined.status, declined.body.status, declined.body.decline?.code]).toEqual([200, 'DECLINED', '6003']);
      await admin.advanceClock(61);
      expect((await retrieveTransferCall(sandbox, first.body.transferId)).body.status).toBe('APPROVED');
      expect((await admin.user(user.userId)).balance).toBe('11.00');
    } finally {
      await admin.settings({ processingDelayMs: 0 });
    }
  });

  it('executes an intent created with a valid code after the code would have expired: no time limit between create and execute', async () => {
    const user = await kyc1User();
    const { code } = await admin.cashInCode(user.userId);
    const created = await createTransferCall(sandbox, { type: 'CODE', value: code }, 1);
    expect(created.status).toBe(201);
    await admin.advanceClock(2 * 3600);
    const executed = await executeTransferCall(sandbox, created.body.transferId);
    expect([executed.status, executed.body.status]).toEqual([200, 'APPROVED']);
    expect((await admin.user(user.userId)).balance).toBe('11.00');
    // The code is used up now.
    const again = await createTransferCall(sandbox, { type: 'CODE', value: code }, 1);
    expect([again.status, again.body.code]).toEqual([400, 'CODE_INVALID']);
  });

  it('answers PROCESSING with a processing delay and settles on the sandbox clock', async () => {
    await admin.settings({ processingDelayMs: 60_000 });
    const user = await kyc1User();
    const { code } = await admin.cashInCode(user.userId);
    const created = await createTransferCall(sandbox, { type: 'CODE', value: code }, 20);
    const executed = await executeTransferCall(sandbox, created.body.transferId);
    expect([executed.status, executed.body.status]).toEqual([200, 'PROCESSING']);
    expect((await retrieveTransferCall(sandbox, created.body.transferId)).body.status).toBe('PROCESSING');
    expect((await admin.user(user.userId)).balance).toBe('10.00');
    const again = await executeTransferCall(sandbox, created.body.transferId);
    expect(again.body.code).toBe('TRANSFER_ALREADY_EXECUTED');

    await admin.advanceClock(61);
    const settled = await retrieveTransferCall(sandbox, created.body.transferId);
    expect(settled.body.status).toBe('APPROVED');
    expect((await admin.user(user.userId)).balance).toBe('30.00');
    expect((await admin.ledger()).transfers[0]?.executions).toBe(1);
  });

  it('settles a short real-time delay without touching the clock', async () => {
    await admin.settings({ processingDelayMs: 150 });
    const user = await kyc1User();
    const { accessToken } = await admin.embeddedTokens(user.userId);
    const created = await createTransferCall(sandbox, { type: 'TOKEN', value: accessToken }, 1);
    expect((await executeTransferCall(sandbox, created.body.transferId)).body.status).toBe('PROCESSING');
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect((await retrieveTransferCall(sandbox, created.body.transferId)).body.status).toBe('APPROVED');
  });

  it('declines 6001 over the wallet limit, 6002 for a blocked account, 6051 when partner funding is short', async () => {
    const limited = await kyc1User('09170000011', { walletLimit: '50.00' });
    const blocked = await kyc1User('09170000012', { blocked: true });
    const rich = await kyc1User('09170000013');

    const transferTo = async (userId: string, value: number) => {
      const { access_token } = await admin.standaloneTokens(userId);
      const created = await createTransferCall(sandbox, { type: 'TOKEN', value: access_token }, value);
      return executeTransferCall(sandbox, created.body.transferId);
    };

    const overLimit = await transferTo(limited.userId, 40.01);
    expect(overLimit.status).toBe(200);
    expect(overLimit.body).toMatchObject({
      status: 'DECLINED',
      decline: { code: '6001', message: expect.any(String) },
    });
    expect((await transferTo(limited.userId, 40)).body.status).toBe('APPROVED');

    expect((await transferTo(blocked.userId, 1)).body).toMatchObject({ status: 'DECLINED', decline: { code: '6002' } });

    await admin.settings({ partnerFundingBalance: '5.00' });
    expect((await transferTo(rich.userId, 5.01)).body).toMatchObject({ status: 'DECLINED', decline: { code: '6051' } });
    expect((await transferTo(rich.userId, 5)).body.status).toBe('APPROVED');
    expect((await admin.call('GET', '/settings')).body.partnerFundingBalance).toBe('0.00');
    expect((await admin.user(blocked.userId)).balance).toBe('10.00');
    expect((await admin.user(limited.userId)).balance).toBe('50.00');
  });

  it('releases the code of a declined CODE transfer so a new transfer can use it', async () => {
    const user = await kyc1User('09170000021', { blocked: true });
    const { code } = await admin.cashInCode(user.userId);
    const declined = await createTransferCall(sandbox, { type: 'CODE', value: code }, 1);
    expect((await executeTransferCall(sandbox, declined.body.transferId)).body.status).toBe('DECLINED');
    await admin.call('PATCH', `/users/${user.userId}`, { blocked: false });
    const retry = await createTransferCall(sandbox, { type: 'CODE', value: code }, 1);
    expect((await executeTransferCall(sandbox, retry.body.transferId)).body.status).toBe('APPROVED');
  });

  it('refuses execute of an expired intent with 409 TRANSFER_EXPIRED when an expiry is configured', async () => {
    await admin.settings({ transferExpirySeconds: 120 });
    const user = await kyc1User();
    const { accessToken } = await admin.embeddedTokens(user.userId);
    const created = await createTransferCall(sandbox, { type: 'TOKEN', value: accessToken }, 1);
    await admin.advanceClock(121);
    const expired = await executeTransferCall(sandbox, created.body.transferId);
    expect([expired.status, expired.body.code]).toEqual([409, 'TRANSFER_EXPIRED']);
    expect((await retrieveTransferCall(sandbox, created.body.transferId)).body.status).toBe('EXPIRED');
    expect((await admin.user(user.userId)).balance).toBe('10.00');
  });

  it('answers 404, 401 and 400 VALIDATION_ERROR per the contract', async () => {
    expect((await executeTransferCall(sandbox, 'no-such-id')).body).toMatchObject({ code: 'TRANSFER_NOT_FOUND' });
    expect((await retrieveTransferCall(sandbox, 'no-such-id')).status).toBe(404);

    const user = await kyc1User();
    const { code } = await admin.cashInCode(user.userId);
    const body = { recipient: { type: 'CODE', value: code }, amount: { currency: 'PHP', value: 1 } };
    const post = (headers: Record<string, string>, payload: unknown = body) =>
      callJson(`${sandbox.url}/v1/transfers`, { method: 'POST', headers, body: payload });
    const reference = { 'request-reference-no': 'abc-123' };
    expect((await post(reference)).body).toMatchObject({ code: 'UNAUTHORIZED' });
    expect((await post({ ...reference, authorization: basicAuth('wrong-key', '') })).status).toBe(401);
    expect((await post({ ...reference, authorization: basicAuth(sandbox.partner.transferApiKey, 'x') })).status).toBe(
      401,
    );

    const auth = { authorization: basicAuth(sandbox.partner.transferApiKey, '') };
    expect((await post(auth)).body).toMatchObject({ code: 'VALIDATION_ERROR' });
    expect((await post({ ...auth, 'request-reference-no': 'x'.repeat(51) })).body).toMatchObject({
      code: 'VALIDATION_ERROR',
    });
    expect((await post({ ...auth, 'request-reference-no': 'has space' })).status).toBe(400);
    expect(
      (await post(transferHeaders(sandbox), { ...body, amount: { currency: 'PHP', value: '1.00' } })).body,
    ).toMatchObject({
      code: 'VALIDATION_ERROR',
    });
    expect((await post(transferHeaders(sandbox), { ...body, amount: { currency: 'PHP', value: 0 } })).status).toBe(400);
    expect(
      (await post(transferHeaders(sandbox), { recipient: { type: 'EMAIL', value: 'x' }, amount: body.amount })).status,
    ).toBe(400);
    expect((await post(transferHeaders(sandbox), '{"broken"')).body).toMatchObject({ code: 'VALIDATION_ERROR' });
    expect((await post(transferHeaders(sandbox))).status).toBe(201);
  });
});
