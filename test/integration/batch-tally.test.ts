// A batch's tally (funding_batch_tally), kept by the funding table's triggers, on a real
// PostgreSQL (the console's pages read a 100,000-item batch's progress from it instead
// of counting its items on every view): whatever writes the items (the store, claims, moves,
// heartbeats, a cancel, writers at once on the same batch, a write rolled back), the tally equals
// the items counted; and the home's totals of a day, which take a batch's items from its tally,
// equal the day's fundings counted one by one. On a database of its own: the tests move items with
// SQL of their own, as no record would (a final state with its hold left open), which the other
// files' ledger checks of their whole database would rightly refuse.
import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, inject, it } from 'vitest';
import type { NewBatchItem } from '../../fundings/batch-items-record.ts';
import { fundingTotalsOn } from '../../fundings/funding-totals.ts';
import { settlementDay } from '../../ledger/settlement.ts';
import { createDatabase, dropDatabase, ensureDatabaseExists } from '../../lib/database.ts';
import { applyMigrations } from '../../prisma/schema-engine.ts';
import { recordingDatabase } from '../../harness/query-plans.ts';
import { batchRecordsOn } from '../support/batch-records.ts';

const serverUrl = inject('databaseUrl');
const databaseName = `walletflow_tally_${process.pid}_${Date.now().toString(36)}`;
const databaseUrl = await ensureDatabaseExists(serverUrl, databaseName);
await applyMigrations(databaseUrl);
const database = createDatabase(databaseUrl, { maxConnections: 12 });
afterAll(async () => {
  await database.$disconnect();
  await dropDatabase(serverUrl, databaseName);
});

const { fundings, batches, claimed, credit, insertBatch } = batchRecordsOn(database);

/** `count` CODE items, the i-th of (i % 7 + 1).00. */
function itemsOf(batchId: string, count: number): NewBatchItem[] {
  return Array.from({ length: count }, (_, index) => {
    const idempotencyKey = `batch:${batchId}:item-${index}`;
    return {
      id: randomUUID(),
      idempotencyKey,
      workflowId: `funding-${idempotencyKey}`,
      reference: `item-${index}`,
      recipient: { type: 'CODE', code: String(1_000_000 + index).slice(0, 7) },
      amount: BigInt((index % 7) + 1) * 1000n,
    };
  });
}

async function storeBatch(count: number): Promise<{ batchId: string; items: NewBatchItem[] }> {
  const partnerUserId = `tally-${randomUUID()}`;
  await credit(partnerUserId, 10_000_000_000n);
  const batchId = randomUUID();
  const items = itemsOf(batchId, count);
  expect(await insertBatch(batchId, partnerUserId, items, null)).toEqual({ stored: true, needsApproval: false });
  return { batchId, items };
}

/** The batch's items counted one by one, as the tally names them (a cancelled item apart), amounts in thousandths. */
async function counted(batchId: string): Promise<Record<string, { count: number; amount: bigint }>> {
  const rows = await database.$queryRaw<Array<{ status: string; count: bigint; amount: string }>>`
    SELECT CASE WHEN status = 'FAILED' AND error_code = 'CANCELLED' THEN 'CANCELLED' ELSE status::text END AS status, COUNT(*)::bigint AS count, SUM(amount)::text AS amount
    FROM funding WHERE batch_id = ${batchId}::uuid GROUP BY 1`;
  return Object.fromEntries(
    rows.map((row) => [row.status, { count: Number(row.count), amount: BigInt(row.amount.replace('.', '')) }]),
  );
}

async function tallied(batchId: string): Promise<Record<string, { count: number; amount: bigint }>> {
  return Object.fromEntries(
    (await fundings.batchItemTally(batchId)).map((row) => [row.status, { count: row.count, amount: row.amount }]),
  );
}

/** Moves the items `ids` to `to` in one statement (as the records' set-based writes do). */
const moveItems = (ids: readonly string[], to: string, errorCode: string | null = null) =>
  database.$executeRaw`UPDATE funding SET status = ${to}::"FundingStatus", error_code = ${errorCode}, updated_at = now() WHERE id = ANY(${ids}::uuid[])`;

describe('a batch tally kept by the funding table', () => {
  it('the store, moves of one and of many, heartbeats, a rolled-back write and a cancel: the tally equals the items counted after each', async () => {
    const { batchId, items } = await storeBatch(2000);
    const ids = items.map((item) => item.id);
    expect(await tallied(batchId)).toEqual({ PENDING: { count: 2000, amount: 7_995_000n } });
    expect(await tallied(batchId)).toEqual(await counted(batchId));

    await moveItems(ids.slice(0, 600), 'CREATING');
    await moveItems(ids.slice(0, 400), 'EXECUTING');
    await moveItems(ids.slice(0, 300), 'APPROVED');
    await moveItems(ids.slice(300, 350), 'DECLINED', '6001');
    await moveItems(ids.slice(350, 360), 'NEEDS_REVIEW');
    await moveItems(ids.slice(360, 370), 'FAILED', 'EXECUTE_FAILED');
    // A heartbeat and a change of another column: no move of the tally.
    await database.$executeRaw`UPDATE funding SET owner_seen_at = now(), owner_fence = owner_fence + 1 WHERE batch_id = ${batchId}::uuid`;
    expect(await tallied(batchId)).toEqual(await counted(batchId));

    // A write rolled back leaves the tally as it was.
    const before = await tallied(batchId);
    await expect(
      database.$transaction(async (tx) => {
        await tx.$executeRaw`UPDATE funding SET status = 'APPROVED' WHERE id = ANY(${ids.slice(360, 400)}::uuid[])`;
        throw new Error('rolled back for the test');
      }),
    ).rejects.toThrow('rolled back for the test');
    expect(await tallied(batchId)).toEqual(before);

    // One row moved by Prisma's own update.
    await database.funding.update({ where: { id: ids[350]! }, data: { status: 'NEEDS_REVIEW', errorCode: null } });
    expect(await tallied(batchId)).toEqual(await counted(batchId));

    // The cancel ends the 1,400 not started: CANCELLED, not FAILED.
    expect(await batches.move(batchId, 'CANCELLED', { field: 'cancelledBy', name: 'ops' })).toBe(true);
    const after = await tallied(batchId);
    expect(after.CANCELLED?.count).toBe(1400);
    expect(after.PENDING).toBeUndefined();
    expect(after).toEqual(await counted(batchId));
    // The batch's view counts the same.
    const view = await batches.view((await batches.find(batchId))!);
    expect(view.counts).toEqual(Object.fromEntries(Object.entries(after).map(([status, row]) => [status, row.count])));
  }, 120_000);

  it('twelve writers at once on one batch, each moving its own items through every state in its own order: every write succeeds and the tally is exact', async () => {
    const { batchId, items } = await storeBatch(1200);
    const ids = items.map((item) => item.id);
    const paths = [
      ['CREATING', 'EXECUTING', 'APPROVED'],
      ['CREATING', 'EXECUTING', 'RECONCILING', 'DECLINED'],
      ['CREATING', 'NEEDS_REVIEW', 'FAILED'],
      ['CREATING', 'REJECTED'],
    ];
    const writers = Array.from({ length: 12 }, async (_, writer) => {
      const mine = ids.slice(writer * 100, writer * 100 + 100);
      const path = paths[writer % paths.length]!;
      let moves = 0;
      // Ten items per statement, two statements per transaction: each transaction touches several tally rows.
      for (let start = 0; start < mine.length; start += 20) {
        for (const to of path) {
          await database.$transaction(async (tx) => {
            await tx.$executeRaw`UPDATE funding SET status = ${to}::"FundingStatus", updated_at = now() WHERE id = ANY(${mine.slice(start, start + 10)}::uuid[])`;
            await tx.$executeRaw`UPDATE funding SET status = ${to}::"FundingStatus", updated_at = now() WHERE id = ANY(${mine.slice(start + 10, start + 20)}::uuid[])`;
          });
          moves += 1;
        }
      }
      return moves;
    });
    const results = await Promise.allSettled(writers);
    // Every transaction of every writer committed (no deadlock, no error).
    expect(results.map((result) => result.status)).toEqual(Array(12).fill('fulfilled'));
    expect(results.map((result) => (result as PromiseFulfilledResult<number>).value)).toEqual([
      15, 20, 15, 10, 15, 20, 15, 10, 15, 20, 15, 10,
    ]);
    const tally = await tallied(batchId);
    expect(tally).toEqual(await counted(batchId));
    expect(Object.fromEntries(Object.entries(tally).map(([status, row]) => [status, row.count]))).toEqual({
      APPROVED: 300,
      DECLINED: 300,
      FAILED: 300,
      REJECTED: 300,
    });
  }, 120_000);
});

describe('a TRUNCATE of the funding table', () => {
  it('a page of batches reads their tallies in one statement, each view as its own read gives it', async () => {
    const stored = await Promise.all([storeBatch(3), storeBatch(5), storeBatch(2)]);
    const recording = recordingDatabase(databaseUrl);
    try {
      const pageRecords = batchRecordsOn(recording.database);
      const rows = await Promise.all(stored.map(({ batchId }) => batches.find(batchId)));
      const page = rows.map((row) => row!);
      recording.statements.length = 0;
      const views = await pageRecords.batches.views(page);
      // Before: a statement per batch (a page of 200, 200 statements at once on a pool of 10).
      expect(recording.statements.filter((each) => each.text.includes('funding_batch_tally'))).toHaveLength(1);
      expect(views).toEqual(await Promise.all(page.map((row) => batches.view(row))));
      expect(views.map((view) => view.counts.PENDING)).toEqual([3, 5, 2]);
    } finally {
      await recording.close();
    }
  });

  it("empties the batches' tallies with it: none counts an item that is gone", async () => {
    const { batchId } = await storeBatch(50);
    expect(await tallied(batchId)).toEqual(await counted(batchId));
    // In a transaction rolled back: the table is this worker's database's, shared with its other tests.
    const seen = await database
      .$transaction(async (tx) => {
        await tx.$executeRawUnsafe('TRUNCATE funding CASCADE');
        const left = await tx.$queryRaw<
          Array<{ rows: bigint }>
        >`SELECT COUNT(*)::bigint AS rows FROM funding_batch_tally`;
        throw new Error(`tally rows left: ${left[0]!.rows}`);
      })
      .catch((error: unknown) => (error as Error).message);
    expect(seen).toBe('tally rows left: 0');
    expect(await tallied(batchId)).toEqual(await counted(batchId));
  });
});

describe('a batch cancelled while its chunks claim items', () => {
  it('the cancel (one long transaction) and chunks asking for the items it has not reached yet never wait for each other: every claim and the cancel succeed, no deadlock, no item started, the tally exact', async () => {
    // Before: the cancel's first chunk locked the batch's PENDING tally row until its commit; a
    // chunk that claimed items further on locked them, then waited for that row; the cancel then
    // reached those items and waited for the chunk: a deadlock, one of the two aborted.
    const { batchId, items } = await storeBatch(20_000);
    const ids = items.map((item) => item.id);
    const cancel = batches.move(batchId, 'CANCELLED', { field: 'cancelledBy', name: 'ops' });
    // Settled below; a failure before then is not an unhandled one.
    cancel.catch(() => undefined);
    let cancelOver = false;
    void cancel.finally(() => (cancelOver = true)).catch(() => undefined);
    // While the cancel walks the first references, chunks claim items from the last ones back.
    await new Promise((resolve) => setTimeout(resolve, 300));
    const claims = await Promise.allSettled(
      Array.from({ length: 8 }, (_, chunk) =>
        claimed.claimPendingItems(ids.slice(19_984 - chunk * 16, 20_000 - chunk * 16)),
      ),
    );
    // The claims answered while the cancel was still under way: none waited for it.
    expect(cancelOver).toBe(false);
    const cancelled = await Promise.allSettled([cancel]);
    expect(claims.map((claim) => (claim.status === 'rejected' ? String(claim.reason) : 'claimed'))).toEqual(
      Array(8).fill('claimed'),
    );
    expect(cancelled.map((result) => (result.status === 'rejected' ? String(result.reason) : result.value))).toEqual([
      true,
    ]);
    // The race ran: the chunks asked while the cancel was under way (it had not ended them all yet), and took none
    // (the cancel holds the batch's row: fundings/funding-record.ts batchRunning). Before: they took items the cancel
    // had not reached, which then started after the cancel was asked.
    const claimedCount = claims.reduce(
      (sum, claim) => sum + (claim.status === 'fulfilled' ? claim.value.length : 0),
      0,
    );
    expect(claimedCount).toBe(0);
    const tally = await tallied(batchId);
    expect(tally).toEqual(await counted(batchId));
    expect(tally.CANCELLED?.count ?? 0).toBe(20_000);
  }, 180_000);
});

describe("the home's totals of a day", () => {
  it('a batch stored that day (from its tally, a cancelled item as FAILED) and single fundings of that day, not those of the days around it: equal to the day counted one by one', async () => {
    const timeZone = 'Asia/Manila';
    // A day of its own far in the past: no other test writes there.
    const date = `2019-0${1 + Math.floor(Math.random() * 9)}-1${Math.floor(Math.random() * 9)}`;
    const day = settlementDay(date, timeZone);
    const { batchId, items } = await storeBatch(300);
    const ids = items.map((item) => item.id);
    await moveItems(ids.slice(0, 200), 'APPROVED');
    await moveItems(ids.slice(200, 220), 'FAILED', 'EXECUTE_FAILED');
    await moveItems(ids.slice(220, 250), 'FAILED', 'CANCELLED');
    const noon = `${date} 12:00:00`;
    await database.$executeRaw`UPDATE funding_batch SET created_at = (${noon}::timestamp AT TIME ZONE ${timeZone}) WHERE id = ${batchId}::uuid`;
    await database.$executeRaw`UPDATE funding SET created_at = (${noon}::timestamp AT TIME ZONE ${timeZone}) WHERE batch_id = ${batchId}::uuid`;
    // Single fundings: 5 that day (3 APPROVED, 2 FAILED), one the evening before and one the next morning (not
    // counted).
    const single = (at: string, status: string, amount: string, offsetSeconds = 0) => database.$executeRaw`
      INSERT INTO funding (id, idempotency_key, request_fingerprint, workflow_id, status, recipient_type, currency, amount, abandoned_transfer_ids, created_at, updated_at)
      VALUES (${randomUUID()}::uuid, ${`single-${randomUUID()}`}, ${'0'.repeat(64)}, ${`funding-${randomUUID()}`}, ${status}::"FundingStatus", 'CODE', 'PHP', ${amount}::numeric,
              ARRAY[]::text[], (${at}::timestamp AT TIME ZONE ${timeZone}) + make_interval(secs => ${offsetSeconds}), now())`;
    for (const at of ['00:00:00', '08:00:00', '23:59:59']) await single(`${date} ${at}`, 'APPROVED', '10.000');
    for (const at of ['09:00:00', '10:00:00']) await single(`${date} ${at}`, 'FAILED', '2.500');
    await single(`${date} 00:00:00`, 'APPROVED', '1000.000', -1);
    await single(`${date} 23:59:59`, 'APPROVED', '1000.000', 1);

    const oneByOne = await database.$queryRaw<
      Array<{ status: string; currency: string; count: bigint; amount: string }>
    >`
      SELECT status::text AS status, currency, COUNT(*)::bigint AS count, SUM(amount)::text AS amount FROM funding
      WHERE created_at >= (${date}::date::timestamp AT TIME ZONE ${timeZone})
        AND created_at < ((${date}::date + 1)::timestamp AT TIME ZONE ${timeZone})
      GROUP BY 1, 2 ORDER BY 1, 2`;
    const totals = await fundingTotalsOn(database, day);
    expect(totals).toEqual(
      oneByOne.map((row) => ({
        status: row.status,
        currency: row.currency,
        count: Number(row.count),
        amount: BigInt(row.amount.replace('.', '')),
      })),
    );
    // What that is: 200 + 3 APPROVED; 20 + 30 cancelled + 2 FAILED; 50 PENDING.
    expect(totals.map((total) => [total.status, total.count])).toEqual([
      ['APPROVED', 203],
      ['FAILED', 52],
      ['PENDING', 50],
    ]);
  });
});
