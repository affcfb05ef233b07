// The funding and payment records on a real PostgreSQL: the idempotent insert, moves guarded by
// domain's transition tables (an illegal or repeated move changes nothing and writes no event),
// the cancel race decided by the database, abandoned transfer ids, a payment in review left to its
// resolution, metrics counted once by whoever moved, and the shared list page.
import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { createFundingRecord, type NewFunding } from '../../fundings/funding-record.ts';
import { createDatabase } from '../../lib/database.ts';
import { createTokenCipher } from '../../lib/token-cipher.ts';
import { createPaymentRecord, type NewPayment } from '../../payments/payment-record.ts';
import { moneyOf } from '../../domain/money.ts';
import { newFundingRow } from '../support/new-funding-row.ts';
import { testDatabaseUrl } from '../support/test-database.ts';

const database = createDatabase(testDatabaseUrl());
afterAll(() => database.$disconnect());

const fundingFinished = vi.fn();
const paymentFinished = vi.fn();
const fundings = createFundingRecord({
  database,
  cipher: createTokenCipher(randomBytes(32)),
  metrics: { fundingFinished },
});
const payments = createPaymentRecord({ database, metrics: { paymentFinished } });

function newFunding(code = '1234567'): NewFunding {
  return newFundingRow('records', { recipient: { type: 'CODE', code } });
}

function newPayment(): NewPayment {
  const id = randomUUID();
  return {
    id,
    idempotencyKey: `records-${id}`,
    requestFingerprint: '0'.repeat(64),
    workflowId: `payment-records-${id}`,
    linkId: randomUUID(),
    amount: moneyOf({ currency: 'PHP', value: '5.00' }),
  };
}

const timeline = async (fundingId: string) =>
  (await fundings.findWithEvents(fundingId))!.events.map((event) => event.status);

/** A funding stored and moved to CREATING with a transfer id: where beginExecute and cancel meet. */
async function creatingWithTransfer() {
  const funding = newFunding();
  await fundings.insert(funding);
  await fundings.move(funding.id, 'CREATING', { detail: 'creating' });
  await fundings.storeTransferId(funding.id, `t-${funding.id}`);
  return funding;
}

/**
 * An execute call sent and cut off, as the wallet client writes it to the audit (wallet/call-record.ts: the base
 * prefix in its path), a moment ago.
 */
async function executeCall(operation: string, path: string, reference = `x-${randomUUID().slice(0, 20)}`) {
  await database.walletCall.create({
    data: {
      requestReferenceNo: reference,
      service: operation.split('.')[0]!,
      operation,
      method: 'PUT',
      path,
      httpStatus: null,
      outcome: 'timeout',
      durationMs: 20_000,
      startedAt: new Date(Date.now() - 1000),
    },
  });
  return reference;
}

describe('the funding record', () => {
  it('inserts once per key, with its first event and the code sealed to the funding', async () => {
    const funding = newFunding('7654321');
    expect(await fundings.insert(funding)).toBe(true);
    expect(await fundings.insert({ ...funding, id: randomUUID() })).toBe(false);
    const row = await fundings.getByIdempotencyKey(funding.idempotencyKey);
    expect(row).toMatchObject({
      id: funding.id,
      status: 'PENDING',
      cashInCodeMasked: '*****21',
      abandonedTransferIds: [],
    });
    expect(row.events.map((event) => [event.status, event.detail])).toEqual([['PENDING', 'funding requested']]);
    expect(fundings.cashInCodeOf(row)).toBe('7654321');
    // Sealed to its own funding: the same bytes under another funding's id do not decrypt.
    expect(() => fundings.cashInCodeOf({ ...row, id: randomUUID() })).toThrow();
  });

  it('moves only as the table allows, once, with one event per move', async () => {
    const funding = newFunding();
    await fundings.insert(funding);
    expect(await fundings.move(funding.id, 'RECONCILING', { detail: 'not from PENDING' })).toBe(false);
    expect(await fundings.move(funding.id, 'CREATING', { detail: 'creating' })).toBe(true);
    expect(await fundings.move(funding.id, 'CREATING', { detail: 'a retried step' })).toBe(false);
    expect(await timeline(funding.id)).toEqual(['PENDING', 'CREATING']);
  });

  it('keeps the first transfer id and records a later one as abandoned', async () => {
    const funding = await creatingWithTransfer();
    expect(await fundings.storeTransferId(funding.id, 'a-second-intent')).toEqual({
      stored: false,
      transferId: `t-${funding.id}`,
    });
    expect(await fundings.get(funding.id)).toMatchObject({
      transferId: `t-${funding.id}`,
      abandonedTransferIds: ['a-second-intent'],
    });
  });

  it('lets the database decide between cancel and beginExecute', async () => {
    const cancelledFirst = await creatingWithTransfer();
    expect(await fundings.cancel(await fundings.get(cancelledFirst.id))).toBe(true);
    expect(await fundings.beginExecute(cancelledFirst.id, null)).toBe(false);
    expect(await fundings.get(cancelledFirst.id)).toMatchObject({
      status: 'FAILED',
      errorCode: 'CANCELLED',
      cancelRequested: true,
    });
    expect(await timeline(cancelledFirst.id)).toEqual(['PENDING', 'CREATING', 'FAILED']);

    const executedFirst = await creatingWithTransfer();
    expect(await fundings.beginExecute(executedFirst.id, 'ref-create')).toBe(true);
    expect(await fundings.cancel(await fundings.get(executedFirst.id))).toBe(false);
    const row = (await fundings.findWithEvents(executedFirst.id))!;
    expect(row.status).toBe('EXECUTING');
    expect(row.events.at(-1)).toMatchObject({
      status: 'EXECUTING',
      requestReferenceNo: 'ref-create',
      detail: `transfer t-${executedFirst.id} created; executing`,
    });
  });

  it('shows a review every execute sent for its transfer, one its timeline never recorded too (a retried activity’s first, a chunk that lost its lease), and no other transfer’s', async () => {
    const funding = await creatingWithTransfer();
    expect(await fundings.beginExecute(funding.id, 'ref-create')).toBe(true);
    // The first execute: sent, its attempt cut off before the funding's timeline heard of it.
    const unrecorded = `x-${randomUUID().slice(0, 20)}`;
    await executeCall('transfers.execute', `/partners/v1/transfers/t-${funding.id}/execute`, unrecorded);
    // Another funding's transfer, whose id ends as this one's does: not this funding's.
    await executeCall('transfers.execute', `/partners/v1/transfers/other-t-${funding.id}/execute`);
    expect(await fundings.parkForReview(funding.id, 'the execute outcome stayed unknown', [])).toBe(true);
    const { reviewEvidence } = await fundings.get(funding.id);
    // Before: only the executes whose Request-Reference-No a timeline event carried, so none here; a person resolving
    // FAILED on the operator's word about the calls shown could release a hold whose first execute landed later.
    expect((reviewEvidence as Array<{ requestReferenceNo: string }>).map((entry) => entry.requestReferenceNo)).toEqual([
      unrecorded,
    ]);
  });

  it('stores no transfer id once cancelled: the intent is kept as abandoned, never executed', async () => {
    const funding = newFunding();
    await fundings.insert(funding);
    await fundings.move(funding.id, 'CREATING', { detail: 'creating' });
    await fundings.cancel(await fundings.get(funding.id));
    expect(await fundings.storeTransferId(funding.id, 'late-intent')).toEqual({ stored: false, transferId: null });
    expect(await fundings.get(funding.id)).toMatchObject({ transferId: null, abandonedTransferIds: ['late-intent'] });
  });

  it('finishes once, counted once by whoever moved it, and never leaves a final state', async () => {
    const funding = await creatingWithTransfer();
    await fundings.beginExecute(funding.id, null);
    fundingFinished.mockClear();
    const first = await fundings.finish(funding.id, {
      status: 'DECLINED',
      code: '6001',
      requestReferenceNo: 'ref-execute',
      detail: '6001',
    });
    expect(first).toEqual({
      moved: true,
      status: 'DECLINED',
      errorCode: '6001',
      transferId: `t-${funding.id}`,
      ownerFence: 0,
    });
    const retried = await fundings.finish(funding.id, {
      status: 'FAILED',
      code: 'EXECUTE_FAILED',
      requestReferenceNo: null,
      detail: null,
    });
    expect(retried).toEqual({
      moved: false,
      status: 'DECLINED',
      errorCode: '6001',
      transferId: `t-${funding.id}`,
      ownerFence: 0,
    });
    expect(fundingFinished).toHaveBeenCalledTimes(1);
    expect(fundingFinished).toHaveBeenCalledWith('DECLINED', expect.any(Date));
    expect(await timeline(funding.id)).toEqual(['PENDING', 'CREATING', 'EXECUTING', 'DECLINED']);
  });

  it('refuses a final state the table does not reach from where the funding stands', async () => {
    const funding = newFunding();
    await fundings.insert(funding);
    await fundings.move(funding.id, 'CREATING', { detail: 'creating' });
    const approved = await fundings.finish(funding.id, {
      status: 'APPROVED',
      code: null,
      requestReferenceNo: null,
      detail: null,
    });
    expect(approved).toMatchObject({ moved: false, status: 'CREATING' });
    const rejected = await fundings.finish(funding.id, {
      status: 'REJECTED',
      code: 'M133',
      requestReferenceNo: 'ref-create',
      detail: 'M133',
    });
    expect(rejected).toMatchObject({ moved: true, status: 'REJECTED', errorCode: 'M133' });
  });

  it('lists newest first, page by page, each funding once; a forged cursor is refused', async () => {
    const from = new Date(Date.now() - 1000).toISOString();
    const ours = [];
    for (let i = 0; i < 3; i += 1) {
      const funding = newFunding();
      await fundings.insert(funding);
      ours.push(funding.id);
    }
    const seen: Array<{ id: string; createdAt: Date }> = [];
    let cursor: string | undefined;
    do {
      const page = await fundings.listPage({ status: 'PENDING', from, limit: 2, ...(cursor ? { cursor } : {}) });
      if (page.kind !== 'page') throw new Error('refused its own cursor');
      expect(page.items.length).toBeLessThanOrEqual(2);
      seen.push(...page.items);
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
    const ids = seen.map((row) => row.id);
    expect(new Set(ids).size).toBe(ids.length);
    for (const id of ours) expect(ids).toContain(id);
    for (let i = 1; i < seen.length; i += 1)
      expect(seen[i - 1]!.createdAt.getTime()).toBeGreaterThanOrEqual(seen[i]!.createdAt.getTime());
    expect(await fundings.listPage({ limit: 2, cursor: 'forged' })).toEqual({ kind: 'invalid-cursor' });
  });
});

describe('the payment record', () => {
  async function executing() {
    const payment = newPayment();
    expect(await payments.insert(payment)).toBe(true);
    expect(await payments.insert({ ...payment, id: randomUUID() })).toBe(false);
    await payments.markCreating(payment.id);
    expect(
      await payments.storeCreated(payment.id, {
        walletPaymentId: `wp-${payment.id}`,
        fee: { currency: 'PHP', value: '0.50' },
      }),
    ).toEqual({ stored: true, walletPaymentId: `wp-${payment.id}`, status: 'CREATING' });
    expect(
      await payments.storeCreated(payment.id, {
        walletPaymentId: 'a-second-payment',
        fee: { currency: 'PHP', value: '0.50' },
      }),
    ).toEqual({ stored: false, walletPaymentId: `wp-${payment.id}`, status: 'CREATING' });
    await payments.beginExecute(payment.id, 'ref-create');
    return payment;
  }

  it('shows a review every execute sent for its wallet payment, one its timeline never recorded too, and no other payment’s', async () => {
    const payment = await executing();
    const unrecorded = await executeCall('op.payments.execute', `/op/v1/merchant/payments/wp-${payment.id}/execute`);
    await executeCall('op.payments.execute', `/op/v1/merchant/payments/other-wp-${payment.id}/execute`);
    const known = {
      at: new Date().toISOString(),
      requestReferenceNo: 'ref-known',
      httpStatus: 504,
      code: '504',
      outcome: 'error',
    };
    expect(await payments.parkForReview(payment.id, 'the execute outcome stayed unknown', [known])).toBe(true);
    const row = await database.payment.findUniqueOrThrow({ where: { id: payment.id } });
    // Before: the workflow's own attempts only.
    expect(
      (row.reviewEvidence as Array<{ requestReferenceNo: string }>).map((entry) => entry.requestReferenceNo),
    ).toEqual([unrecorded, 'ref-known']);
  });

  it('leaves a payment in review to its resolution, which ends it once', async () => {
    const payment = await executing();
    await payments.parkForReview(payment.id, 'the execute outcome stayed unknown', []);
    paymentFinished.mockClear();
    expect(
      await payments.finish(payment.id, { status: 'SUCCEEDED', code: null, requestReferenceNo: null }),
    ).toMatchObject({ moved: false, status: 'NEEDS_REVIEW' });
    const resolved = await payments.resolve(payment.id, {
      outcome: 'FAILED',
      note: 'not in the wallet ledger',
      resolvedBy: 'ops',
    });
    expect(resolved).toMatchObject({
      moved: true,
      status: 'FAILED',
      errorCode: 'RESOLVED_FAILED',
      walletPaymentId: `wp-${payment.id}`,
    });
    expect(
      await payments.resolve(payment.id, { outcome: 'SUCCEEDED', note: 'again', resolvedBy: 'ops' }),
    ).toMatchObject({ moved: false, status: 'FAILED' });
    expect(paymentFinished).toHaveBeenCalledTimes(1);
    const row = (await payments.findByEitherIdWithEvents(`wp-${payment.id}`))!;
    expect(row.events.map((event) => event.status)).toEqual([
      'PENDING',
      'CREATING',
      'EXECUTING',
      'NEEDS_REVIEW',
      'FAILED',
    ]);
    expect(row).toMatchObject({
      resolvedOutcome: 'FAILED',
      resolvedBy: 'ops',
      reviewReason: 'the execute outcome stayed unknown',
    });
  });

  it('resolves only a payment in review', async () => {
    const payment = await executing();
    expect(
      await payments.resolve(payment.id, { outcome: 'SUCCEEDED', note: 'too early', resolvedBy: 'ops' }),
    ).toMatchObject({ moved: false, status: 'EXECUTING' });
    expect(
      await payments.finish(payment.id, { status: 'SUCCEEDED', code: null, requestReferenceNo: 'ref-execute' }),
    ).toMatchObject({ moved: true, status: 'SUCCEEDED' });
  });
});
