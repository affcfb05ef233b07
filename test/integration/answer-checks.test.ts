// The wallet's answers are checked against what was asked: a create answer with
// another amount, currency, recipient type or merchant stops the item for review and executes
// nothing; an execute or retrieve answer about another transfer is refused. The sandbox's
// `altered-answer` fault is the faulty gateway: the call takes effect, its answer is altered.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { FundingView } from '../../domain/funding.ts';
import type { PaymentView } from '../../domain/payment.ts';
import { isWalletError } from '../../wallet/index.ts';
import { createEmbeddedLink } from '../support/embedded-link.ts';
import { startPartnerStack, type PartnerStack } from '../support/partner-stack.ts';

let stack: PartnerStack;

beforeAll(async () => {
  stack = await startPartnerStack();
  await stack.startWorker();
});
afterAll(async () => {
  await stack.close();
});
beforeEach(async () => {
  await stack.admin.clearFaults();
});

async function post<T>(path: string, body: unknown): Promise<T> {
  const response = await stack.opsFetch(path, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'idempotency-key': randomUUID() },
    body: JSON.stringify(body),
  });
  expect(response.status).toBe(202);
  return (await response.json()) as T;
}

/**
 * A review walletflow knows was never executed is resolved FAILED only: the other outcome is refused, nothing changed.
 */
async function resolvedFailedOnly(path: string, notExecuted: 'APPROVED' | 'SUCCEEDED'): Promise<void> {
  const resolve = (outcome: string) =>
    stack.opsFetch(`${path}/resolve`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ outcome, note: 'the wallet shows the intent' }),
    });
  // Before: 200, its hold posted (or a deposit credited) for money that never moved.
  const refused = await resolve(notExecuted);
  expect(refused.status).toBe(409);
  expect(((await refused.json()) as { code: string }).code).toBe('NEVER_EXECUTED');
  expect(((await (await stack.opsFetch(path)).json()) as { status: string }).status).toBe('NEEDS_REVIEW');
  const failed = await resolve('FAILED');
  expect(failed.status).toBe(200);
  expect(((await failed.json()) as { status: string }).status).toBe('FAILED');
}

async function waitUntil<T extends { status: string }>(path: string, statuses: string[]): Promise<T> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const item = (await (await stack.opsFetch(path)).json()) as T;
    if (statuses.includes(item.status)) return item;
    if (Date.now() > deadline) throw new Error(`${path} still ${item.status}`);
    await new Promise((resolve) => setTimeout(resolve, 150));
  }
}

describe('answers checked against the request', () => {
  it('a transfer created for another amount is never executed: the funding goes to review, which only FAILED resolves', async () => {
    const user = await stack.admin.createUser({ kycLevel: 'KYC1', balance: '0.00' });
    const { code } = await stack.admin.cashInCode(user.userId);
    await stack.admin.setFaults([{ endpoint: 'transfers.create', mode: 'altered-answer', rate: 1 }]);
    const started = await post<FundingView>('/ops/fundings', {
      recipient: { type: 'CODE', code },
      amount: { currency: 'PHP', value: '5.00' },
    });
    const funding = await waitUntil<FundingView>(`/ops/fundings/${started.fundingId}`, [
      'NEEDS_REVIEW',
      'APPROVED',
      'DECLINED',
      'REJECTED',
      'FAILED',
    ]);
    expect(funding.status).toBe('NEEDS_REVIEW');
    expect(funding.transferId).toBeNull();
    expect(funding.review?.reason).toMatch(/amount 50\.00, asked 5\.00/);
    expect(funding.review?.attempts[0]).toMatchObject({ operation: 'transfers.create', code: 'ANSWER_MISMATCH' });
    const ledger = await stack.admin.ledger();
    const created = ledger.transfers.filter((transfer) => transfer.amount.value === '5.00' && transfer.executions > 0);
    expect(created.filter((transfer) => transfer.recipientUserId === user.userId)).toEqual([]);
    expect((await stack.admin.user(user.userId)).balance).toBe('0.00');
    await resolvedFailedOnly(`/ops/fundings/${funding.fundingId}`, 'APPROVED');
  });

  it('a payment created for another amount is never executed: the payment goes to review, which only FAILED resolves', async () => {
    const { user, linkId } = await createEmbeddedLink(stack, { kycLevel: 'KYC1', balance: '100.00' });
    await stack.admin.setFaults([{ endpoint: 'op.payments.create', mode: 'altered-answer', rate: 1 }]);
    const started = await post<PaymentView>('/ops/payments', { linkId, amount: { currency: 'PHP', value: '7.00' } });
    const payment = await waitUntil<PaymentView>(`/ops/payments/${started.id}`, [
      'NEEDS_REVIEW',
      'SUCCEEDED',
      'FAILED',
    ]);
    expect(payment.status).toBe('NEEDS_REVIEW');
    expect(payment.review?.reason).toMatch(/amount 70\.00, asked 7\.00/);
    expect(
      (await stack.admin.ledger()).payments.filter((entry) => entry.userId === user.userId && entry.executions > 0),
    ).toEqual([]);
    expect((await stack.admin.user(user.userId)).balance).toBe('100.00');
    await resolvedFailedOnly(`/ops/payments/${payment.id}`, 'SUCCEEDED');
  });

  it('a retrieve answer about another transfer is refused (outcome unknown: asked again)', async () => {
    const user = await stack.admin.createUser({ kycLevel: 'KYC1', balance: '0.00' });
    const { code } = await stack.admin.cashInCode(user.userId);
    const created = await stack.wallet.createTransfer({
      recipient: { type: 'CODE', value: code },
      amount: { currency: 'PHP', value: '1.00' },
    });
    await stack.admin.setFaults([{ endpoint: 'transfers.retrieve', mode: 'altered-answer', rate: 1 }]);
    const failure = await stack.wallet.retrieveTransfer(created.data.transferId).catch((error: unknown) => error);
    expect(isWalletError(failure) && { code: failure.code, outcome: failure.outcome }).toEqual({
      code: 'TRANSFER_MISMATCH',
      outcome: 'unknown',
    });
  });
});
