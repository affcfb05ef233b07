// Honest final states for fundings (contract section 11): once an execute's outcome is
// unknown, a funding ends only from a final wallet state or through review, never in a guessed
// FAILED. The sandbox's late-effect fault is the slow gateway: every execute is answered 504 and
// processed later, after the caller gave up.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { FundingView } from '../../domain/funding.ts';
import { startPartnerStack, type PartnerStack } from '../support/partner-stack.ts';
import { waitFor } from '../support/wait-for.ts';

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

type FundingAnswer = FundingView & { code?: string; detail?: string };

async function postFunding(body: unknown): Promise<{ status: number; body: FundingAnswer }> {
  const response = await stack.opsFetch('/ops/fundings', {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'idempotency-key': randomUUID() },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as FundingAnswer };
}

async function getFunding(fundingId: string): Promise<FundingView> {
  return (await (await stack.opsFetch(`/ops/fundings/${fundingId}`)).json()) as FundingView;
}

/** Waits until the funding leaves the statuses in which its workflow is still working. */
async function waitSettled(fundingId: string, timeoutMs = 80_000): Promise<FundingView> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const funding = await getFunding(fundingId);
    if (!['PENDING', 'CREATING', 'EXECUTING', 'RECONCILING'].includes(funding.status)) return funding;
    if (Date.now() > deadline) throw new Error(`funding ${fundingId} still ${funding.status}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

async function resolveFunding(fundingId: string, body: unknown) {
  const response = await stack.opsFetch(`/ops/fundings/${fundingId}/resolve`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as FundingAnswer };
}

async function codeFunding(value: string) {
  const user = await stack.admin.createUser({ kycLevel: 'KYC1', balance: '0.00' });
  const { code } = await stack.admin.cashInCode(user.userId);
  const started = await postFunding({ recipient: { type: 'CODE', code }, amount: { currency: 'PHP', value } });
  expect(started.status).toBe(202);
  return { user, funding: started.body };
}

async function ledgerTransfer(transferId: string | null) {
  return (await stack.admin.ledger()).transfers.find((transfer) => transfer.transferId === transferId);
}

describe('a funding whose executes stay unknown', () => {
  it('goes to NEEDS_REVIEW with the evidence, not FAILED, while a queued execute can still land', async () => {
    // Every execute times out at the gateway and stays queued there (two minutes, unless released):
    // the workflow uses up its executes, each retrieve showing the intent still CREATED.
    await stack.admin.setFaults([{ endpoint: 'transfers.execute', mode: 'late-effect', rate: 1, delayMs: 120_000 }]);
    const { user, funding } = await codeFunding('12.00');
    const settled = await waitSettled(funding.fundingId);
    expect(settled.status).toBe('NEEDS_REVIEW');
    expect(settled.error).toBeNull();
    expect(settled.review?.reason).toMatch(/unknown/);
    expect(settled.review?.attempts.length).toBeGreaterThanOrEqual(4);
    expect(
      settled.review?.attempts.every(
        (attempt) => attempt.requestReferenceNo !== null || attempt.code === 'EXECUTE_ACTIVITY_FAILED',
      ),
    ).toBe(true);
    expect(settled.review?.resolution).toBeNull();
    // The queued executes land once the review is open (released now rather than in two minutes): the money
    // moved, exactly once.
    expect((await stack.admin.releaseLateEffects()).released).toBeGreaterThanOrEqual(1);
    expect((await ledgerTransfer(settled.transferId))?.status).toBe('APPROVED');
    expect((await ledgerTransfer(settled.transferId))?.executions).toBe(1);
    expect((await stack.admin.user(user.userId)).balance).toBe('12.00');

    // Ops resolve it from the wallet's record, with why; the funding ends APPROVED, never FAILED.
    const resolved = await resolveFunding(funding.fundingId, {
      outcome: 'APPROVED',
      note: 'the operator shows the transfer APPROVED',
    });
    expect(resolved.status).toBe(200);
    expect(resolved.body.status).toBe('APPROVED');
    expect(resolved.body.review?.resolution).toMatchObject({
      outcome: 'APPROVED',
      note: 'the operator shows the transfer APPROVED',
    });
    expect(resolved.body.events.map((event) => event.status)).toEqual(
      expect.arrayContaining(['RECONCILING', 'NEEDS_REVIEW', 'APPROVED']),
    );
    expect(resolved.body.events.map((event) => event.status)).not.toContain('FAILED');
  }, 120_000);

  it('a batch item’s review shows every execute sent for it, the chunk’s own among them', async () => {
    // Every execute fails before it takes effect: the chunk's is unknown, the item goes to its own
    // workflow, whose executes stay unknown too, and it ends in review with nothing executed.
    await stack.admin.setFaults([{ endpoint: 'transfers.execute', mode: 'error-before-effect', rate: 1 }]);
    const user = await stack.admin.createUser({ kycLevel: 'KYC1', balance: '0.00' });
    const { code } = await stack.admin.cashInCode(user.userId);
    const response = await stack.opsFetch('/ops/funding-batches', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': randomUUID() },
      body: JSON.stringify({
        name: 'review evidence',
        items: [{ reference: 'only', recipient: { type: 'CODE', code }, amount: { currency: 'PHP', value: '3.00' } }],
      }),
    });
    expect(response.status).toBe(202);
    const { batchId } = (await response.json()) as { batchId: string };
    const item = await waitFor(
      'the batch’s item',
      async () => (await stack.database.funding.findFirst({ where: { batchId }, select: { id: true } }))?.id,
      30_000,
    );
    const settled = await waitSettled(item, 120_000);
    expect(settled.status).toBe('NEEDS_REVIEW');
    const sent = await stack.database.walletCall.findMany({
      where: { operation: 'transfers.execute', path: { endsWith: `/transfers/${settled.transferId}/execute` } },
      orderBy: { startedAt: 'asc' },
    });
    // The chunk's execute, then its workflow's: every one in the evidence a person reviews.
    expect(sent.length).toBeGreaterThanOrEqual(2);
    const executes = settled
      .review!.attempts.filter((attempt) => attempt.operation === 'transfers.execute')
      .map((attempt) => attempt.requestReferenceNo);
    expect(executes).toEqual(expect.arrayContaining(sent.map((call) => call.requestReferenceNo)));
    expect(executes[0]).toBe(sent[0]!.requestReferenceNo);
    expect((await ledgerTransfer(settled.transferId))?.executions ?? 0).toBe(0);
    // Nothing was executed: ops resolve it FAILED.
    expect(
      (await resolveFunding(item, { outcome: 'FAILED', note: 'the wallet shows the transfer never executed' })).status,
    ).toBe(200);
  }, 180_000);

  it('is resolved only in NEEDS_REVIEW: 409 otherwise, 404 for an unknown funding, 400 for a bad body', async () => {
    const { funding } = await codeFunding('1.00');
    const final = await waitSettled(funding.fundingId);
    expect(final.status).toBe('APPROVED');
    const conflict = await resolveFunding(funding.fundingId, { outcome: 'FAILED', note: 'too late' });
    expect(conflict.status).toBe(409);
    expect(conflict.body.code).toBe('FUNDING_NOT_IN_REVIEW');
    expect((await resolveFunding(randomUUID(), { outcome: 'FAILED', note: 'x' })).status).toBe(404);
    const bad = await resolveFunding(funding.fundingId, { outcome: 'DECLINED', note: '' });
    expect(bad.status).toBe(400);
    expect(bad.body.code).toBe('VALIDATION_ERROR');
  });
});
