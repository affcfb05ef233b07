// One writer at a time (docs/architecture.md, who owns a funding): a run that may have been
// overtaken (an orphaned one pass, a stale copy of a workflow on a paused worker, a timed-out
// activity attempt, an old sweep attempt) never writes, and a run that takes over trusts nothing it
// did not write. Each test orchestrates one overlap the way it happens in production,
// deterministically: two runs of one funding or payment on the real sandbox and PostgreSQL, with
// the wallet calls held and released by the test (test/support/wallet-gate.ts). The step path's
// calls are the ones the workflow makes for the state its claim saw
// (workflows/fund-wallet-takeover.ts decides them for both).
import { MockActivityEnvironment } from '@temporalio/testing';
import pg from 'pg';
import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { createActivities } from '../../activities/index.ts';
import { createFundingRecord } from '../../fundings/funding-record.ts';
import { createClaimedFundingsRecord } from '../../fundings/claimed-fundings-record.ts';
import { createFundingActivities } from '../../activities/funding.ts';
import { createBatchActivities } from '../../activities/batch.ts';
import { fundBatchActivityTimeouts } from '../../workflows/fund-batch.contract.ts';
import { createPaymentRecord } from '../../payments/payment-record.ts';
import { createLogger } from '../../lib/logger.ts';
import { createTokenCipher } from '../../lib/token-cipher.ts';
import { startPartnerStack, type PartnerStack } from '../support/partner-stack.ts';
import { stackActivities } from '../support/stack-activities.ts';
import { createEmbeddedLink } from '../support/embedded-link.ts';
import { walletGate, type WalletGate } from '../support/wallet-gate.ts';
import { batchRecordsOn } from '../support/batch-records.ts';
import { testDatabaseUrl } from '../support/test-database.ts';
import {
  fundWalletActivityTimeouts,
  type OnePassOutcome,
  type TransferProgress,
} from '../../workflows/fund-wallet.contract.ts';
import { firstCallAfterBeginExecute, stepPathStart } from '../../workflows/fund-wallet-takeover.ts';
import { moneyOf } from '../../domain/money.ts';
import { paymentResolutions } from '../../domain/payment.ts';
import { fundingResolutions } from '../../domain/funding.ts';
import { createWalletClient } from '../../wallet/index.ts';
import { waitFor } from '../support/wait-for.ts';

let stack: PartnerStack;
let fundings: ReturnType<typeof createFundingRecord>;
let payments: ReturnType<typeof createPaymentRecord>;
const logger = createLogger({ level: 'silent' });

beforeAll(async () => {
  stack = await startPartnerStack();
  fundings = createFundingRecord({ database: stack.database, cipher: createTokenCipher(stack.encryptionKey) });
  payments = createPaymentRecord({ database: stack.database });
});
afterEach(async () => {
  await stack.admin.clearFaults();
});
afterAll(async () => {
  await stack.close();
});

type Activities = ReturnType<typeof createActivities>;

/** One run's activities: its own wallet view through the gate, as a worker of its own would have. */
function runOf(gate: WalletGate, name: string, options: { walletTimeoutMs?: number } = {}): Activities {
  return stackActivities(stack, {
    wallet: gate.as(name),
    logger,
    ...(options.walletTimeoutMs === undefined ? {} : { walletTimeoutMs: options.walletTimeoutMs }),
  });
}

/** As the worker runs each: an activity with its start-to-close (and attempt). */
const inActivity = <A extends unknown[], R>(
  fn: (...args: A) => Promise<R>,
  args: A,
  info: { startToCloseTimeoutMs?: number; attempt?: number } = {},
): Promise<R> =>
  new MockActivityEnvironment({
    startToCloseTimeoutMs: info.startToCloseTimeoutMs ?? 15_000,
    ...(info.attempt ? { attempt: info.attempt } : {}),
  }).run(fn, ...args);
const onePass = (run: Activities, fundingId: string): Promise<OnePassOutcome> =>
  inActivity(run.fundInOnePass, [fundingId], { startToCloseTimeoutMs: fundWalletActivityTimeouts.onePassMs });

/** A funding as the API stores it (no workflow runs it here): to a linked wallet, or to a fresh cash-in code. */
async function tokenFunding(): Promise<{ fundingId: string; linkId: string; userId: string }> {
  const { user, linkId } = await createEmbeddedLink(stack, { kycLevel: 'KYC1', balance: '0.00' });
  const id = randomUUID();
  await fundings.insert({
    id,
    idempotencyKey: `fenced-${id}`,
    requestFingerprint: id,
    workflowId: `fenced-${id}`,
    recipient: { type: 'TOKEN', linkId },
    amount: moneyOf({ currency: 'PHP', value: '3.00' }),
  });
  return { fundingId: id, linkId, userId: user.userId };
}
async function codeFunding(): Promise<{ fundingId: string; userId: string }> {
  const user = await stack.admin.createUser({ kycLevel: 'KYC1', balance: '0.00' });
  const { code } = await stack.admin.cashInCode(user.userId);
  const id = randomUUID();
  await fundings.insert({
    id,
    idempotencyKey: `fenced-${id}`,
    requestFingerprint: id,
    workflowId: `fenced-${id}`,
    recipient: { type: 'CODE', code },
    amount: moneyOf({ currency: 'PHP', value: '2.00' }),
  });
  return { fundingId: id, userId: user.userId };
}

/** Executions the sandbox counted for each transfer named. */
async function executionsOf(transferIds: Array<string | null>): Promise<number> {
  const ledger = await stack.admin.ledger();
  return ledger.transfers
    .filter((transfer) => transferIds.includes(transfer.transferId))
    .reduce((sum, transfer) => sum + transfer.executions, 0);
}
/** Every transfer a funding ever had: the one it executes and the ones kept unexecuted. */
async function transfersOf(fundingId: string): Promise<string[]> {
  const funding = await fundings.get(fundingId);
  return [...(funding.transferId ? [funding.transferId] : []), ...funding.abandonedTransferIds];
}
/** Settles a promise, whatever it does: a run that lost its ownership may throw. */
const settle = <T>(promise: Promise<T>) =>
  promise.then(
    (value) => ({ value }),
    (error: unknown) => ({ error }),
  );
/** The record's word: a funding FAILED or REJECTED moved no money; APPROVED moved it once. */
async function expectMoneyMatchesRecord(fundingId: string, userId: string) {
  const funding = await fundings.get(fundingId);
  const executed = await executionsOf(await transfersOf(fundingId));
  const balance = (await stack.admin.user(userId)).balance;
  if (funding.status === 'APPROVED') {
    expect(executed).toBe(1);
  } else if (['FAILED', 'REJECTED', 'DECLINED'].includes(funding.status)) {
    expect({ status: funding.status, executed, balance }).toEqual({
      status: funding.status,
      executed: 0,
      balance: '0.00',
    });
  } else {
    // Not final: review or still reconciling; an execute may have happened, the record does not say otherwise.
    expect(['EXECUTING', 'RECONCILING', 'NEEDS_REVIEW']).toContain(funding.status);
  }
  return funding;
}

/** No event was written by a stale owner: the fences on a funding's timeline never go down. */
async function expectOneOwnerAtATime(fundingId: string) {
  const events = (await fundings.findWithEvents(fundingId))!.events;
  const fences = events.map((event) => event.fence).filter((fence): fence is number => fence !== null);
  expect(fences).toEqual([...fences].sort((a, b) => a - b));
}

describe('a pass overtaken by the step path', () => {
  it('#1 the step path’s refused create never writes FAILED over the pass’s execute in flight', async () => {
    const gate = walletGate(stack.wallet);
    const { fundingId, linkId, userId } = await tokenFunding();
    const passCreate = gate.hold('createTransfer', 'before', 'pass');
    const passExecute = gate.hold('executeTransfer', 'before', 'pass');
    const pass = settle(onePass(runOf(gate, 'pass'), fundingId));
    await passCreate.reached;

    // The takeover: the step path claims the funding as the record shows it (CREATING, no transfer).
    const steps = runOf(gate, 'steps');
    const snapshot = await inActivity(steps.loadFunding, [fundingId]);
    expect(snapshot.status).toBe('CREATING');
    const plan = stepPathStart(snapshot);
    expect(plan).toEqual({ kind: 'create' });
    expect(await inActivity(steps.markCreating, [fundingId, snapshot.fence])).toBe(true);
    // The link needs a new login by the time the step path creates: refused, FAILED.
    await stack.database.link.update({ where: { id: linkId }, data: { status: 'REAUTH_REQUIRED' } });
    const created = await inActivity(steps.createTransfer, [fundingId, snapshot.fence]);
    expect(created).toMatchObject({ kind: 'refused', status: 'FAILED', code: 'REAUTH_REQUIRED' });

    // The pass's create lands, and it goes as far as the record lets it.
    passCreate.release();
    await Promise.race([passExecute.reached, pass]);
    await settle(
      inActivity(steps.finishFunding, [
        fundingId,
        {
          status: 'FAILED',
          code: created.kind === 'refused' ? created.code : null,
          requestReferenceNo: null,
          beforeExecute: true,
        },
        snapshot.fence,
      ]),
    );
    passExecute.release();
    await pass;

    await expectMoneyMatchesRecord(fundingId, userId);
    await expectOneOwnerAtATime(fundingId);
  });

  it('#2 a run that takes over a stored transfer retrieves it before any execute', async () => {
    const gate = walletGate(stack.wallet);
    const { fundingId, userId } = await codeFunding();
    const passCreate = gate.hold('createTransfer', 'before', 'pass');
    const passExecute = gate.hold('executeTransfer', 'before', 'pass');
    const pass = settle(onePass(runOf(gate, 'pass'), fundingId));
    await passCreate.reached;

    const steps = runOf(gate, 'steps');
    const snapshot = await inActivity(steps.loadFunding, [fundingId]);
    expect(await inActivity(steps.markCreating, [fundingId, snapshot.fence])).toBe(true);
    passCreate.release();
    await Promise.race([passExecute.reached, pass]);

    const created = await inActivity(steps.createTransfer, [fundingId, snapshot.fence]);
    expect(created.kind).toBe('created');
    const transferId = created.kind === 'created' ? created.transferId : '';
    if (
      await inActivity(steps.beginExecute, [
        fundingId,
        created.kind === 'created' ? created.requestReferenceNo : null,
        snapshot.fence,
      ])
    ) {
      // The workflow's rule for what follows beginExecute: its own fresh create is executed; any
      // other transfer is retrieved first (workflows/fund-wallet-takeover.ts).
      const progress: TransferProgress =
        firstCallAfterBeginExecute({
          requestReferenceNo: created.kind === 'created' ? created.requestReferenceNo : null,
        }) === 'execute'
          ? await inActivity(steps.executeTransfer, [fundingId, transferId, snapshot.fence])
          : await inActivity(steps.retrieveTransfer, [fundingId, transferId]);
      if (progress.kind === 'not-executed')
        await inActivity(steps.executeTransfer, [fundingId, transferId, snapshot.fence]);
    }
    passExecute.release();
    await pass;

    // Every execute the step path sent was of a transfer it created itself, or one it had retrieved first.
    const stepCalls = gate.calls.filter((call) => call.run === 'steps');
    for (const [index, call] of stepCalls.entries()) {
      if (call.operation !== 'executeTransfer') continue;
      const createdItself = stepCalls.some(
        (earlier, at) => at < index && earlier.operation === 'createTransfer' && earlier.id === call.id,
      );
      const retrievedFirst = stepCalls.some(
        (earlier, at) => at < index && earlier.operation === 'retrieveTransfer' && earlier.id === call.id,
      );
      expect({ execute: call.id, createdItself, retrievedFirst }).toMatchObject({
        execute: call.id,
        ...(createdItself ? {} : { retrievedFirst: true }),
      });
    }
    expect(await executionsOf(await transfersOf(fundingId))).toBeLessThanOrEqual(1);
    await expectMoneyMatchesRecord(fundingId, userId);
    await expectOneOwnerAtATime(fundingId);
  });

  it('#3 a late pass whose create answer does not match never parks the funding the step path executed', async () => {
    const gate = walletGate(stack.wallet);
    const { fundingId, userId } = await tokenFunding();
    const passCreate = gate.hold('createTransfer', 'before', 'pass');
    const pass = settle(onePass(runOf(gate, 'pass'), fundingId));
    await passCreate.reached;

    // The step path creates, stores and executes T2 while the pass waits.
    const steps = runOf(gate, 'steps');
    const snapshot = await inActivity(steps.loadFunding, [fundingId]);
    expect(await inActivity(steps.markCreating, [fundingId, snapshot.fence])).toBe(true);
    const created = await inActivity(steps.createTransfer, [fundingId, snapshot.fence]);
    expect(created).toMatchObject({ kind: 'created', requestReferenceNo: expect.any(String) });
    const transferId = created.kind === 'created' ? created.transferId : '';
    expect(
      await inActivity(steps.beginExecute, [
        fundingId,
        created.kind === 'created' ? created.requestReferenceNo : null,
        snapshot.fence,
      ]),
    ).toBe(true);
    const progress = await inActivity(steps.executeTransfer, [fundingId, transferId, snapshot.fence]);
    expect(progress).toMatchObject({ kind: 'final', status: 'APPROVED' });

    // Then the pass's create lands, answered for another amount.
    await stack.admin.setFaults([{ endpoint: 'transfers.create', mode: 'altered-answer', rate: 1 }]);
    passCreate.release();
    await pass;
    await stack.admin.clearFaults();

    const finished = await settle(
      inActivity(steps.finishFunding, [
        fundingId,
        {
          status: 'APPROVED',
          code: null,
          requestReferenceNo: progress.kind === 'final' ? progress.requestReferenceNo : null,
        },
        snapshot.fence,
      ]),
    );
    expect(finished).toMatchObject({ value: { status: 'APPROVED', transferId } });
    const funding = await expectMoneyMatchesRecord(fundingId, userId);
    expect(funding.status).toBe('APPROVED');
    expect(funding.reviewReason).toBeNull();
    await expectOneOwnerAtATime(fundingId);
  });

  it('a pass overtaken before its execute never sends it (the owner that took over executes once)', async () => {
    const gate = walletGate(stack.wallet);
    const { fundingId, userId } = await codeFunding();
    const passCreate = gate.hold('createTransfer', 'after', 'pass');
    const pass = settle(onePass(runOf(gate, 'pass'), fundingId));
    await passCreate.reached;
    // The claim happens while the pass holds a created intent it has not stored yet.
    const steps = runOf(gate, 'steps');
    const snapshot = await inActivity(steps.loadFunding, [fundingId]);
    passCreate.release();
    await pass;
    expect(gate.calls.filter((call) => call.run === 'pass' && call.operation === 'executeTransfer')).toEqual([]);
    expect((await fundings.get(fundingId)).transferId).toBeNull();

    // The owner goes on: its own intent, created, executed once, finished.
    expect(stepPathStart(snapshot)).toEqual({ kind: 'create' });
    expect(await inActivity(steps.markCreating, [fundingId, snapshot.fence])).toBe(true);
    const created = await inActivity(steps.createTransfer, [fundingId, snapshot.fence]);
    expect(created).toMatchObject({ kind: 'created', requestReferenceNo: expect.any(String) });
    const transferId = created.kind === 'created' ? created.transferId : '';
    expect(
      firstCallAfterBeginExecute({
        requestReferenceNo: created.kind === 'created' ? created.requestReferenceNo : null,
      }),
    ).toBe('execute');
    expect(
      await inActivity(steps.beginExecute, [
        fundingId,
        created.kind === 'created' ? created.requestReferenceNo : null,
        snapshot.fence,
      ]),
    ).toBe(true);
    const progress = await inActivity(steps.executeTransfer, [fundingId, transferId, snapshot.fence]);
    expect(progress).toMatchObject({ kind: 'final', status: 'APPROVED' });
    await inActivity(steps.finishFunding, [
      fundingId,
      { status: 'APPROVED', code: null, requestReferenceNo: null },
      snapshot.fence,
    ]);
    const funding = await expectMoneyMatchesRecord(fundingId, userId);
    expect(funding).toMatchObject({ status: 'APPROVED', transferId });
    // The pass's own intent is on record, never executed.
    expect(funding.abandonedTransferIds).toHaveLength(1);
    await expectOneOwnerAtATime(fundingId);
  });
});

describe('a pass that paused after its move to EXECUTING', () => {
  /**
   * A run's funding activities whose pass stops right after storing its intents and moving them to
   * EXECUTING, as a paused worker or a long GC would stop it, while the step path of another run
   * claims each funding: what the pass does when it wakes up.
   */
  function pausedPass(gate: WalletGate) {
    const claimedFundings = createClaimedFundingsRecord({ database: stack.database });
    const takeOver = runOf(gate, 'steps');
    const claims = new Map<string, number>();
    const pass = createFundingActivities({
      fundings,
      wallet: gate.as('pass'),
      vault: stack.createVault(),
      logger,
      claimed: {
        claimPendingItems: claimedFundings.claimPendingItems,
        batchHeld: claimedFundings.batchHeld,
        claimNextInLane: claimedFundings.claimNextInLane,
        finishExecutedMany: claimedFundings.finishExecutedMany,
        async beginExecuteMany(items) {
          const moved = await claimedFundings.beginExecuteMany(items);
          for (const fundingId of moved)
            claims.set(fundingId, (await inActivity(takeOver.loadFunding, [fundingId])).fence!);
          return moved;
        },
      },
    });
    return { pass, takeOver, claims };
  }

  it.each([
    ['a single funding’s pass', 1],
    ['a batch chunk', 3],
  ])(
    '%s sends no execute once another run claimed the funding; the owner retrieves, then executes once',
    async (_name, count) => {
      const gate = walletGate(stack.wallet);
      const created = await Promise.all(Array.from({ length: count }, () => codeFunding()));
      const ids = created.map((funding) => funding.fundingId);
      const { pass, takeOver, claims } = pausedPass(gate);
      const outcomes =
        count === 1
          ? new Map([[ids[0]!, await onePass(pass as unknown as Activities, ids[0]!)]])
          : (
              await inActivity(pass.fundItemsInOnePass, [ids], {
                startToCloseTimeoutMs: fundWalletActivityTimeouts.onePassMs,
              })
            ).outcomes;

      expect(gate.calls.filter((call) => call.run === 'pass' && call.operation === 'executeTransfer')).toEqual([]);
      for (const { fundingId, userId } of created) {
        expect(outcomes.get(fundingId)).toEqual({ kind: 'steps' });
        // The owner (its claim made while the pass was paused) finds a transfer it did not create
        // in EXECUTING: it reads it back before any execute.
        const fence = claims.get(fundingId)!;
        const row = await fundings.get(fundingId);
        expect(row.ownerFence).toBe(fence);
        const start = stepPathStart(row);
        expect(start.kind).toBe('retrieve');
        const transferId = row.transferId!;
        const seen = await inActivity(takeOver.retrieveTransfer, [fundingId, transferId]);
        expect(seen.kind).toBe('not-executed');
        const progress = await inActivity(takeOver.executeTransfer, [fundingId, transferId, fence]);
        expect(progress).toMatchObject({ kind: 'final', status: 'APPROVED' });
        await inActivity(takeOver.finishFunding, [
          fundingId,
          { status: 'APPROVED', code: null, requestReferenceNo: null },
          fence,
        ]);
        expect(await executionsOf([transferId])).toBe(1);
        await expectMoneyMatchesRecord(fundingId, userId);
        await expectOneOwnerAtATime(fundingId);
      }
    },
  );
});

/** The funding record, counting its one-by-one claims (claimPending): how many a chunk tried. */
function claimsOneByOne() {
  let count = 0;
  const counted = {
    ...fundings,
    claimPending: (...args: Parameters<typeof fundings.claimPending>) => {
      count += 1;
      return fundings.claimPending(...args);
    },
  };
  return { counted, oneByOne: () => count };
}

/**
 * A RUNNING batch of four CODE items (fresh sandbox users), its partner credited, for a chunk beside a long
 * transaction: the gate its wallet calls go through, the batch records, and the items' ids.
 */
async function batchOfFour(prefix: string, record: typeof fundings = fundings, onHeldAsked = () => {}) {
  const gate = walletGate(stack.wallet);
  const { credit, insertBatch, claimed } = batchRecordsOn(
    stack.database,
    undefined,
    createTokenCipher(stack.encryptionKey),
  );
  const partnerUserId = `${prefix}-${randomUUID()}`;
  await credit(partnerUserId, 100_000n);
  const batchId = randomUUID();
  const items = await Promise.all(
    Array.from({ length: 4 }, async (_, index) => {
      const user = await stack.admin.createUser({ kycLevel: 'KYC1', balance: '0.00' });
      const { code } = await stack.admin.cashInCode(user.userId);
      return {
        id: randomUUID(),
        idempotencyKey: `batch:${batchId}:${index}`,
        workflowId: `funding-batch:${batchId}:${index}`,
        reference: `${prefix}-${index}`,
        recipient: { type: 'CODE' as const, code },
        amount: 1000n,
      };
    }),
  );
  await insertBatch(batchId, partnerUserId, items, null);
  // A chunk's activities on `record` (a test may count its calls), and a connection of its own, as a long transaction.
  const pass = createFundingActivities({
    fundings: record,
    claimed: {
      ...claimed,
      batchHeld: (fundingIds) => {
        onHeldAsked();
        return claimed.batchHeld(fundingIds);
      },
    },
    wallet: gate.as('chunk'),
    vault: stack.createVault(),
    logger,
  });
  const holder = new pg.Client({ connectionString: testDatabaseUrl() });
  await holder.connect();
  const sql = (text: string, values: unknown[] = []) => holder.query({ text, values });
  return { gate, claimed, batchId, ids: items.map((item) => item.id), pass, sql, close: () => holder.end() };
}

describe('a batch chunk beside a long transaction that holds its items (a batch’s cancel)', () => {
  it('claims none of them and waits on none: it answers at once, the items stay PENDING for the runner, nothing is sent', async () => {
    const { gate, batchId, ids, pass, sql, close } = await batchOfFour('held');
    // A batch's cancel holds its items' rows for its whole transaction: here, until the chunk answers.
    try {
      await sql('BEGIN');
      await sql('SELECT id FROM funding WHERE batch_id = $1 FOR UPDATE', [batchId]);
      const chunk = inActivity(pass.fundItemsInOnePass, [ids], {
        startToCloseTimeoutMs: fundWalletActivityTimeouts.onePassMs,
      });
      // Time enough for a chunk that answers at once on any machine; one that waits on the rows
      // would wait until the cancel commits.
      const answered = await Promise.race([
        chunk.then(() => true),
        new Promise<false>((resolve) => setTimeout(() => resolve(false), 20_000)),
      ]);
      expect(answered, 'the chunk waited on rows a long transaction holds').toBe(true);
      const { outcomes } = await chunk;
      expect([...outcomes.values()]).toEqual(ids.map(() => ({ kind: 'steps' })));
    } finally {
      await sql('ROLLBACK');
      await close();
    }
    expect(gate.calls).toEqual([]);
    for (const id of ids) expect((await fundings.get(id)).status).toBe('PENDING');
    // The runner dispatches them again: now nothing holds them, and they are claimed.
    const again = await inActivity(pass.fundItemsInOnePass, [ids], {
      startToCloseTimeoutMs: fundWalletActivityTimeouts.onePassMs,
    });
    expect([...again.outcomes.values()].map((outcome) => outcome.kind)).toEqual(ids.map(() => 'finished'));
  });
});

describe('a batch chunk whose lease lapses while its creates come back altered', () => {
  it('parks each funding for review all the same (under its claim): none is left CREATING for its workflow to create and execute another intent', async () => {
    // Found by a read: the pass looked at its time before a mismatch's park, so a chunk whose lease lapsed during the
    // creates left each funding CREATING with no transfer. Its workflow then created and executed a new intent, and the
    // review that an answer for something else calls for never happened.
    const { gate, ids, pass, close } = await batchOfFour('altered');
    await close();
    await stack.admin.setFaults([{ endpoint: 'transfers.create', mode: 'altered-answer', rate: 1 }]);
    const answered = ids.map(() => gate.hold('createTransfer', 'after', 'chunk'));
    let lapsed = false;
    const chunk = inActivity(pass.fundItemsInOnePass, [ids, { current: () => !lapsed }], {
      startToCloseTimeoutMs: fundWalletActivityTimeouts.onePassMs,
    });
    await Promise.all(answered.map((hold) => hold.reached));
    // Every create answered; the chunk's attempt may have been replaced from here on.
    lapsed = true;
    for (const hold of answered) hold.release();
    const { outcomes } = await chunk;
    expect([...outcomes.values()].map((outcome) => outcome.kind)).toEqual(ids.map(() => 'mismatch'));
    for (const id of ids) {
      const funding = await fundings.get(id);
      expect(funding).toMatchObject({ status: 'NEEDS_REVIEW', transferId: null });
      expect(funding.abandonedTransferIds).toHaveLength(1);
      expect(funding.reviewEvidence).toEqual([
        expect.objectContaining({ operation: 'transfers.create', code: 'ANSWER_MISMATCH' }),
      ]);
    }
    expect(gate.calls.filter((call) => call.operation === 'executeTransfer')).toEqual([]);
  });
});

describe('a batch chunk while a move holds its batch (a cancel ending its items)', () => {
  it('tries none of its items one by one and waits for the move a while: once it is over (here rolled back), it claims them', async () => {
    const { counted, oneByOne } = claimsOneByOne();
    const { gate, claimed, batchId, ids, pass, sql, close } = await batchOfFour('held-batch', counted);
    // The cancel's first statement, its transaction open as ending 100,000 items keeps it.
    let answered = false;
    try {
      await sql('BEGIN');
      await sql(`UPDATE funding_batch SET state = 'CANCELLED' WHERE id = $1`, [batchId]);
      const chunk = inActivity(pass.fundItemsInOnePass, [ids], {
        startToCloseTimeoutMs: fundWalletActivityTimeouts.onePassMs,
      }).finally(() => (answered = true));
      await waitFor('the batch held', async () => ((await claimed.batchHeld(ids)) ? true : undefined), 10_000);
      await new Promise((resolve) => setTimeout(resolve, 1000));
      // Before: it had answered at once, each item tried one by one (a transaction each, for nothing), and the runner
      // sent it again, round and round, for as long as the cancel took.
      expect(answered).toBe(false);
      expect(oneByOne()).toBe(0);
      expect(gate.calls).toEqual([]);
      await sql('ROLLBACK');
      const { outcomes } = await chunk;
      // The move rolled back, the batch RUNNING again: the chunk claimed its items and ran them.
      expect([...outcomes.values()].map((outcome) => outcome.kind)).toEqual(ids.map(() => 'finished'));
    } finally {
      await sql('ROLLBACK').catch(() => undefined);
      await close();
    }
  });
});

describe('a batch chunk whose batch a cancel ended while it waited', () => {
  it('tries none of its items one by one once the cancel committed: they are looked at as they are', async () => {
    const { counted, oneByOne } = claimsOneByOne();
    let heldAsked = 0;
    const { gate, batchId, ids, pass, sql, close } = await batchOfFour('cancelled-batch', counted, () => {
      heldAsked += 1;
    });
    try {
      await sql('BEGIN');
      await sql(`UPDATE funding_batch SET state = 'CANCELLED' WHERE id = $1`, [batchId]);
      const chunk = inActivity(pass.fundItemsInOnePass, [ids], {
        startToCloseTimeoutMs: fundWalletActivityTimeouts.onePassMs,
      });
      // The chunk found its batch held, and waits (it asks again every 250 ms): the cancel commits.
      await waitFor('the chunk waiting on the move', () => (heldAsked >= 2 ? true : undefined), 10_000);
      await sql('COMMIT');
      const { outcomes } = await chunk;
      // Before: the move over, each item was tried one by one, a transaction each for nothing.
      expect(oneByOne()).toBe(0);
      expect([...outcomes.values()]).toEqual(ids.map(() => ({ kind: 'steps' })));
      expect(gate.calls).toEqual([]);
    } finally {
      await sql('ROLLBACK').catch(() => undefined);
      await close();
    }
  });
});

describe('a retried execute', () => {
  it('sends no execute that could outlive its attempt after the retrieve used its time', async () => {
    const gate = walletGate(stack.wallet);
    const { fundingId } = await codeFunding();
    const first = runOf(gate, 'first');
    const snapshot = await inActivity(first.loadFunding, [fundingId]);
    await inActivity(first.markCreating, [fundingId, snapshot.fence]);
    const created = await inActivity(first.createTransfer, [fundingId, snapshot.fence]);
    const transferId = created.kind === 'created' ? created.transferId : '';
    await inActivity(first.beginExecute, [
      fundingId,
      created.kind === 'created' ? created.requestReferenceNo : null,
      snapshot.fence,
    ]);

    // Attempt 2 of the execute activity: 1 s wallet calls, a start-to-close that fits one call and
    // the margin, and a retrieve that takes a second: no execute may follow it in this attempt.
    const walletTimeoutMs = 1000;
    const retried = runOf(gate, 'retried', { walletTimeoutMs });
    const slowRetrieve = gate.hold('retrieveTransfer', 'after', 'retried');
    const attempt = settle(
      inActivity(retried.executeTransfer, [fundingId, transferId, snapshot.fence], {
        attempt: 2,
        startToCloseTimeoutMs: walletTimeoutMs + 2_500,
      }),
    );
    await slowRetrieve.reached;
    await new Promise((resolve) => setTimeout(resolve, 1000));
    slowRetrieve.release();
    await attempt;
    expect(gate.calls.filter((call) => call.run === 'retried').map((call) => call.operation)).toEqual([
      'retrieveTransfer',
    ]);
    expect(await executionsOf([transferId])).toBe(0);
  });
});

describe('a funding create answered late, stored just before its run’s next attempt met a mismatched answer', () => {
  it('is kept unexecuted, not as the funding’s transfer: the review offers only FAILED, and no money moved', async () => {
    // Found by a read: the first attempt's intent was stored while the funding was still CREATING, just before the
    // run parked it for the mismatch, and the review offered APPROVED for a transfer the wallet never executed.
    const gate = walletGate(stack.wallet);
    const { fundingId, userId } = await tokenFunding();
    const first = runOf(gate, 'first');
    const second = runOf(gate, 'second');
    const snapshot = await inActivity(first.loadFunding, [fundingId]);
    expect(await inActivity(first.markCreating, [fundingId, snapshot.fence])).toBe(true);
    const held = gate.hold('createTransfer', 'after', 'first');
    const late = settle(inActivity(first.createTransfer, [fundingId, snapshot.fence], { attempt: 1 }));
    await held.reached;
    await stack.admin.setFaults([{ endpoint: 'transfers.create', mode: 'altered-answer', rate: 1 }]);
    const mismatched = await inActivity(second.createTransfer, [fundingId, snapshot.fence], { attempt: 2 });
    await stack.admin.clearFaults();
    expect(mismatched).toMatchObject({ kind: 'mismatch' });
    held.release();
    const stored = await late;
    expect(stored).toMatchObject({ value: { kind: 'created' } });
    const lateId = 'value' in stored && stored.value.kind === 'created' ? stored.value.transferId : 'none';
    const reason = 'the wallet’s create answer does not match the request';
    expect(await inActivity(second.parkFundingForReview, [fundingId, reason, [], snapshot.fence])).toEqual({
      parked: true,
    });
    const funding = await expectMoneyMatchesRecord(fundingId, userId);
    expect({
      status: funding.status,
      transferId: funding.transferId,
      resolutions: fundingResolutions({ transferId: funding.transferId }),
      kept: funding.abandonedTransferIds.includes(lateId),
      executions: await executionsOf(await transfersOf(fundingId)),
    }).toEqual({ status: 'NEEDS_REVIEW', transferId: null, resolutions: ['FAILED'], kept: true, executions: 0 });
    expect(funding.reviewReason).toBe(
      `${reason}; transfer ${lateId}, created by an earlier attempt, was not executed either`,
    );
  });
});

describe('the sweep’s entry that it started a workflow, written late', () => {
  it('is dropped once the run it started claimed the funding or the payment: it never stands after that run’s moves', async () => {
    // Found by a read: the sweep wrote "workflow started" after the start, unfenced; a sweep attempt paused between
    // the two wrote it after the new run had claimed the record and moved it (even after APPROVED or SUCCEEDED).
    const { fundingId } = await codeFunding();
    const sweepClaim = (await fundings.claim(fundingId))!.fence;
    await fundings.claim(fundingId); // the run the sweep started
    await fundings.recordEvent(fundingId, 'PENDING', 'reconciliation: workflow started', sweepClaim);
    const { id } = await storedPayment();
    const listed = (await payments.get(id)).ownerFence;
    await payments.claim(id); // the run the sweep started
    await payments.recordEvent(id, 'PENDING', 'reconciliation: workflow started', listed);
    const written = async () => ({
      funding: (await fundings.findWithEvents(fundingId))!.events.map((event) => event.detail),
      payment: (await stack.database.paymentEvent.findMany({ where: { paymentId: id } })).map((event) => event.detail),
    });
    expect(await written()).toEqual({ funding: [expect.any(String)], payment: [expect.any(String)] });
    // Written in time (no run claimed since), it stands.
    const current = (await fundings.get(fundingId)).ownerFence;
    await fundings.recordEvent(fundingId, 'PENDING', 'reconciliation: workflow started', current);
    expect((await written()).funding.at(-1)).toBe('reconciliation: workflow started');
  });
});

describe('a review park that did not move', () => {
  it('answers the final state the funding already has, for the workflow to end with', async () => {
    const gate = walletGate(stack.wallet);
    const { fundingId } = await codeFunding();
    const outcome = await onePass(runOf(gate, 'pass'), fundingId);
    expect(outcome).toMatchObject({ kind: 'finished', status: 'APPROVED' });
    const steps = runOf(gate, 'steps');
    const snapshot = await inActivity(steps.loadFunding, [fundingId]);
    const parked = await inActivity(steps.parkFundingForReview, [
      fundingId,
      'an execute whose outcome stayed unknown',
      [],
      snapshot.fence,
    ]);
    expect(parked).toMatchObject({ parked: false, status: 'APPROVED' });
    expect((await fundings.get(fundingId)).status).toBe('APPROVED');
  });
});

/** A payment of PHP 5.00 from a new linked user, as the API stores it (no workflow runs it here). */
async function storedPayment(): Promise<{ linkId: string; id: string }> {
  const { linkId } = await createEmbeddedLink(stack, { kycLevel: 'KYC1', balance: '100.00' });
  const id = randomUUID();
  await payments.insert({
    id,
    idempotencyKey: `fenced-${id}`,
    requestFingerprint: id,
    workflowId: `fenced-${id}`,
    linkId,
    amount: moneyOf({ currency: 'PHP', value: '5.00' }),
  });
  return { linkId, id };
}

describe('payments: a stale run of a payment (the same fences in pay-wallet)', () => {
  it('sends no execute once the attempt’s time went to fetching a client token: nothing goes out that could outlive it', async () => {
    // Found by a read: the time left was checked once, before a call that first fetched a client token (and, refused,
    // once more): an execute sent after a slow fetch could outlive its activity, whose retry sent a second beside it.
    const { id } = await storedPayment();
    const run = runOf(walletGate(stack.wallet), 'warm');
    const loaded = await inActivity(run.loadPayment, [id]);
    await inActivity(run.markPaymentCreating, [id, loaded.fence]);
    const created = await inActivity(run.createPayment, [id, loaded.fence]);
    if (created.kind !== 'created') throw new Error(`not created: ${created.kind}`);
    await inActivity(run.beginPaymentExecute, [id, created.requestReferenceNo, loaded.fence]);
    // A worker that has no client token yet, beside a token endpoint that takes 2.5 s: its 2 s calls
    // (WALLET_TIMEOUT_MS, and the 2 s margin) fit the attempt's 6 s when it begins, with 2 s to spare, no longer once
    // the token has come.
    // (Its client waits 3 s for an answer, so that the slow token comes at all.)
    const started: string[] = [];
    const cold = createWalletClient({
      ...stack.walletConfig,
      timeoutMs: 3_000,
      onCallStart: (call) => {
        started.push(call.operation);
        return () => undefined;
      },
    });
    await stack.admin.setFaults([{ endpoint: 'connect.token', mode: 'latency', rate: 1, delayMs: 2_500 }]);
    try {
      const late = stackActivities(stack, { wallet: cold, logger, walletTimeoutMs: 2_000 });
      const outcome = await inActivity(late.executePayment, [id, loaded.fence], { startToCloseTimeoutMs: 6_000 });
      expect({ outcome, started }).toEqual({
        outcome: expect.objectContaining({ kind: 'not-sent' }),
        started: ['connect.token.client_credentials'],
      });
    } finally {
      await stack.admin.clearFaults();
      await cold.close();
    }
  });

  it('a create answered after its run sent the payment to review stores no wallet payment id: the review offers only FAILED, as for a payment never executed', async () => {
    // Found by a read: the id was stored whatever the payment's status, by the run's own fence; a payment in review
    // with no wallet payment id may be resolved only FAILED, and the late id offered SUCCEEDED for a payment the
    // wallet never executed (its revenue posted, payment.succeeded sent).
    const { id } = await storedPayment();
    const gate = walletGate(stack.wallet);
    const run = runOf(gate, 'late');
    const loaded = await inActivity(run.loadPayment, [id]);
    await inActivity(run.markPaymentCreating, [id, loaded.fence]);
    const held = gate.hold('createPayment', 'after', 'late');
    const late = inActivity(run.createPayment, [id, loaded.fence]);
    await held.reached;
    // Meanwhile the run's next attempt found nothing it could use (a mismatched answer): the payment sent to review.
    expect(await payments.parkForReview(id, 'the wallet created something else than asked', [], loaded.fence)).toBe(
      true,
    );
    held.release();
    await expect(late).rejects.toMatchObject({ type: 'PaymentOwnerLost' });
    expect(await stack.database.payment.findUniqueOrThrow({ where: { id } })).toMatchObject({
      status: 'NEEDS_REVIEW',
      walletPaymentId: null,
    });
  });

  it('a create answered late, stored just before its run’s next attempt met a mismatched answer, is not kept for the review: it offers only FAILED', async () => {
    // Found by a read: the other order of the case above. The first attempt timed out for its run, whose next attempt
    // got an answer for another amount; the first attempt's answer was stored while the payment was still CREATING,
    // just before the run parked it, and the review offered SUCCEEDED for a payment the wallet never executed.
    const { id } = await storedPayment();
    const gate = walletGate(stack.wallet);
    const first = runOf(gate, 'first');
    const second = runOf(gate, 'second');
    const loaded = await inActivity(first.loadPayment, [id]);
    await inActivity(first.markPaymentCreating, [id, loaded.fence]);
    const held = gate.hold('createPayment', 'after', 'first');
    const late = settle(inActivity(first.createPayment, [id, loaded.fence], { attempt: 1 }));
    await held.reached;
    await stack.admin.setFaults([{ endpoint: 'op.payments.create', mode: 'altered-answer', rate: 1 }]);
    const mismatched = await inActivity(second.createPayment, [id, loaded.fence], { attempt: 2 });
    await stack.admin.clearFaults();
    expect(mismatched).toMatchObject({ kind: 'mismatch' });
    held.release();
    const stored = await late;
    expect(stored).toMatchObject({ value: { kind: 'created' } });
    const lateId = 'value' in stored && stored.value.kind === 'created' ? stored.value.walletPaymentId : 'none';
    const reason = 'the wallet’s create answer does not match the request';
    expect(await inActivity(second.parkForReview, [id, reason, [], loaded.fence])).toEqual({ parked: true });
    const payment = await stack.database.payment.findUniqueOrThrow({ where: { id } });
    expect({
      status: payment.status,
      walletPaymentId: payment.walletPaymentId,
      fee: payment.fee,
      resolutions: paymentResolutions({ paymentId: payment.walletPaymentId }),
    }).toEqual({ status: 'NEEDS_REVIEW', walletPaymentId: null, fee: null, resolutions: ['FAILED'] });
    expect(payment.reviewReason).toBe(
      `${reason}; payment ${lateId}, created by an earlier attempt, was not executed either`,
    );
  });

  it('a stale run’s refusal never writes FAILED over the execute the run that took over sent', async () => {
    const gate = walletGate(stack.wallet);
    const { linkId, id } = await storedPayment();

    // Run A (the stale copy) loaded the payment and moved it to CREATING; then B took over.
    const a = runOf(gate, 'a');
    const loadedA = await inActivity(a.loadPayment, [id]);
    await inActivity(a.markPaymentCreating, [id, loadedA.fence]);
    const b = runOf(gate, 'b');
    const loadedB = await inActivity(b.loadPayment, [id]);
    await inActivity(b.markPaymentCreating, [id, loadedB.fence]);
    const created = await inActivity(b.createPayment, [id, loadedB.fence]);
    expect(created.kind).toBe('created');
    await inActivity(b.beginPaymentExecute, [
      id,
      created.kind === 'created' ? created.requestReferenceNo : null,
      loadedB.fence,
    ]);
    const bExecute = gate.hold('executePayment', 'before', 'b');
    const executedB = settle(inActivity(b.executePayment, [id, loadedB.fence]));
    await bExecute.reached;

    // A goes on from its stale view: the link needs a new login, its execute is refused, it finishes FAILED.
    await stack.database.link.update({ where: { id: linkId }, data: { status: 'REAUTH_REQUIRED' } });
    const refusedA = await settle(inActivity(a.executePayment, [id, loadedA.fence]));
    if ('value' in refusedA && refusedA.value.kind === 'failed') {
      await settle(
        inActivity(a.finishPayment, [
          id,
          { status: 'FAILED', code: refusedA.value.code, requestReferenceNo: null },
          loadedA.fence,
        ]),
      );
    }
    await stack.database.link.update({ where: { id: linkId }, data: { status: 'ACTIVE' } });
    bExecute.release();
    const outcomeB = await executedB;
    expect(outcomeB).toMatchObject({ value: { kind: 'succeeded' } });
    await settle(
      inActivity(b.finishPayment, [
        id,
        {
          status: 'SUCCEEDED',
          code: null,
          requestReferenceNo:
            'value' in outcomeB && outcomeB.value.kind === 'succeeded' ? outcomeB.value.requestReferenceNo : null,
        },
        loadedB.fence,
      ]),
    );

    const payment = await payments.get(id);
    const executions =
      (await stack.admin.ledger()).payments.find((entry) => entry.paymentId === payment.walletPaymentId)?.executions ??
      0;
    expect({ status: payment.status, executions }).toEqual({ status: 'SUCCEEDED', executions: 1 });
    const events = (await payments.findByEitherIdWithEvents(id))!.events;
    const fences = events.map((event) => event.fence).filter((fence): fence is number => fence !== null);
    expect(fences).toEqual([...fences].sort((x, y) => x - y));
  });
});

// Last but one: it starts the stack's worker, as the last one does.
describe('a replaced batch chunk attempt whose claim commits late (its worker frozen inside the claim)', () => {
  it('hands the items its own claim took to their workflows, which end them, each executed once: none is left CREATING for the sweep', async () => {
    const { gate, claimed, batchId, ids, pass, sql, close } = await batchOfFour('late-claim');
    const { batches } = batchRecordsOn(stack.database, undefined, createTokenCipher(stack.encryptionKey));
    const chunkOf = (funding: typeof pass) =>
      createBatchActivities({
        batches,
        fundings,
        funding,
        temporal: stack.temporal,
        taskQueue: stack.taskQueue,
        logger,
      });
    // The first attempt's claim waits at a gate the test opens: its worker frozen inside the claim.
    let claimReached!: () => void;
    let openClaim!: () => void;
    const reached = new Promise<void>((resolve) => (claimReached = resolve));
    const opened = new Promise<void>((resolve) => (openClaim = resolve));
    const frozen = createFundingActivities({
      fundings,
      claimed: {
        ...claimed,
        claimPendingItems: async (...args) => {
          claimReached();
          await opened;
          return claimed.claimPendingItems(...args);
        },
      },
      wallet: gate.as('replaced'),
      vault: stack.createVault(),
      logger,
    });
    const chunkAttempt = (attempt: number) =>
      new MockActivityEnvironment({ startToCloseTimeoutMs: fundBatchActivityTimeouts.runItemMs, attempt });
    const first = chunkAttempt(1);
    const replaced = settle(first.run(chunkOf(frozen).runBatchItems, batchId, ids));
    await reached;
    // Its claim's transaction holds the items' rows, not committed, when Temporal's next attempt runs (here a
    // connection of the test's holds them): that attempt takes none and finds them PENDING, the runner's to send again.
    try {
      await sql('BEGIN');
      await sql('SELECT id FROM funding WHERE batch_id = $1 FOR UPDATE', [batchId]);
      const next = await chunkAttempt(2).run(chunkOf(pass).runBatchItems, batchId, ids);
      expect(next).toEqual({ finished: 0, handedOver: 0, notStarted: 4, slowDownMs: null });
    } finally {
      await sql('ROLLBACK');
      await close();
    }
    // The first attempt resumes, replaced (Temporal refused its heartbeat), and its claim commits.
    first.cancel();
    openClaim();
    await replaced;
    expect(gate.calls).toEqual([]);
    // Before: it handed nothing over, and the items stayed CREATING with no workflow, found by no one but the sweep
    // (RECONCILE_AFTER_SECONDS, 15 minutes by default), the runner passing them over as started.
    for (const id of ids) {
      const row = await fundings.get(id);
      const running = await stack.temporal.workflow
        .getHandle(row.workflowId)
        .describe()
        .then(
          () => true,
          () => false,
        );
      expect({ id, status: row.status, running }).toEqual({ id, status: 'CREATING', running: true });
    }
    await stack.startWorker();
    for (const id of ids) {
      await stack.temporal.workflow.getHandle((await fundings.get(id)).workflowId).result();
      const row = await fundings.get(id);
      expect(row.status).toBe('APPROVED');
      expect(await executionsOf(await transfersOf(id))).toBe(1);
      await expectOneOwnerAtATime(id);
    }
  }, 120_000);
});

describe('a live run overtaken by a stale copy’s claim (found by the pause-chaos soak)', () => {
  it('takes the funding over again, trusting nothing, and ends it: approved once, never left CREATING', async () => {
    const since = new Date();
    await stack.startWorker();
    // The pass's create is refused with 429 (nothing created): the workflow goes on by its steps after the Retry-After.
    await stack.admin.setFaults([
      { endpoint: 'transfers.create', mode: 'rate-limited', rate: 1, retryAfterSeconds: 2 },
    ]);
    const user = await stack.admin.createUser({ kycLevel: 'KYC1', balance: '0.00' });
    const { code } = await stack.admin.cashInCode(user.userId);
    const response = await stack.opsFetch('/ops/fundings', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': randomUUID() },
      body: JSON.stringify({ recipient: { type: 'CODE', code }, amount: { currency: 'PHP', value: '4.00' } }),
    });
    expect(response.status).toBe(202);
    const { fundingId } = (await response.json()) as { fundingId: string };
    const fenceNow = async () => (await fundings.get(fundingId)).ownerFence;
    // A wait, not a speed bound: on a busy machine (files run three at once) the step path's turn
    // after the pass's 429 can take a while.
    const waitFor = async (check: () => Promise<boolean>, what: string) => {
      for (const deadline = Date.now() + 90_000; Date.now() < deadline;) {
        if (await check()) return;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      throw new Error(`timed out waiting for ${what}`);
    };
    // The pass claimed (fence 1) and its create was refused. Its claim alone is not enough: the
    // claim is written before the create is sent, and a fault swapped in between would let the
    // pass's create through (slowly), so the pass would end the funding and no step path would come.
    await waitFor(async () => (await fenceNow()) >= 1, 'the pass');
    await waitFor(
      async () =>
        (await stack.database.walletCall.count({
          where: { operation: 'transfers.create', httpStatus: 429, startedAt: { gte: since } },
        })) > 0,
      'the pass’s refused create',
    );
    await stack.admin.setFaults([{ endpoint: 'transfers.create', mode: 'latency', rate: 1, delayMs: 2000 }]);
    // The step path claims (fence 2) and creates; a stale copy of the workflow claims meanwhile.
    await waitFor(async () => (await fenceNow()) >= 2, 'the step path’s claim');
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await fundings.claim(fundingId)).toMatchObject({ status: 'CREATING' });
    await stack.admin.clearFaults();

    let funding = await fundings.get(fundingId);
    for (let i = 0; i < 300 && !['APPROVED', 'DECLINED', 'REJECTED', 'FAILED'].includes(funding.status); i += 1) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      funding = await fundings.get(fundingId);
    }
    expect(funding.status).toBe('APPROVED');
    expect(await executionsOf(await transfersOf(fundingId))).toBe(1);
    expect((await stack.admin.user(user.userId)).balance).toBe('4.00');
    // The record is final a moment before the workflow closes (its last activity's answer is still on its way).
    const handle = stack.temporal.workflow.getHandle(funding.workflowId);
    await handle.result();
    expect((await handle.describe()).status.name).toBe('COMPLETED');
    await expectOneOwnerAtATime(fundingId);
  }, 180_000);
});
