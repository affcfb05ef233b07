// A fresh funding's one pass (activities/funding.ts fundInOnePass): the whole happy path
// in one local activity, which Temporal may run again when its workflow task fails after it (the
// result of a local activity is kept only with the task's completion). Run again, it must find the
// funding past PENDING and hand over to the step-by-step path, never create or execute twice; and
// wherever the steps would wait or retry, it stops. Real sandbox and PostgreSQL; Temporal's
// activity test environment runs it.
import { MockActivityEnvironment } from '@temporalio/testing';
import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { createActivities } from '../../activities/index.ts';
import { createFundingRecord } from '../../fundings/funding-record.ts';
import { createTokenCipher } from '../../lib/token-cipher.ts';
import { startPartnerStack, type PartnerStack } from '../support/partner-stack.ts';
import { stackActivities } from '../support/stack-activities.ts';
import { fundWalletActivityTimeouts, type OnePassOutcome } from '../../workflows/fund-wallet.contract.ts';
import { moneyOf } from '../../domain/money.ts';

let stack: PartnerStack;
let activities: ReturnType<typeof createActivities>;
let fundings: ReturnType<typeof createFundingRecord>;

beforeAll(async () => {
  stack = await startPartnerStack();
  const cipher = createTokenCipher(stack.encryptionKey);
  activities = stackActivities(stack, { cipher });
  fundings = createFundingRecord({ database: stack.database, cipher });
});
afterEach(async () => {
  await stack.admin.clearFaults();
});
afterAll(async () => {
  await stack.close();
});

/** A PENDING funding of a fresh cash-in code, as the API stores it (no workflow runs it here). */
async function pendingFunding(): Promise<string> {
  const user = await stack.admin.createUser({ kycLevel: 'KYC1', balance: '0.00' });
  const { code } = await stack.admin.cashInCode(user.userId);
  const id = randomUUID();
  const key = `one-pass-${id}`;
  await fundings.insert({
    id,
    idempotencyKey: key,
    requestFingerprint: key,
    workflowId: key,
    recipient: { type: 'CODE', code },
    amount: moneyOf({ currency: 'PHP', value: '2.00' }),
  });
  return id;
}

/** As the workflow runs it: a local activity with the one pass's start-to-close. */
const pass = (fundingId: string): Promise<OnePassOutcome> =>
  new MockActivityEnvironment({ startToCloseTimeoutMs: fundWalletActivityTimeouts.onePassMs }).run(
    activities.fundInOnePass,
    fundingId,
  );
const walletCallsSince = (since: Date) =>
  stack.database.walletCall.count({
    where: { startedAt: { gte: since }, operation: { in: ['transfers.create', 'transfers.execute'] } },
  });
const executionsOf = async (transferId: string | null) =>
  (await stack.admin.ledger()).transfers.find((transfer) => transfer.transferId === transferId)?.executions;
const timeline = async (fundingId: string) =>
  (await fundings.findWithEvents(fundingId))!.events.map((event) => event.status);

describe('a fresh funding in one pass', () => {
  it('runs create and execute and writes the same timeline as the steps; run again, it hands over and calls nothing', async () => {
    const fundingId = await pendingFunding();
    const first = await pass(fundingId);
    expect(first).toMatchObject({
      kind: 'finished',
      status: 'APPROVED',
      errorCode: null,
      transferId: expect.any(String),
    });
    expect(await timeline(fundingId)).toEqual(['PENDING', 'CREATING', 'EXECUTING', 'APPROVED']);
    const since = new Date();
    expect(await pass(fundingId)).toEqual({ kind: 'steps' });
    expect(await walletCallsSince(since)).toBe(0);
    expect(await executionsOf(first.kind === 'finished' ? first.transferId : null)).toBe(1);
  });

  it('an execute whose outcome is unknown is reported, and a second run of the pass never executes again', async () => {
    const fundingId = await pendingFunding();
    await stack.admin.setFaults([{ endpoint: 'transfers.execute', mode: 'error-after-effect', rate: 1 }]);
    const first = await pass(fundingId);
    expect(first).toMatchObject({ kind: 'executed', progress: { kind: 'unknown' } });
    await stack.admin.clearFaults();
    const since = new Date();
    expect(await pass(fundingId)).toEqual({ kind: 'steps' });
    expect(await walletCallsSince(since)).toBe(0);
    expect(await executionsOf(first.kind === 'executed' ? first.transferId : null)).toBe(1);
    expect((await fundings.get(fundingId)).status).toBe('RECONCILING');
  });

  it('an execute refused with 429 (nothing sent) leaves the funding EXECUTING for the execute activity', async () => {
    const fundingId = await pendingFunding();
    await stack.admin.setFaults([{ endpoint: 'transfers.execute', mode: 'rate-limited', rate: 1 }]);
    const outcome = await pass(fundingId);
    expect(outcome).toMatchObject({ kind: 'execute', transferId: expect.any(String) });
    expect(await executionsOf(outcome.kind === 'execute' ? outcome.transferId : null)).toBe(0);
    expect((await fundings.get(fundingId)).status).toBe('EXECUTING');
  });

  it('a create refused with 429 stops before anything exists, with the wallet’s Retry-After', async () => {
    const fundingId = await pendingFunding();
    await stack.admin.setFaults([
      { endpoint: 'transfers.create', mode: 'rate-limited', rate: 1, retryAfterSeconds: 3 },
    ]);
    expect(await pass(fundingId)).toEqual({ kind: 'create-later', retryAfterMs: 3000, rateLimited: true });
    const funding = await fundings.get(fundingId);
    expect(funding).toMatchObject({ status: 'CREATING', transferId: null });
  });

  it('a refused create (M133) ends the funding REJECTED in the pass, nothing executed', async () => {
    const user = await stack.admin.createUser({ kycLevel: 'KYC0', balance: '0.00' });
    const { code } = await stack.admin.cashInCode(user.userId);
    const id = randomUUID();
    await fundings.insert({
      id,
      idempotencyKey: `one-pass-${id}`,
      requestFingerprint: id,
      workflowId: `one-pass-${id}`,
      recipient: { type: 'CODE', code },
      amount: moneyOf({ currency: 'PHP', value: '2.00' }),
    });
    expect(await pass(id)).toMatchObject({ kind: 'finished', status: 'REJECTED', errorCode: 'M133', transferId: null });
    expect(await timeline(id)).toEqual(['PENDING', 'CREATING', 'REJECTED']);
  });

  it('two runs of the pass at once (a duplicated workflow task): only the one that moved the funding sends an execute', async () => {
    const fundingId = await pendingFunding();
    const since = new Date();
    const outcomes = await Promise.all([pass(fundingId), pass(fundingId)]);
    const finished = outcomes.filter((outcome) => outcome.kind === 'finished');
    expect(finished).toHaveLength(1);
    expect(outcomes.filter((outcome) => outcome.kind === 'steps')).toHaveLength(1);
    const executes = await stack.database.walletCall.count({
      where: { startedAt: { gte: since }, operation: 'transfers.execute' },
    });
    expect(executes).toBe(1);
    expect((await fundings.get(fundingId)).status).toBe('APPROVED');
  });

  it('a create answer that does not match the request parks the funding for review in the pass itself', async () => {
    const fundingId = await pendingFunding();
    await stack.admin.setFaults([{ endpoint: 'transfers.create', mode: 'altered-answer', rate: 1 }]);
    expect(await pass(fundingId)).toMatchObject({ kind: 'mismatch' });
    const funding = await fundings.get(fundingId);
    expect(funding).toMatchObject({ status: 'NEEDS_REVIEW', transferId: null });
    expect(funding.reviewEvidence).toEqual([
      expect.objectContaining({ operation: 'transfers.create', code: 'ANSWER_MISMATCH' }),
    ]);
    // Run again, the pass does not create (or execute) another intent.
    await stack.admin.clearFaults();
    const since = new Date();
    expect(await pass(fundingId)).toEqual({ kind: 'steps' });
    expect(await walletCallsSince(since)).toBe(0);
  });

  it('an execute whose outcome is unknown is on record at once: RECONCILING, with its Request-Reference-No', async () => {
    const fundingId = await pendingFunding();
    await stack.admin.setFaults([{ endpoint: 'transfers.execute', mode: 'error-after-effect', rate: 1 }]);
    const outcome = await pass(fundingId);
    expect(outcome).toMatchObject({
      kind: 'executed',
      progress: { kind: 'unknown', requestReferenceNo: expect.any(String) },
    });
    const events = (await fundings.findWithEvents(fundingId))!.events;
    expect(events.at(-1)).toMatchObject({
      status: 'RECONCILING',
      requestReferenceNo:
        outcome.kind === 'executed' && outcome.progress.kind === 'unknown'
          ? outcome.progress.requestReferenceNo
          : 'none',
    });
  });
});

describe('a final state that says nothing was sent', () => {
  it('is not written over a funding another run moved to EXECUTING (that would be FAILED after money may have moved)', async () => {
    const fundingId = await pendingFunding();
    // Another run got as far as EXECUTING (its transfer stored, its execute possibly sent).
    expect(await fundings.move(fundingId, 'CREATING', {})).toBe(true);
    expect((await fundings.storeTransferId(fundingId, `transfer-${fundingId}`)).stored).toBe(true);
    expect(await fundings.beginExecute(fundingId, null)).toBe(true);
    const refused = await fundings.finish(fundingId, { status: 'FAILED', code: 'CANCELLED', beforeExecute: true });
    expect(refused).toMatchObject({ moved: false, status: 'EXECUTING' });
    expect(await timeline(fundingId)).toEqual(['PENDING', 'CREATING', 'EXECUTING']);
  });
});
