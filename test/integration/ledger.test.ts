// The partner's ledger on a real PostgreSQL (docs/ledger.md, contract-decisions section 10): the
// hold taken with the funding, posted on APPROVED and released on DECLINED, REJECTED, FAILED and
// cancel exactly once; kept while not final; a retried posting posts once; the sweep settles a hold
// a crash left open; limits refuse before anything is stored; adjustments idempotent; the
// database's own rules (zero-sum transactions, append-only entries, balances only through entries,
// the floor under 100 concurrent withdrawals).
import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it, vi } from 'vitest';
import type { Prisma } from '../../generated/prisma/client.ts';
import { batchItemRows, createBatchItemsRecord, type NewBatchItem } from '../../fundings/batch-items-record.ts';
import { createFundingRecord, type NewFunding } from '../../fundings/funding-record.ts';
import { createBatchRecord } from '../../fundings/batch-record.ts';
import { createApiDatabase, createDatabase } from '../../lib/database.ts';
import { createLedger, holdReference, InsufficientFundsError } from '../../ledger/ledger.ts';
import type { LimitRefusal } from '../../ledger/limits.ts';
import { defaultFundingLimits, type FundingLimits } from '../../ledger/limits.ts';
import { createTokenCipher } from '../../lib/token-cipher.ts';
import { createPaymentRecord } from '../../payments/payment-record.ts';
import { checkLedgerInvariants } from '../../harness/ledger-invariants.ts';
import { moneyOf } from '../../domain/money.ts';
import { settlementDayOf } from '../../ledger/settlement.ts';
import { newFundingRow } from '../support/new-funding-row.ts';
import { testDatabaseUrl } from '../support/test-database.ts';

const database = createDatabase(testDatabaseUrl(), { maxConnections: 20 });
afterAll(() => database.$disconnect());

const ledger = createLedger();
const noLimits: FundingLimits = {
  ...defaultFundingLimits,
  min: 1n,
  max: 10n ** 13n,
  userDailyAmount: 10n ** 15n,
  userDailyCount: 1_000_000,
  userPerMinute: 1_000_000,
};
const cipher = createTokenCipher(randomBytes(32));
const fundings = createFundingRecord({ database, cipher, ledger, limits: noLimits });
const payments = createPaymentRecord({ database, ledger });

const newUser = () => `ledger-test-${randomUUID()}`;

function withdrawal(partnerUserId: string | null, value = '10.00'): NewFunding {
  return newFundingRow('ledger', {
    recipient: { type: 'TOKEN', linkId: randomUUID() },
    amount: moneyOf({ currency: 'PHP', value }),
    ...(partnerUserId ? { source: { type: 'USER_BALANCE' as const, partnerUserId } } : {}),
  });
}

const account = (name: string) => ledger.account(database, name);

async function credit(partnerUserId: string, value: string) {
  const result = await ledger.adjust(database, {
    idempotencyKey: `credit-${randomUUID()}`,
    account: `USER:${partnerUserId}`,
    currency: 'PHP',
    amount: BigInt(Math.round(Number(value) * 1000)),
    reason: 'test credit',
    fingerprint: 'f'.repeat(64),
  });
  expect(result.kind).toBe('created');
}

/** A funding moved to EXECUTING, where every final state is reachable. */
async function executing(partnerUserId: string, value = '10.00') {
  const funding = withdrawal(partnerUserId, value);
  expect(await fundings.insert(funding)).toBe(true);
  await fundings.move(funding.id, 'CREATING', { detail: 'creating' });
  await fundings.storeTransferId(funding.id, `t-${funding.id}`);
  expect(await fundings.beginExecute(funding.id, null)).toBe(true);
  return funding;
}

const settlements = (fundingId: string) =>
  database.ledgerTransaction.findMany({
    where: { fundingId },
    orderBy: { id: 'asc' },
    select: { kind: true, reference: true },
  });

describe('two-phase fundings', () => {
  it('takes the hold in the transaction that stores the funding', async () => {
    const user = newUser();
    await credit(user, '100.00');
    const funding = withdrawal(user, '30.00');
    expect(await fundings.insert(funding)).toBe(true);
    expect(await account(`USER:${user}`)).toMatchObject({
      balance: { value: '100.00' },
      held: { value: '30.00' },
      available: { value: '70.00' },
    });
    expect(await settlements(funding.id)).toEqual([{ kind: 'HOLD', reference: holdReference(funding.id) }]);
    expect(await fundings.get(funding.id)).toMatchObject({ sourcePartnerUserId: user, status: 'PENDING' });
  });

  it('refuses INSUFFICIENT_FUNDS and stores nothing', async () => {
    const user = newUser();
    await credit(user, '5.00');
    const funding = withdrawal(user, '5.01');
    await expect(fundings.insert(funding)).rejects.toBeInstanceOf(InsufficientFundsError);
    expect(await fundings.find(funding.id)).toBeNull();
    expect(await database.ledgerTransaction.count({ where: { fundingId: funding.id } })).toBe(0);
    expect(await account(`USER:${user}`)).toMatchObject({ balance: { value: '5.00' }, held: { value: '0.00' } });
    // A user with no account at all has nothing to withdraw.
    await expect(fundings.insert(withdrawal(newUser(), '1.00'))).rejects.toBeInstanceOf(InsufficientFundsError);
  });

  it('posts the hold to WALLET_CLEARING on APPROVED, once', async () => {
    const user = newUser();
    await credit(user, '50.00');
    const clearingBefore = (await account('WALLET_CLEARING')).balance.value;
    const funding = await executing(user, '20.00');
    expect(
      (await fundings.finish(funding.id, { status: 'APPROVED', code: null, requestReferenceNo: null, detail: null }))
        .moved,
    ).toBe(true);
    // A retried finish (a retried activity) posts nothing more.
    expect(
      (await fundings.finish(funding.id, { status: 'APPROVED', code: null, requestReferenceNo: null, detail: null }))
        .moved,
    ).toBe(false);
    expect(await account(`USER:${user}`)).toMatchObject({
      balance: { value: '30.00' },
      held: { value: '0.00' },
      available: { value: '30.00' },
    });
    expect((await settlements(funding.id)).map((t) => t.kind)).toEqual(['HOLD', 'POST']);
    expect(Number((await account('WALLET_CLEARING')).balance.value) - Number(clearingBefore)).toBeGreaterThanOrEqual(
      20,
    );
  });

  it.each(['DECLINED', 'FAILED'] as const)('releases the hold on %s', async (status) => {
    const user = newUser();
    await credit(user, '50.00');
    const funding = await executing(user, '20.00');
    await fundings.finish(funding.id, {
      status,
      code: status === 'DECLINED' ? '6001' : 'EXECUTE_FAILED',
      requestReferenceNo: null,
      detail: null,
    });
    expect(await account(`USER:${user}`)).toMatchObject({
      balance: { value: '50.00' },
      held: { value: '0.00' },
      available: { value: '50.00' },
    });
    expect((await settlements(funding.id)).map((t) => t.kind)).toEqual(['HOLD', 'RELEASE']);
  });

  it('releases the hold on REJECTED and on an ops cancel', async () => {
    const user = newUser();
    await credit(user, '50.00');
    const rejected = withdrawal(user, '20.00');
    await fundings.insert(rejected);
    await fundings.move(rejected.id, 'CREATING', { detail: 'creating' });
    await fundings.finish(rejected.id, { status: 'REJECTED', code: 'M133', requestReferenceNo: null, detail: null });
    const cancelled = withdrawal(user, '15.00');
    await fundings.insert(cancelled);
    expect(await fundings.cancel(await fundings.get(cancelled.id))).toBe(true);
    expect((await settlements(rejected.id)).map((t) => t.kind)).toEqual(['HOLD', 'RELEASE']);
    expect((await settlements(cancelled.id)).map((t) => t.kind)).toEqual(['HOLD', 'RELEASE']);
    expect(await account(`USER:${user}`)).toMatchObject({ balance: { value: '50.00' }, held: { value: '0.00' } });
  });

  it('keeps the hold while the funding is not final (executing, reconciling: the states a review waits in)', async () => {
    const user = newUser();
    await credit(user, '50.00');
    const funding = await executing(user, '20.00');
    await fundings.move(funding.id, 'RECONCILING', { detail: 'unknown outcome' });
    expect(await account(`USER:${user}`)).toMatchObject({ held: { value: '20.00' }, available: { value: '30.00' } });
    expect((await settlements(funding.id)).map((t) => t.kind)).toEqual(['HOLD']);
  });

  it('a retried posting posts once: a second settle of one hold writes nothing', async () => {
    const user = newUser();
    await credit(user, '50.00');
    const funding = await executing(user, '20.00');
    await fundings.finish(funding.id, { status: 'APPROVED', code: null, requestReferenceNo: null, detail: null });
    const again = await database.$transaction((tx) => ledger.settleFunding(tx, funding.id, 'post'));
    const other = await database.$transaction((tx) => ledger.settleFunding(tx, funding.id, 'release'));
    expect([again, other]).toEqual(['none', 'none']);
    expect(await fundings.settleFinalHold(funding.id)).toBe('none');
    expect((await settlements(funding.id)).map((t) => t.kind)).toEqual(['HOLD', 'POST']);
    expect(await account(`USER:${user}`)).toMatchObject({ balance: { value: '30.00' }, held: { value: '0.00' } });
  });

  it('the sweep settles a hold that a crash left open on a final funding', async () => {
    const user = newUser();
    await credit(user, '50.00');
    const funding = await executing(user, '20.00');
    // The crash: the final state written without its settle (a record without the ledger, as before it existed).
    const withoutLedger = createFundingRecord({
      database,
      cipher,
      ledger: { ...ledger, settleFunding: async () => 'none' as const },
    });
    await withoutLedger.finish(funding.id, { status: 'APPROVED', code: null, requestReferenceNo: null, detail: null });
    /** Finished since `since`; without, the holds of every funding ever (the daily pass's ranges, as one). */
    const open = async (since?: Date) =>
      (since
        ? await fundings.listFinalWithOpenHold({ limit: 10_000, since })
        : await fundings.listFinalWithOpenHoldAmong({ limit: 10_000, after: 0n, through: 2n ** 62n })
      ).map((row) => row.id);
    const aMinuteAgo = new Date(Date.now() - 60_000);
    expect(await open()).toContain(funding.id);
    // Among those finished lately too; not among those finished after it.
    expect(await open(aMinuteAgo)).toContain(funding.id);
    expect(await open(new Date(Date.now() + 60_000))).not.toContain(funding.id);
    expect(await fundings.settleFinalHold(funding.id)).toBe('posted');
    expect(await fundings.settleFinalHold(funding.id)).toBe('none');
    expect(await open()).not.toContain(funding.id);
    expect(await open(aMinuteAgo)).not.toContain(funding.id);
    expect(await account(`USER:${user}`)).toMatchObject({ balance: { value: '30.00' }, held: { value: '0.00' } });
  });
});

describe('the floor under concurrency', () => {
  // Through the API's admission, as the API stores them: one user's requests wait in line in the
  // process, each taking a connection only at its turn (straight at the pool, the later ones of a
  // hundred waited for a connection past Prisma's limit on a loaded machine). A wait limit of a
  // minute, so the line never refuses one here: every answer is the floor's.
  const gated = createApiDatabase(testDatabaseUrl(), { maxConnections: 20, admission: { maxWaitMs: 60_000 } }).database;
  afterAll(() => gated.$disconnect());
  const gatedFundings = createFundingRecord({ database: gated, cipher, ledger, limits: noLimits });

  it('100 concurrent withdrawals against a balance covering exactly 10: 10 accepted, 90 INSUFFICIENT_FUNDS, never negative', async () => {
    const user = newUser();
    await credit(user, '100.00');
    const results = await Promise.allSettled(
      Array.from({ length: 100 }, () => gatedFundings.insert(withdrawal(user, '10.00'))),
    );
    const accepted = results.filter((result) => result.status === 'fulfilled' && result.value === true);
    const refused = results.filter(
      (result) => result.status === 'rejected' && result.reason instanceof InsufficientFundsError,
    );
    expect(accepted).toHaveLength(10);
    expect(refused).toHaveLength(90);
    expect(await account(`USER:${user}`)).toMatchObject({
      balance: { value: '100.00' },
      held: { value: '100.00' },
      available: { value: '0.00' },
    });
    expect(await database.funding.count({ where: { sourcePartnerUserId: user } })).toBe(10);
  });
});

describe('limits', () => {
  const strict: FundingLimits = {
    ...defaultFundingLimits,
    min: 1_000n,
    max: 100_000n,
    userDailyAmount: 150_000n,
    userDailyCount: 3,
    userPerMinute: 2,
  };
  const limited = createFundingRecord({ database, cipher, ledger, limits: strict });

  async function refusal(funding: NewFunding) {
    const error = await limited.insert(funding).then(
      () => null,
      (caught: unknown) => caught,
    );
    expect(await database.funding.count({ where: { id: funding.id } })).toBe(0);
    return error as LimitRefusal;
  }

  it('refuses before storing: too small, too large, per minute, per day', async () => {
    const user = newUser();
    await credit(user, '1000.00');
    expect(await refusal(withdrawal(user, '0.99'))).toMatchObject({
      code: 'AMOUNT_TOO_SMALL',
      detail: expect.stringContaining('FUNDING_MIN'),
    });
    expect(await refusal(withdrawal(user, '100.01'))).toMatchObject({
      code: 'AMOUNT_TOO_LARGE',
      detail: expect.stringContaining('100.00'),
    });
    expect(await limited.insert(withdrawal(user, '100.00'))).toBe(true);
    expect(await refusal(withdrawal(user, '50.01'))).toMatchObject({
      code: 'DAILY_LIMIT_EXCEEDED',
      detail: expect.stringContaining('50.00 PHP left today'),
    });
    expect(await limited.insert(withdrawal(user, '10.00'))).toBe(true);
    expect(await refusal(withdrawal(user, '1.00'))).toMatchObject({
      code: 'VELOCITY_LIMIT_EXCEEDED',
      detail: expect.stringContaining('USER_PER_MINUTE'),
    });
    expect(await account(`USER:${user}`)).toMatchObject({ held: { value: '110.00' } });
  });

  it('counts the day by the database’s clock: a process whose clock has passed midnight before the database’s still counts today', async () => {
    const user = newUser();
    await credit(user, '1000.00');
    expect(await limited.insert(withdrawal(user, '100.00'))).toBe(true);
    // This process's clock a minute past the next midnight in SETTLEMENT_TZ (Asia/Manila by default); the database's
    // is still today. Before: the day began where this process's clock said, today's 100.00 counted for nothing, and
    // a second 100.00 (past the 150.00 a day) was stored.
    const nextMidnight = settlementDayOf(new Date(), defaultFundingLimits.timeZone).endsAt.getTime();
    vi.useFakeTimers({ toFake: ['Date'] });
    try {
      vi.setSystemTime(nextMidnight + 60_000);
      expect(await refusal(withdrawal(user, '100.00'))).toMatchObject({
        code: 'DAILY_LIMIT_EXCEEDED',
        detail: expect.stringContaining('50.00 PHP left today'),
      });
    } finally {
      vi.useRealTimers();
    }
  });

  it('counts a batch’s items toward the day, not toward the minute: a batch is one request', async () => {
    const user = newUser();
    await credit(user, '1000.00');
    const roomy: FundingLimits = { ...strict, userDailyCount: 10, userDailyAmount: 1_000_000n };
    const records = { database, cipher, ledger, limits: roomy };
    const batchFundings = createFundingRecord(records);
    const batchRecord = createBatchRecord({
      database,
      fundings: batchFundings,
      batchItems: createBatchItemsRecord(records),
      limits: roomy,
    });
    const batchId = randomUUID();
    const items: NewBatchItem[] = Array.from({ length: 5 }, (_, index) => {
      const idempotencyKey = `batch:${batchId}:i-${index}`;
      return {
        id: randomUUID(),
        idempotencyKey,
        workflowId: `funding-${idempotencyKey}`,
        reference: `i-${index}`,
        recipient: { type: 'TOKEN', linkId: randomUUID() },
        amount: 10_000n,
      };
    });
    expect(
      await batchRecord.insert({
        id: batchId,
        idempotencyKey: `limits-${batchId}`,
        requestFingerprint: '0'.repeat(64),
        workflowId: `funding-batch-${batchId}`,
        name: 'limits',
        currency: 'PHP',
        items: batchItemRows(items),
        createdBy: 'ops',
        approvalThreshold: 0n,
        source: { type: 'USER_BALANCE', partnerUserId: user },
      }),
    ).toEqual({ stored: true, needsApproval: true });
    // Five items within the minute, and the user's own funding (per minute: 2) is still let through.
    expect(await batchFundings.insert(withdrawal(user, '1.00'))).toBe(true);
  });

  it('counts one user’s concurrent requests one after the other (no race past the count)', async () => {
    const user = newUser();
    await credit(user, '1000.00');
    const results = await Promise.allSettled(
      Array.from({ length: 10 }, () => limited.insert(withdrawal(user, '1.00'))),
    );
    expect(results.filter((result) => result.status === 'fulfilled')).toHaveLength(2);
    expect(await database.funding.count({ where: { sourcePartnerUserId: user } })).toBe(2);
  });
});

describe('adjustments and payments', () => {
  it('adjusts once per key; another body with the key is refused; a debit below available is refused', async () => {
    const user = newUser();
    const input = {
      idempotencyKey: `adj-${randomUUID()}`,
      account: `USER:${user}`,
      currency: 'PHP',
      amount: 25_000n,
      reason: 'goodwill',
      fingerprint: 'a'.repeat(64),
    };
    const first = await ledger.adjust(database, input);
    const again = await ledger.adjust(database, input);
    expect(first).toMatchObject({
      kind: 'created',
      adjustment: { account: `USER:${user}`, counterAccount: 'TREASURY', amount: { value: '25.00' } },
    });
    expect(again).toMatchObject({
      kind: 'existing',
      adjustment: { adjustmentId: first.kind === 'key-reused' ? '' : first.adjustment.adjustmentId },
    });
    expect(await ledger.adjust(database, { ...input, amount: 26_000n, fingerprint: 'b'.repeat(64) })).toEqual({
      kind: 'key-reused',
    });
    expect(await account(`USER:${user}`)).toMatchObject({ balance: { value: '25.00' } });
    await expect(
      ledger.adjust(database, { ...input, idempotencyKey: `adj-${randomUUID()}`, amount: -25_010n }),
    ).rejects.toBeInstanceOf(InsufficientFundsError);
    expect(
      (await ledger.adjust(database, { ...input, idempotencyKey: `adj-${randomUUID()}`, amount: -25_000n })).kind,
    ).toBe('created');
    expect(await account(`USER:${user}`)).toMatchObject({ balance: { value: '0.00' } });
  });

  it('a DEPOSIT credits the link’s user and a PURCHASE lands in MERCHANT_REVENUE, once', async () => {
    const user = newUser();
    const link = await database.link.create({
      data: { partnerUserId: user, profileId: randomUUID(), kind: 'EMBEDDED', scopes: [] },
    });
    const pay = async (purpose: 'DEPOSIT' | 'PURCHASE') => {
      const id = randomUUID();
      await payments.insert({
        id,
        idempotencyKey: `p-${id}`,
        requestFingerprint: '0'.repeat(64),
        workflowId: `pw-${id}`,
        linkId: link.id,
        amount: moneyOf({ currency: 'PHP', value: '12.00' }),
        purpose,
      });
      await payments.markCreating(id);
      await payments.beginExecute(id, null);
      await payments.finish(id, { status: 'SUCCEEDED', code: null, requestReferenceNo: null });
      await payments.finish(id, { status: 'SUCCEEDED', code: null, requestReferenceNo: null });
      return id;
    };
    const revenueBefore = (await account('MERCHANT_REVENUE')).balance.value;
    const deposit = await pay('DEPOSIT');
    const purchase = await pay('PURCHASE');
    expect(await account(`USER:${user}`)).toMatchObject({ balance: { value: '12.00' }, available: { value: '12.00' } });
    expect(await database.ledgerTransaction.count({ where: { paymentId: { in: [deposit, purchase] } } })).toBe(2);
    expect(Number((await account('MERCHANT_REVENUE')).balance.value) - Number(revenueBefore)).toBeGreaterThanOrEqual(
      12,
    );
  });
});

describe('many holds at once (a batch of items)', () => {
  it('moves each account once per statement, however many entries it writes: 2,000 holds update two account rows once each', async () => {
    const partnerUserId = newUser();
    await credit(partnerUserId, '5000.00');
    const holds = Array.from({ length: 2000 }, () => ({ fundingId: randomUUID(), amount: 1000n }));
    const updates = await database.$transaction(
      async (tx) => {
        // The connection's counts not yet flushed (this transaction's and its latest ones'): the
        // difference is what holdMany did. One UPDATE per entry would be 4,000 here, and each would
        // walk the versions the earlier ones left (a 40,000-item batch took 138 s to store).
        const updated = async () =>
          Number(
            (
              await tx.$queryRaw<
                Array<{ n_tup_upd: bigint }>
              >`SELECT n_tup_upd FROM pg_stat_xact_user_tables WHERE relname = 'ledger_account'`
            )[0]?.n_tup_upd ?? 0n,
          );
        const before = await updated();
        await ledger.holdMany(tx, { source: { type: 'USER_BALANCE', partnerUserId }, currency: 'PHP', holds });
        return (await updated()) - before;
      },
      { timeout: 60_000 },
    );
    expect(updates).toBe(2);
    const user = await account(`USER:${partnerUserId}`);
    expect(user.available.value).toBe('3000.00');
    expect((await checkLedgerInvariants(database)).violations).toEqual([]);
    // Released together: the user's available is whole again, the accounts moved once more each.
    const released = await database.$transaction(
      (tx) =>
        ledger.releaseMany(
          tx,
          holds.map((hold) => hold.fundingId),
        ),
      { timeout: 60_000 },
    );
    expect(released).toBe(2000);
    expect((await account(`USER:${partnerUserId}`)).available.value).toBe('5000.00');
  });

  it('settles many holds in one statement as one by one: posted to WALLET_CLEARING or released, once each', async () => {
    const partnerUserId = newUser();
    await credit(partnerUserId, '100.00');
    const holds = Array.from({ length: 6 }, () => ({ fundingId: randomUUID(), amount: 10_000n }));
    await database.$transaction((tx) =>
      ledger.holdMany(tx, { source: { type: 'USER_BALANCE', partnerUserId }, currency: 'PHP', holds }),
    );
    const clearingBefore = await account('WALLET_CLEARING');
    const settlements = holds.map((hold, index) => ({
      fundingId: hold.fundingId,
      outcome: index % 2 === 0 ? ('post' as const) : ('release' as const),
    }));
    expect(await database.$transaction((tx) => ledger.settleMany(tx, settlements))).toBe(6);
    // Again: every hold is settled already, nothing is written.
    expect(await database.$transaction((tx) => ledger.settleMany(tx, settlements))).toBe(0);
    const user = await account(`USER:${partnerUserId}`);
    expect(user.balance.value).toBe('70.00');
    expect(user.available.value).toBe('70.00');
    const clearing = await account('WALLET_CLEARING');
    expect(Number(clearing.balance.value) - Number(clearingBefore.balance.value)).toBe(30);
    expect((await checkLedgerInvariants(database)).violations).toEqual([]);
  });
});

describe('the database keeps the rules', () => {
  it('checks a statement’s entries sum to zero before it moves (and locks) the accounts they name', async () => {
    // Triggers of one event fire in the order of their names: the check reads the statement's
    // entries (200,000 for a 100,000-item batch's holds) while no account row is locked yet.
    const triggers = await database.$queryRaw<Array<{ name: string }>>`
      SELECT t.tgname AS name FROM pg_trigger t
      WHERE t.tgrelid = 'ledger_entry'::regclass AND NOT t.tgisinternal
        AND (t.tgtype & 4) <> 0 AND (t.tgtype & 1) = 0 AND (t.tgtype & 2) = 0
      ORDER BY t.tgname`;
    expect(triggers.map((trigger) => trigger.name)).toEqual(['ledger_entry_1_balanced', 'ledger_entry_apply']);
  });

  it('refuses an unbalanced transaction, a changed or deleted entry, and a balance written by hand', async () => {
    const user = newUser();
    await credit(user, '10.00');
    await expect(
      database.$transaction((tx) =>
        ledger.post(tx, {
          reference: `bad-${randomUUID()}`,
          kind: 'ADJUSTMENT',
          currency: 'PHP',
          legs: [{ account: 'CAPITAL', amount: 1_000n }],
        }),
      ),
    ).rejects.toThrow(/sum to zero/);
    await expect(
      database.$executeRaw`UPDATE ledger_entry SET amount = amount + 1 WHERE account = ${`USER:${user}`}`,
    ).rejects.toThrow(/append-only/);
    await expect(database.$executeRaw`DELETE FROM ledger_entry WHERE account = ${`USER:${user}`}`).rejects.toThrow(
      /append-only/,
    );
    await expect(
      database.$executeRaw`UPDATE ledger_account SET balance = 1000000 WHERE account = ${`USER:${user}`}`,
    ).rejects.toThrow(/only through ledger entries/);
    expect(await account(`USER:${user}`)).toMatchObject({ balance: { value: '10.00' } });
  });

  it('refuses entries on an account that does not exist, and a change of an account’s key (checked per statement, not by a foreign key)', async () => {
    const ghost = `USER:${newUser()}`;
    await expect(
      database.$transaction(async (tx) => {
        const [row] = await tx.$queryRaw<
          Array<{ id: bigint }>
        >`INSERT INTO ledger_transaction (reference, kind, currency) VALUES (${`ghost-${randomUUID()}`}, 'ADJUSTMENT', 'PHP') RETURNING id`;
        await tx.$executeRaw`INSERT INTO ledger_entry (transaction_id, account, currency, amount) VALUES (${row!.id}, ${ghost}, 'PHP', 1), (${row!.id}, 'CAPITAL', 'PHP', -1)`;
      }),
    ).rejects.toThrow(/does not exist/);
    const user = newUser();
    await credit(user, '1.00');
    await expect(
      database.$executeRaw`UPDATE ledger_account SET account = ${`USER:${newUser()}`} WHERE account = ${`USER:${user}`}`,
    ).rejects.toThrow(/key never changes/);
    expect(await account(`USER:${user}`)).toMatchObject({ balance: { value: '1.00' } });
  });

  it('refuses a TRUNCATE of each ledger table (append-only; no foreign key refuses it any more)', async () => {
    for (const table of ['ledger_transaction', 'ledger_entry', 'ledger_account']) {
      // In a transaction rolled back whatever happens: a TRUNCATE that went through is undone.
      const outcome = await database
        .$transaction(async (tx) => {
          await tx.$executeRawUnsafe(`TRUNCATE ${table} CASCADE`);
          throw new Error('truncated');
        })
        .then(
          () => 'committed',
          (error: unknown) => (error as Error).message,
        );
      expect(outcome, table).toMatch(new RegExp(`${table} is append-only: it is never truncated`));
    }
    expect(await database.ledgerEntry.count()).toBeGreaterThan(0);
  });

  it('refuses entries of a transaction that does not exist and a settlement of a hold that does not exist, checked per statement, without locking the rows they name (no foreign key)', async () => {
    await ledger.ensureAccounts(database, ['CAPITAL', 'TREASURY'], 'PHP');
    const missing = (
      await database.$queryRaw<
        Array<{ missing: bigint }>
      >`SELECT COALESCE(MAX(id), 0) + 1000000 AS missing FROM ledger_transaction`
    )[0]!.missing;
    await expect(
      database.$executeRaw`INSERT INTO ledger_entry (transaction_id, account, currency, amount) VALUES (${missing}, 'TREASURY', 'PHP', 1), (${missing}, 'CAPITAL', 'PHP', -1)`,
    ).rejects.toThrow(/name transaction \d+, which does not exist/);
    await expect(
      database.$executeRaw`INSERT INTO ledger_transaction (reference, kind, currency, settles_id) VALUES (${`orphan-${randomUUID()}`}, 'RELEASE', 'PHP', ${missing})`,
    ).rejects.toThrow(/settles transaction \d+, which does not exist/);
    // No foreign key is left on either: a check per row locked each transaction it named (FOR KEY SHARE).
    const foreignKeys = await database.$queryRaw<Array<{ name: string }>>`
      SELECT conname AS name FROM pg_constraint WHERE contype = 'f' AND conrelid IN ('ledger_entry'::regclass, 'ledger_transaction'::regclass)`;
    expect(foreignKeys).toEqual([]);
    // A transaction and its entries written in one statement (as a batch's holds are) pass.
    const reference = `one-statement-${randomUUID()}`;
    await database.$executeRaw`
      WITH t AS (INSERT INTO ledger_transaction (reference, kind, currency) VALUES (${reference}, 'ADJUSTMENT', 'PHP') RETURNING id)
      INSERT INTO ledger_entry (transaction_id, account, currency, amount) SELECT t.id, a.account, 'PHP', a.amount FROM t, (VALUES ('CAPITAL', -1), ('TREASURY', 1)) AS a(account, amount)`;
    expect(
      await database.ledgerEntry.count({
        where: { transactionId: (await database.ledgerTransaction.findUniqueOrThrow({ where: { reference } })).id },
      }),
    ).toBe(2);
  });

  it('refuses an unbalanced transaction at the end of the statement that writes it, one entry or many rows at once (checked per statement, not per entry at commit)', async () => {
    await ledger.ensureAccounts(database, ['CAPITAL', 'TREASURY'], 'PHP');
    const newTransaction = async (tx: Prisma.TransactionClient) =>
      (
        await tx.$queryRaw<
          Array<{ id: bigint }>
        >`INSERT INTO ledger_transaction (reference, kind, currency) VALUES (${`zero-sum-${randomUUID()}`}, 'ADJUSTMENT', 'PHP') RETURNING id`
      )[0]!.id;
    const entriesOf = (ids: bigint[]) => database.ledgerEntry.count({ where: { transactionId: { in: ids } } });
    /**
     * Runs `write` in a transaction: whether its own statement was refused, and the error the whole transaction ended
     * with.
     */
    async function attempt(
      write: (tx: Prisma.TransactionClient, ids: bigint[]) => Promise<unknown>,
    ): Promise<{ statementRefused: string | null; ids: bigint[]; error: unknown }> {
      const ids: bigint[] = [];
      let statementRefused: string | null = null;
      let error: unknown = null;
      try {
        await database.$transaction(async (tx) => {
          ids.push(await newTransaction(tx), await newTransaction(tx));
          try {
            await write(tx, ids);
          } catch (refusal) {
            statementRefused = (refusal as Error).message;
            throw refusal;
          }
        });
      } catch (failure) {
        error = failure;
      }
      return { statementRefused, ids, error };
    }

    // One entry alone.
    const single = await attempt(
      (tx, [id]) =>
        tx.$executeRaw`INSERT INTO ledger_entry (transaction_id, account, currency, amount) VALUES (${id}, 'CAPITAL', 'PHP', 1)`,
    );
    expect(single.statementRefused).toMatch(/sum to zero/);
    expect(await entriesOf(single.ids)).toBe(0);

    // Many rows in one statement: the first transaction balanced, the second not.
    const many = await attempt(
      (
        tx,
        [first, second],
      ) => tx.$executeRaw`INSERT INTO ledger_entry (transaction_id, account, currency, amount, pending)
        VALUES (${first}, 'CAPITAL', 'PHP', -5, false), (${first}, 'TREASURY', 'PHP', 5, false), (${second}, 'CAPITAL', 'PHP', -5, false), (${second}, 'TREASURY', 'PHP', 4, false)`,
    );
    expect(many.statementRefused).toMatch(/sum to zero/);
    expect(await entriesOf(many.ids)).toBe(0);

    // Posted and pending each sum to zero: +1 posted against -1 pending is refused.
    const mixed = await attempt(
      (tx, [id]) =>
        tx.$executeRaw`INSERT INTO ledger_entry (transaction_id, account, currency, amount, pending) VALUES (${id}, 'CAPITAL', 'PHP', 1, false), (${id}, 'TREASURY', 'PHP', -1, true)`,
    );
    expect(mixed.statementRefused).toMatch(/sum to zero/);

    // A statement that leaves a transaction unbalanced is refused even if a later one would balance it.
    const split = await attempt(async (tx, [id]) => {
      await tx.$executeRaw`INSERT INTO ledger_entry (transaction_id, account, currency, amount) VALUES (${id}, 'CAPITAL', 'PHP', -2)`;
      await tx.$executeRaw`INSERT INTO ledger_entry (transaction_id, account, currency, amount) VALUES (${id}, 'TREASURY', 'PHP', 2)`;
    });
    expect(split.statementRefused).toMatch(/sum to zero/);
    expect(await entriesOf(split.ids)).toBe(0);

    // Balanced, in one statement or in two balanced ones, many transactions at once: stored.
    const balanced = await attempt(async (tx, [first, second]) => {
      await tx.$executeRaw`INSERT INTO ledger_entry (transaction_id, account, currency, amount, pending)
        VALUES (${first}, 'CAPITAL', 'PHP', -3, false), (${first}, 'TREASURY', 'PHP', 3, false), (${second}, 'CAPITAL', 'PHP', -1, false), (${second}, 'TREASURY', 'PHP', 1, false)`;
      await tx.$executeRaw`INSERT INTO ledger_entry (transaction_id, account, currency, amount) VALUES (${first}, 'TREASURY', 'PHP', -3), (${first}, 'CAPITAL', 'PHP', 3)`;
    });
    expect(balanced.error).toBeNull();
    expect(balanced.statementRefused).toBeNull();
    expect(await entriesOf(balanced.ids)).toBe(6);
    expect((await checkLedgerInvariants(database)).violations).toEqual([]);
  });

  it('keeps every invariant the soak checks', async () => {
    const report = await checkLedgerInvariants(database);
    expect(report.violations).toEqual([]);
  });
});
