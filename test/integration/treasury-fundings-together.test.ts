// Treasury fundings accepted together are stored together (fundings/treasury-fundings-record.ts,
// docs/fundings.md Accepted together), on a real PostgreSQL: a burst is stored in a few
// transactions, not one each, every funding with its first event and one hold; a key repeated
// within a group stores one funding; a treasury limit that covers only part of a burst stores
// exactly what it covers and refuses the rest with InsufficientFundsError, one by one; a member
// whose row the database refuses leaves the others stored; a group the admission gate refuses is
// every member's 503, nothing stored; an amount outside the limits is refused as the funding
// record refuses it.
import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { moneyOf } from '../../domain/money.ts';
import { createFundingRecord, type NewFunding } from '../../fundings/funding-record.ts';
import { newFundingRow } from '../support/new-funding-row.ts';
import { createTreasuryFundingsRecord, STORED_TOGETHER_MAX } from '../../fundings/treasury-fundings-record.ts';
import { checkLedgerInvariants } from '../../harness/ledger-invariants.ts';
import { Overloaded } from '../../lib/admission.ts';
import { createApiDatabase, createDatabase, type Database } from '../../lib/database.ts';
import { createTokenCipher } from '../../lib/token-cipher.ts';
import { createLedger, holdReference, InsufficientFundsError } from '../../ledger/ledger.ts';
import { defaultFundingLimits, LimitRefusal } from '../../ledger/limits.ts';
import { testDatabaseUrl } from '../support/test-database.ts';

const database = createDatabase(testDatabaseUrl(), { maxConnections: 10 });
afterAll(() => database.$disconnect());
const cipher = createTokenCipher(randomBytes(32));

function recordsWith(
  options: { treasuryLimit?: bigint; limits?: typeof defaultFundingLimits; database?: Database } = {},
) {
  const ledger = createLedger({ treasuryLimit: options.treasuryLimit ?? null });
  const limits = options.limits ? { limits: options.limits } : {};
  const on = options.database ?? database;
  const record = createFundingRecord({ database: on, cipher, ledger, ...limits });
  const treasury = createTreasuryFundingsRecord({
    database: on,
    cipher,
    ledger,
    ...limits,
    insertAlone: record.insert,
  });
  return { ledger, record, treasury };
}

function treasuryFunding(currency: string, value: string, over: Partial<NewFunding> = {}): NewFunding {
  const id = randomUUID();
  // `over` last: an id given there clashes with another row's while the keys stay this funding's own.
  return {
    ...newFundingRow('together', {
      id,
      recipient:
        id.charCodeAt(0) % 2 === 0 ? { type: 'TOKEN', linkId: randomUUID() } : { type: 'CODE', code: '1234567' },
      amount: moneyOf({ currency, value }),
    }),
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
    events: events.reduce((sum, event) => sum + event._count, 0),
    eventsEach: [...new Set(events.map((event) => event._count))],
  };
}

describe('treasury fundings accepted together', () => {
  it('a burst of 200 is stored in 5 transactions (one alone, then groups of 64), each funding with one event and one hold', async () => {
    const { treasury, record } = recordsWith();
    const burst = Array.from({ length: 200 }, () => treasuryFunding('PHP', '2.50'));
    const answers = await Promise.all(burst.map((funding) => treasury.insert(funding)));
    expect(answers).toEqual(burst.map(() => true));
    expect(STORED_TOGETHER_MAX).toBe(64);
    const ids = burst.map((funding) => funding.id);
    expect(await storedShape(ids)).toEqual({
      transactions: 1 + Math.ceil(199 / 64),
      rows: 200,
      holds: 200,
      events: 200,
      eventsEach: [1],
    });
    // Each cash-in code is sealed to its own funding, as the funding record seals it.
    for (const coded of burst.filter((funding) => funding.recipient.type === 'CODE').slice(0, 5)) {
      const row = await database.funding.findUniqueOrThrow({ where: { id: coded.id } });
      expect(record.cashInCodeOf(row)).toBe('1234567');
      expect(row.cashInCodeMasked).toBe('*****67');
    }
    expect((await checkLedgerInvariants(database)).violations).toEqual([]);
  });

  it('a key repeated within one group stores one funding: one request is answered stored, the others not', async () => {
    const { treasury } = recordsWith();
    // The first request is stored alone; everything sent meanwhile waits for the next group, together.
    const opener = treasury.insert(treasuryFunding('PHP', '1.00'));
    const key = `together-repeated-${randomUUID()}`;
    const repeated = Array.from({ length: 10 }, () => treasuryFunding('PHP', '3.00', { idempotencyKey: key }));
    const others = Array.from({ length: 10 }, () => treasuryFunding('PHP', '3.00'));
    const answers = await Promise.all([...repeated, ...others].map((funding) => treasury.insert(funding)));
    expect(await opener).toBe(true);
    expect(answers.slice(0, 10).filter(Boolean)).toHaveLength(1);
    expect(answers.slice(10)).toEqual(others.map(() => true));
    const stored = await database.funding.findMany({ where: { idempotencyKey: key } });
    expect(stored).toHaveLength(1);
    expect(stored[0]!.id).toBe(repeated[answers.indexOf(true)]!.id);
    const shape = await storedShape([...repeated, ...others].map((funding) => funding.id));
    expect(shape).toEqual({ transactions: 1, rows: 11, holds: 11, events: 11, eventsEach: [1] });
  });

  it('a member whose row the database refuses sends its group one by one: the others are stored, it alone is refused', async () => {
    const { treasury } = recordsWith();
    const opener = treasury.insert(treasuryFunding('PHP', '1.00'));
    const group = Array.from({ length: 6 }, () => treasuryFunding('PHP', '4.00'));
    // Another key with the id of the group's first funding: its row breaks the primary key.
    const clash = treasuryFunding('PHP', '4.00', { id: group[0]!.id });
    const answers = await Promise.all(
      [...group, clash].map((funding) =>
        treasury.insert(funding).then(String, (error: Error) => `refused: ${error.message.slice(0, 40)}`),
      ),
    );
    expect(await opener).toBe(true);
    expect(answers.slice(1, 6)).toEqual(group.slice(1).map(() => 'true'));
    // The group's members are stored alone at once, so either of the two with one id is stored first, and the other is
    // the one refused (a full run stored the clash first).
    const pair = [answers[0]!, answers[6]!];
    expect(pair.filter((answer) => answer === 'true')).toHaveLength(1);
    expect(pair.filter((answer) => answer.startsWith('refused: '))).toHaveLength(1);
    const winner = answers[0] === 'true' ? group[0]! : clash;
    const loser = winner === clash ? group[0]! : clash;
    expect(await storedShape(group.map((funding) => funding.id))).toMatchObject({ rows: 6, holds: 6, events: 6 });
    expect((await database.funding.findUniqueOrThrow({ where: { id: clash.id } })).idempotencyKey).toBe(
      winner.idempotencyKey,
    );
    expect(await database.funding.count({ where: { idempotencyKey: loser.idempotencyKey } })).toBe(0);
    expect((await checkLedgerInvariants(database)).violations).toEqual([]);
  });

  it('a group the admission gate refuses is refused 503 OVERLOADED for every member, nothing stored', async () => {
    const { database: admitted } = createApiDatabase(testDatabaseUrl(), {
      maxConnections: 3,
      admission: { maxInFlight: 1, maxQueued: 0, maxWaitMs: 100 },
    });
    try {
      const { treasury } = recordsWith({ database: admitted });
      // The one slot is taken: the group's transaction finds no room in line.
      const busy = admitted.$transaction(async (tx) => tx.$executeRaw`SELECT pg_sleep(1)`);
      await new Promise((resolve) => setTimeout(resolve, 100));
      const burst = Array.from({ length: 5 }, () => treasuryFunding('PHP', '5.00'));
      const answers = await Promise.all(
        burst.map((funding) => treasury.insert(funding).then(String, (error: unknown) => error)),
      );
      for (const answer of answers) expect(answer).toBeInstanceOf(Overloaded);
      await busy;
      expect(await database.funding.count({ where: { id: { in: burst.map((funding) => funding.id) } } })).toBe(0);
    } finally {
      await admitted.$disconnect();
    }
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

  it('a treasury limit set when the treasury is already past it holds the treasury where it stands; money that comes back is not drawn again until within the limit', async () => {
    // Found by a read: the floor's UPDATE was refused by the ledger's CHECK (the treasury below the new floor), the
    // error only logged, and the treasury went on with no limit at all (or the looser one before), while the
    // account's view showed the configured floor as enforced. Its second read found a floor set once where the
    // treasury stood letting money that came back be drawn again, past the limit.
    const currency = 'EUR';
    const unlimited = recordsWith();
    const drawn = treasuryFunding(currency, '10.00');
    const more = treasuryFunding(currency, '3.00');
    for (const funding of [drawn, more]) expect(await unlimited.record.insert(funding)).toBe(true);
    const { treasury, ledger } = recordsWith({ treasuryLimit: 5_000n });
    expect(await ledger.applyTreasuryLimit(database, currency)).toEqual({ floor: '-13.00', pastLimit: true });
    await expect(treasury.insert(treasuryFunding(currency, '0.01'))).rejects.toBeInstanceOf(InsufficientFundsError);
    const floor = async () => (await ledger.account(database, 'TREASURY', currency)).floor;
    expect(await floor()).toBe('-13.00');
    // 3.00 comes back (a funding ends FAILED, its hold released): still past the limit, nothing of it is drawn again.
    expect(await unlimited.record.cancel({ id: more.id, createdAt: new Date() }, 'treasury-limit-test')).toBe(true);
    expect(await floor()).toBe('-10.00');
    await expect(treasury.insert(treasuryFunding(currency, '0.01'))).rejects.toBeInstanceOf(InsufficientFundsError);
    // The rest comes back: the floor rises to the limit's and no further.
    expect(await unlimited.record.cancel({ id: drawn.id, createdAt: new Date() }, 'treasury-limit-test')).toBe(true);
    expect(await floor()).toBe('-5.00');
    expect(await treasury.insert(treasuryFunding(currency, '5.00'))).toBe(true);
    await expect(treasury.insert(treasuryFunding(currency, '0.01'))).rejects.toBeInstanceOf(InsufficientFundsError);
    expect(await floor()).toBe('-5.00');
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
