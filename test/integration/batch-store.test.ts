// A batch's store and its end on a real PostgreSQL (contract-decisions section 14):
// a store that fails midway, in its items or at its holds, leaves nothing behind (no batch, no
// item, no event, no hold, no webhook, the source's balance as it was); a cancel of more items
// than one of its chunks ends every item not started, releases every hold once and counts each
// ended item once, whatever the order of the references.
import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import type { NewBatchItem } from '../../fundings/batch-items-record.ts';
import { checkLedgerInvariants } from '../../harness/ledger-invariants.ts';
import { InsufficientFundsError } from '../../ledger/ledger.ts';
import { createDatabase } from '../../lib/database.ts';
import { batchRecordsOn } from '../support/batch-records.ts';
import { testDatabaseUrl } from '../support/test-database.ts';

const database = createDatabase(testDatabaseUrl(), { maxConnections: 10 });
afterAll(() => database.$disconnect());

const finished: Date[] = [];
const { ledger, batches, credit, insertBatch } = batchRecordsOn(database, {
  fundingFinished: (_status, createdAt) => finished.push(createdAt),
});

/** `count` CODE items of 1.00 (0.001 PHP is 1n), references from `reference`. */
function itemsOf(batchId: string, count: number, reference: (index: number) => string): NewBatchItem[] {
  return Array.from({ length: count }, (_, index) => {
    const idempotencyKey = `batch:${batchId}:${reference(index)}`;
    return {
      id: randomUUID(),
      idempotencyKey,
      workflowId: `funding-${idempotencyKey}`,
      reference: reference(index),
      recipient: { type: 'CODE', code: String(1_000_000 + index).slice(0, 7) },
      amount: 1000n,
    };
  });
}

const store = (batchId: string, partnerUserId: string, items: NewBatchItem[]) =>
  insertBatch(batchId, partnerUserId, items, 0n);

/** Everything a batch's store writes, counted. */
async function leftBehind(batchId: string, items: NewBatchItem[]) {
  const ids = items.map((item) => item.id);
  return {
    batches: await database.fundingBatch.count({ where: { id: batchId } }),
    items: await database.funding.count({ where: { OR: [{ batchId }, { id: { in: ids } }] } }),
    events: await database.fundingEvent.count({ where: { fundingId: { in: ids } } }),
    ledgerTransactions: await database.ledgerTransaction.count({ where: { fundingId: { in: ids } } }),
    webhooks: await database.webhookEvent.count({ where: { fundingId: { in: ids } } }),
  };
}

const nothing = { batches: 0, items: 0, events: 0, ledgerTransactions: 0, webhooks: 0 };

describe('a failed store leaves nothing behind', () => {
  it('an item refused by the database midway (the 2,500th of 5,000, in the third statement of rows): no batch, no item, no event, no hold; the source as it was', async () => {
    const partnerUserId = `store-fails-${randomUUID()}`;
    await credit(partnerUserId, 100_000_000n);
    const batchId = randomUUID();
    const poison = `poison-${randomUUID().slice(0, 8)}`;
    const items = itemsOf(batchId, 5000, (index) => (index === 2499 ? poison : `item-${index}`));
    // A trigger of this test's own that refuses the one row (its reference is unique to this run).
    const trigger = `store_fails_${randomUUID().replaceAll('-', '')}`;
    await database.$executeRawUnsafe(
      `CREATE FUNCTION ${trigger}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'refused for the test: %', NEW.batch_reference; END; $$`,
    );
    await database.$executeRawUnsafe(
      `CREATE TRIGGER ${trigger} BEFORE INSERT ON funding FOR EACH ROW WHEN (NEW.batch_reference = '${poison}') EXECUTE FUNCTION ${trigger}()`,
    );
    try {
      const before = await ledger.account(database, `USER:${partnerUserId}`);
      await expect(store(batchId, partnerUserId, items)).rejects.toThrow(/refused for the test/);
      expect(await leftBehind(batchId, items)).toEqual(nothing);
      expect(await ledger.account(database, `USER:${partnerUserId}`)).toEqual(before);
    } finally {
      await database.$executeRawUnsafe(`DROP TRIGGER ${trigger} ON funding`);
      await database.$executeRawUnsafe(`DROP FUNCTION ${trigger}()`);
    }
    expect((await checkLedgerInvariants(database)).violations).toEqual([]);
  });

  it('the holds refused at the end (the source covers 4,999 of 5,000 items): InsufficientFundsError, and nothing stored', async () => {
    const partnerUserId = `store-short-${randomUUID()}`;
    await credit(partnerUserId, 4999n * 1000n);
    const batchId = randomUUID();
    const items = itemsOf(batchId, 5000, (index) => `item-${index}`);
    const before = await ledger.account(database, `USER:${partnerUserId}`);
    await expect(store(batchId, partnerUserId, items)).rejects.toBeInstanceOf(InsufficientFundsError);
    expect(await leftBehind(batchId, items)).toEqual(nothing);
    expect(await ledger.account(database, `USER:${partnerUserId}`)).toEqual(before);
    expect((await checkLedgerInvariants(database)).violations).toEqual([]);
  });
});

describe('a batch cancelled', () => {
  it('ends every item not started across several chunks (4,500 items, references in mixed case, - and _), releases each hold once and counts each item once', async () => {
    const partnerUserId = `store-cancel-${randomUUID()}`;
    await credit(partnerUserId, 10_000_000n);
    const batchId = randomUUID();
    // References whose order differs between collations (case, - and _), so the chunks' cursor must follow the
    // database's.
    const shapes = ['a-', 'A_', 'b', 'B-', '_c', '-C', 'z', 'Z_'];
    const items = itemsOf(batchId, 4500, (index) => `${shapes[index % shapes.length]}${index}`);
    expect(await store(batchId, partnerUserId, items)).toEqual({ stored: true, needsApproval: true });
    expect((await ledger.account(database, `USER:${partnerUserId}`)).available.value).toBe('5500.00');

    finished.length = 0;
    expect(await batches.move(batchId, 'CANCELLED', { field: 'cancelledBy', name: 'ops' })).toBe(true);
    expect(await database.funding.count({ where: { batchId, status: 'FAILED', errorCode: 'CANCELLED' } })).toBe(4500);
    expect(
      await database.fundingEvent.count({
        where: { fundingId: { in: items.map((item) => item.id) }, status: 'FAILED' },
      }),
    ).toBe(4500);
    expect(
      await database.webhookEvent.count({
        where: { fundingId: { in: items.map((item) => item.id) }, type: 'funding.failed' },
      }),
    ).toBe(4500);
    expect(
      await database.ledgerTransaction.count({
        where: { fundingId: { in: items.map((item) => item.id) }, kind: 'RELEASE' },
      }),
    ).toBe(4500);
    expect(finished).toHaveLength(4500);
    const account = await ledger.account(database, `USER:${partnerUserId}`);
    expect(account.available.value).toBe('10000.00');
    expect(account.balance.value).toBe('10000.00');
    // Ended once: a second cancel moves nothing and releases nothing.
    expect(await batches.move(batchId, 'CANCELLED', { field: 'cancelledBy', name: 'ops' })).toBe(false);
    expect(
      await database.ledgerTransaction.count({
        where: { fundingId: { in: items.map((item) => item.id) }, kind: 'RELEASE' },
      }),
    ).toBe(4500);
    expect((await checkLedgerInvariants(database)).violations).toEqual([]);
  }, 120_000);
});
