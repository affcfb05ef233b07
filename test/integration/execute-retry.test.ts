// A retried execute activity (the worker died, the attempt timed out) may follow an execute that
// reached the wallet: it retrieves first and sends execute again only when the transfer still
// shows CREATED. The activity runs for real against the sandbox and PostgreSQL, in
// Temporal's own activity test environment, which sets the attempt number.
import { MockActivityEnvironment } from '@temporalio/testing';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { createActivities } from '../../activities/index.ts';
import { fundWalletActivityTimeouts } from '../../workflows/fund-wallet.contract.ts';
import { startPartnerStack, type PartnerStack } from '../support/partner-stack.ts';
import { stackActivities } from '../support/stack-activities.ts';

let stack: PartnerStack;
let activities: ReturnType<typeof createActivities>;

beforeAll(async () => {
  stack = await startPartnerStack();
  activities = stackActivities(stack);
});
afterAll(async () => {
  await stack.close();
});

async function createdTransfer() {
  const user = await stack.admin.createUser({ kycLevel: 'KYC1', balance: '0.00' });
  const { code } = await stack.admin.cashInCode(user.userId);
  const created = await stack.wallet.createTransfer({
    recipient: { type: 'CODE', value: code },
    amount: { currency: 'PHP', value: '3.00' },
  });
  return { user, transferId: created.data.transferId };
}

/** The wallet calls made for this transfer since `since` (other test files share the database). */
const callsFor = async (transferId: string, since: Date) =>
  (
    await stack.database.walletCall.findMany({
      where: { startedAt: { gte: since }, path: { contains: transferId } },
      orderBy: { id: 'asc' },
      select: { operation: true },
    })
  ).map((call) => call.operation);

const executionsOf = async (transferId: string) =>
  (await stack.admin.ledger()).transfers.find((transfer) => transfer.transferId === transferId)?.executions;

describe('a retried execute activity', () => {
  it('does not send execute again when the first one reached the wallet: retrieve tells the outcome', async () => {
    const { transferId } = await createdTransfer();
    await stack.wallet.executeTransfer(transferId);
    const since = new Date();
    const progress = await new MockActivityEnvironment({
      attempt: 2,
      startToCloseTimeoutMs: fundWalletActivityTimeouts.executeMs,
    }).run(activities.executeTransfer, randomUUID(), transferId);
    expect(progress).toMatchObject({ kind: 'final', status: 'APPROVED' });
    expect(await callsFor(transferId, since)).toEqual(['transfers.retrieve']);
    expect(await executionsOf(transferId)).toBe(1);
  });

  it('sends it when the transfer still shows CREATED, and the first attempt sends it at once', async () => {
    const retried = await createdTransfer();
    expect(
      await new MockActivityEnvironment({
        attempt: 3,
        startToCloseTimeoutMs: fundWalletActivityTimeouts.executeMs,
      }).run(activities.executeTransfer, randomUUID(), retried.transferId),
    ).toMatchObject({ kind: 'final', status: 'APPROVED' });
    expect(await executionsOf(retried.transferId)).toBe(1);

    const first = await createdTransfer();
    const since = new Date();
    expect(
      await new MockActivityEnvironment({
        attempt: 1,
        startToCloseTimeoutMs: fundWalletActivityTimeouts.executeMs,
      }).run(activities.executeTransfer, randomUUID(), first.transferId),
    ).toMatchObject({ kind: 'final', status: 'APPROVED' });
    expect(await callsFor(first.transferId, since)).toEqual(['transfers.execute']);
  });
});

describe('a retrieve the wallet answers 2xx off the contract', () => {
  it('counts as its refusal to show the transfer (toward review), not as the wallet unable to answer now, asked for ever; a page that is not JSON (a proxy’s) and a 5xx still are', async () => {
    const { transferId } = await createdTransfer();
    const retrieve = () =>
      new MockActivityEnvironment({ startToCloseTimeoutMs: fundWalletActivityTimeouts.retrieveMs }).run(
        activities.retrieveTransfer,
        randomUUID(),
        transferId,
      );
    try {
      // Another transfer's record: JSON the service sent, off the contract.
      await stack.admin.setFaults([{ endpoint: 'transfers.retrieve', mode: 'altered-answer', rate: 1 }]);
      // Before: a retryable failure, so a funding whose execute's outcome was unknown stayed RECONCILING for good
      // while the wallet answered so, never in review (MAX_REFUSED_RETRIEVES counts refusals).
      expect(await retrieve()).toMatchObject({ kind: 'refused', code: 'TRANSFER_MISMATCH', httpStatus: 200 });
      // A retried execute's read first, answered so: the execute's outcome is unknown (reconciled, its evidence kept),
      // and no execute is sent.
      const since = new Date();
      expect(
        await new MockActivityEnvironment({
          attempt: 2,
          startToCloseTimeoutMs: fundWalletActivityTimeouts.executeMs,
        }).run(activities.executeTransfer, randomUUID(), transferId),
      ).toMatchObject({ kind: 'unknown', code: 'RETRIEVE_BEFORE_EXECUTE_TRANSFER_MISMATCH' });
      expect(await callsFor(transferId, since)).toEqual(['transfers.retrieve']);
      for (const mode of ['garbage-body', 'error-before-effect'] as const) {
        await stack.admin.setFaults([{ endpoint: 'transfers.retrieve', mode, rate: 1 }]);
        await expect(retrieve(), mode).rejects.toMatchObject({ type: 'WalletTransient' });
      }
    } finally {
      await stack.admin.setFaults([]);
    }
  });
});
