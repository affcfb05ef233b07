// Treasury fundings accepted together are stored together (fundings/treasury-fundings-record.ts,
// docs/fundings.md Accepted together), on a real PostgreSQL: a burst is stored in a few
// transactions, not one each, every funding with its first event and one hold; a key repeated in
// the burst stores one funding; a treasury limit that covers only part of a burst stores exactly
// what it covers and refuses the rest with InsufficientFundsError, one by one; an amount outside
// the limits is refused as the funding record refuses it.
import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { moneyOf } from '../../domain/money.ts';
import { createFundingRecord, type NewFunding } from '../../fundings/funding-record.ts';
import { createTreasuryFundingsRecord, STORED_TOGETHER_MAX } from '../../fundings/treasury-fundings-record.ts';
import { checkLedgerInvariants } from '../../harness/ledger-invariants.ts';
import { createDatabase } from '../../lib/database.ts';
import { createTokenCipher } from '../../lib/token-cipher.ts';
import { createLedger, holdReference, InsufficientFundsError } from '../../ledger/ledger.ts';
import { defaultFundingLimits, LimitRefusal } from '../../ledger/limits.ts';
import { testDatabaseUrl } from '../support/test-database.ts';

const database = createDatabase(testDatabaseUrl(), { maxConnections: 10 });
afterAll(() => database.$disconnect());
const cipher = createTokenCipher(randomBytes(32));

function recordsWith(options: { treasuryLimit?: bigint; limits?: typeof defaultFundingLimits } = {}) {
  const ledger = createLedger({ treasuryLimit: options.treasuryLimit ?? null });
  const limits = options.limits ? { limits: options.limits } : {};
  const record = createFundingRecord({ database, cipher, ledger, ...limits });
  const treasury = createTreasuryFundingsRecord({ database, cipher, ledger, ...limits, insertAlone: record.insert });
  return { ledger, record, treasury };
}

function treasuryFunding(currency: string, value: string, over: Partial<NewFunding> = {}): NewFunding {
  const id = randomUUID();
  return {
    id,
    idempotencyKey: `together-${id}`,
    requestFingerprint: '0'.repeat(64),
    workflowId: `funding-together-${id}`,
    recipient: id.charCodeAt(0) % 2 === 0 ? { type: 'TOKEN', linkId: randomUUID() } : { type: 'CODE', code: '1234567' },
    amount: moneyOf({ currency, value }),
    ...over,
  };
}

/** The transactions that stored these fundings (each row's xmin), the holds and first events they have. */
async function storedShape(ids: string[]) {
  const [row] = await database.$queryRaw<Array<{ transactions: bigint; rows: bigint }>>`
    SELECT count(DISTINCT xmin::text) AS transactions, count(*) AS rows FROM funding WHERE id = ANY(${ids}::uuid[])`;
  const holds = await database.ledgerTransaction.count({ where: { reference: { in: ids.map(holdReference) } } });
  const events = await database.fundingEvent.groupBy({
    by: ['fundingId'],
    where: { fundingId: { in: ids }, status: 'PENDING' },
    _count: true,
  });
  return {
    transactions: Number(row!.transactions),
    rows: Number(row!.rows),
    holds,
    eventsEach: [...new Set(events.map((event) => event._count))],
  };
}

describe('treasury fundings accepted together', () => {
  it('a burst of 200 is stored in 5 transactions (one alone, then groups of 64), each funding with one event and one hold', async () => {
    const { treasury } = recordsWith();
    const burst = Array.from({ length: 200 }, () => treasuryFunding('PHP', '2.50'));
    const answers = await Promise.all(burst.map((funding) => treasury.insert(funding)));
    expect(answers).toEqual(burst.map(() => true));
    expect(STORED_TOGETHER_MAX).toBe(64);
    expect(await storedShape(burst.map((funding) => funding.id))).toEqual({
      transactions: 1 + Math.ceil(199 / 64),
      rows: 200,
      holds: 200,
      eventsEach: [1],
    });
    // The cash-in codes are sealed to their own fundings, as the funding record seals them.
    const coded = burst.find((funding) => funding.recipient.type === 'CODE')!;
    const row = await database.funding.findUniqueOrThrow({ where: { id: coded.id } });
    expect(row.cashInCodeMasked).toBe('*****67');
    expect((await checkLedgerInvariants(database)).violations).toEqual([]);
  });

  it('a key repeated in a burst stores one funding: the first request is answered stored, the others not', async () => {
    const { treasury } = recordsWith();
    const key = `together-repeated-${randomUUID()}`;
    const repeated = Array.from({ length: 10 }, () => treasuryFunding('PHP', '3.00', { idempotencyKey: key }));
    const others = Array.from({ length: 10 }, () => treasuryFunding('PHP', '3.00'));
    const answers = await Promise.all([...repeated, ...others].map((funding) => treasury.insert(funding)));
    expect(answers.slice(0, 10)).toEqual([true, ...Array.from({ length: 9 }, () => false)]);
    expect(answers.slice(10)).toEqual(others.map(() => true));
    const stored = await database.funding.findMany({ where: { idempotencyKey: key } });
    expect(stored.map((funding) => funding.id)).toEqual([repeated[0]!.id]);
    expect(await storedShape([...repeated, ...others].map((funding) => funding.id))).toMatchObject({
      rows: 11,
      holds: 11,
      eventsEach: [1],
    });
  });

  it('a treasury limit that covers 12 of a burst of 40 stores exactly 12 and refuses 28 with InsufficientFundsError', async () => {
    // A currency of its own: a treasury with nothing drawn on it yet, its floor at -120.00.
    const currency = 'USD';
    const { treasury, ledger } = recordsWith({ treasuryLimit: 120_000n });
    await ledger.applyTreasuryLimit(database, currency);
    const burst = Array.from({ length: 40 }, () => treasuryFunding(currency, '10.00'));
    const answers = await Promise.all(
      burst.map((funding) =>
        treasury.insert(funding).then(
          (stored) => (stored ? 'stored' : 'key taken'),
          (error: unknown) => (error instanceof InsufficientFundsError ? 'insufficient' : `error: ${String(error)}`),
        ),
      ),
    );
    expect(answers.filter((answer) => answer === 'stored')).toHaveLength(12);
    expect(answers.filter((answer) => answer === 'insufficient')).toHaveLength(28);
    expect(await database.funding.count({ where: { currency } })).toBe(12);
    const account = await ledger.account(database, 'TREASURY', currency);
    expect(account.balance).toEqual({ currency, value: '0.00' });
    expect(account.available).toEqual({ currency, value: '-120.00' });
    expect((await checkLedgerInvariants(database, { currency })).violations).toEqual([]);
  });

  it('an amount outside the limits is refused as the funding record refuses it, nothing stored', async () => {
    const { treasury } = recordsWith({ limits: { ...defaultFundingLimits, min: 1_000n, max: 5_000n } });
    const tooLarge = treasuryFunding('PHP', '6.00');
    await expect(treasury.insert(tooLarge)).rejects.toBeInstanceOf(LimitRefusal);
    expect(await database.funding.count({ where: { id: tooLarge.id } })).toBe(0);
    expect(await treasury.insert(treasuryFunding('PHP', '4.00'))).toBe(true);
  });
});
