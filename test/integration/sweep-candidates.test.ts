// The sweep's pages cost what its candidates cost (fundings/funding-record.ts listUnfinished): a
// running batch's items waiting their turn are the batch's to start, and no page of the sweep
// reads them, however many there are. On a database of its own: a RUNNING batch of 20,000 waiting
// items, three fundings whose owner went quiet, and a waiting item of a batch that ended (never
// expected, still swept, through its batch's tally). Rows read are counted by EXPLAIN ANALYZE of the statements as
// sent: no
// wall-clock bound.
import { randomBytes, randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { unfinishedFundingStatuses } from '../../domain/funding.ts';
import { isFinalPaymentStatus, paymentStatuses, reviewStatus } from '../../domain/payment.ts';
import { createFundingRecord } from '../../fundings/funding-record.ts';
import { fundingsHoldingOn } from '../../fundings/funding-lookup.ts';
import { createPaymentRecord } from '../../payments/payment-record.ts';
import { indexBlocksRead, recordingDatabase, rowsExamined } from '../../harness/query-plans.ts';
import { dropDatabase, ensureDatabaseExists } from '../../lib/database.ts';
import { createTokenCipher } from '../../lib/token-cipher.ts';
import { applyMigrations } from '../../prisma/schema-engine.ts';

const serverUrl = inject('databaseUrl');
const databaseName = `walletflow_sweep_${process.pid}_${Date.now().toString(36)}`;
const WAITING = 20_000;
let client: pg.Client;
let recording: ReturnType<typeof recordingDatabase>;
const quiet: string[] = [];
let strayItem: string;

async function batch(state: string, items: number, status: string): Promise<string[]> {
  const batchId = randomUUID();
  await client.query({
    text: `INSERT INTO funding_batch (id, idempotency_key, request_fingerprint, workflow_id, name, state, currency, total_count, total_amount, created_by, updated_at)
           VALUES ($1::uuid, $1::text, $2, $1::text, 'sweep pages', $3::"FundingBatchState", 'PHP', $4::int, $4::int, 'ops', now())`,
    values: [batchId, '0'.repeat(64), state, items],
  });
  const { rows } = await client.query<{ id: string }>({
    text: `INSERT INTO funding (id, idempotency_key, request_fingerprint, workflow_id, status, recipient_type, cash_in_code_masked, currency, amount, batch_id, batch_reference, created_at, owner_seen_at, updated_at)
           SELECT gen_random_uuid(), $1::text || g, $2, 'w-' || $1::text || g, $3::"FundingStatus", 'CODE', '*****12', 'PHP', 1, $1::uuid, 'r' || g, now() - interval '2 hours', now() - interval '2 hours', now()
           FROM generate_series(1, $4::int) g RETURNING id::text`,
    values: [batchId, '0'.repeat(64), status, items],
  });
  return rows.map((row) => row.id);
}

/** The statuses a partial index's predicate lists (`status = ANY (ARRAY[…])`), as the database holds it. */
async function statusesOfIndex(name: string): Promise<string[]> {
  const { rows } = await client.query<{ indexdef: string }>({
    text: `SELECT indexdef FROM pg_indexes WHERE indexname = $1`,
    values: [name],
  });
  return [...(rows[0]?.indexdef.match(/status = ANY \(ARRAY\[(.*?)\]\)/)?.[1] ?? '').matchAll(/'([A-Z_]+)'/g)].map(
    (match) => match[1]!,
  );
}

beforeAll(async () => {
  const databaseUrl = await ensureDatabaseExists(serverUrl, databaseName);
  await applyMigrations(databaseUrl);
  client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  await batch('RUNNING', WAITING, 'PENDING');
  for (const status of ['CREATING', 'EXECUTING', 'RECONCILING']) {
    const id = randomUUID();
    await client.query({
      text: `INSERT INTO funding (id, idempotency_key, request_fingerprint, workflow_id, status, recipient_type, cash_in_code_masked, currency, amount, created_at, owner_seen_at, updated_at)
             VALUES ($1::uuid, $1::text, $2, $1::text, $3::"FundingStatus", 'CODE', '*****12', 'PHP', 1, now() - interval '1 hour', now() - interval '1 hour', now())`,
      values: [id, '0'.repeat(64), status],
    });
    quiet.push(id);
  }
  [strayItem] = (await batch('CANCELLED', 1, 'PENDING')) as [string];
  await client.query({ text: 'ANALYZE funding' });
  recording = recordingDatabase(databaseUrl);
}, 180_000);

afterAll(async () => {
  await recording?.close();
  await client?.end();
  await dropDatabase(serverUrl, databaseName);
});

describe('the sweep’s candidates', () => {
  it('are read a page at a time without reading a running batch’s waiting items', async () => {
    const fundings = createFundingRecord({ database: recording.database, cipher: createTokenCipher(randomBytes(32)) });
    const idleSince = new Date(Date.now() - 600_000);
    const seen: string[] = [];
    let after: { createdAt: Date; id: string } | undefined;
    for (;;) {
      recording.statements.length = 0;
      const page = await fundings.listUnfinished({ idleSince, limit: 1, ...(after ? { after } : {}) });
      for (const statement of recording.statements) {
        expect(
          await rowsExamined(client, statement, 'funding'),
          statement.text.replace(/\s+/g, ' ').slice(0, 200),
        ).toBeLessThan(50);
      }
      if (page.length === 0) break;
      seen.push(...page.map((row) => row.id));
      after = { createdAt: page.at(-1)!.createdAt, id: page.at(-1)!.id };
    }
    expect(seen.sort()).toEqual([...quiet].sort());
  });

  it('also reach a waiting item of a batch that ended (never expected: swept like a funding without its workflow)', async () => {
    const fundings = createFundingRecord({ database: recording.database, cipher: createTokenCipher(randomBytes(32)) });
    const stray = await fundings.listStrayBatchItems({ idleSince: new Date(Date.now() - 600_000), limit: 10 });
    expect(stray.map((row) => row.id)).toEqual([strayItem]);
  });

  it('are the statuses the partial index says: the funding statuses that are not final', async () => {
    const listed = await statusesOfIndex('funding_sweep_candidates_idx');
    expect(listed.sort()).toEqual([...unfinishedFundingStatuses].sort());
  });
});

describe('the sweep’s payments', () => {
  it('are read a page at a time through the payments in flight, whatever the statistics say: never the payment history', async () => {
    // Found by a read: the payments in flight were read by status through the (status, created_at, id) index, and the
    // planner, taking a status and a creation time for independent, could walk (created_at, id) instead and read the
    // whole history for a few in flight, every sweep. Here 30,000 payments in creation order, the newest 1,500 in
    // flight when the statistics were taken; since then all but 3 of them ended (too few changes for new statistics).
    const linkId = randomUUID();
    await client.query({
      text: `INSERT INTO payment (id, idempotency_key, request_fingerprint, workflow_id, status, link_id, currency, amount, created_at, updated_at)
             SELECT gen_random_uuid(), 'sweep-payment-' || g, $1, 'sweep-payment-' || g,
                    (CASE WHEN g > 28500 THEN 'EXECUTING' ELSE 'SUCCEEDED' END)::"PaymentStatus", $2::uuid, 'PHP', 1,
                    now() - interval '3 hours' + g * interval '100 milliseconds', now()
             FROM generate_series(1, 30000) g`,
      values: ['0'.repeat(64), linkId],
    });
    await client.query({ text: 'ANALYZE payment' });
    const { rows: inFlight } = await client.query<{ id: string }>({
      text: `SELECT id::text FROM payment WHERE idempotency_key IN ('sweep-payment-29998', 'sweep-payment-29999', 'sweep-payment-30000')`,
    });
    await client.query({
      text: `UPDATE payment SET status = 'SUCCEEDED' WHERE status = 'EXECUTING' AND NOT id = ANY($1::uuid[])`,
      values: [inFlight.map((row) => row.id)],
    });
    const payments = createPaymentRecord({ database: recording.database });
    const seen: string[] = [];
    let after: { createdAt: Date; id: string } | undefined;
    for (;;) {
      recording.statements.length = 0;
      const page = await payments.listUnfinished({
        createdBefore: new Date(Date.now() - 600_000),
        limit: 2,
        ...(after ? { after } : {}),
      });
      for (const statement of recording.statements) {
        expect(
          await rowsExamined(client, statement, 'payment'),
          statement.text.replace(/\s+/g, ' ').slice(0, 200),
        ).toBeLessThan(50);
      }
      if (page.length === 0) break;
      seen.push(...page.map((row) => row.id));
      after = { createdAt: page.at(-1)!.createdAt, id: page.at(-1)!.id };
    }
    expect(seen.sort()).toEqual(inFlight.map((row) => row.id).sort());
  });
});

describe('the sweep’s payments, by their statuses', () => {
  it('are the statuses the partial index says: the payment statuses neither final nor in review', async () => {
    const listed = await statusesOfIndex('payment_sweep_candidates_idx');
    const swept = paymentStatuses.filter((status) => !isFinalPaymentStatus(status) && status !== reviewStatus);
    expect(listed.sort()).toEqual([...swept].sort());
  });
});

describe('the fundings holding money on a source (the console’s account page)', () => {
  it('are read `limit` entries at a time, however many fundings ended since the statistics were taken', async () => {
    // Found by a read of the statements whose bound was the planner's choice: read by status, with statistics taken
    // while a large treasury batch waited, the planner walked (created_at, id) backwards through every funding newer
    // than the last one holding money. Here the statistics are taken with the running batch's 20,000 items waiting;
    // then 20,000 treasury fundings and 5,000 of a partner user's are stored and end, newer than any still holding.
    await client.query({ text: 'ANALYZE funding' });
    const partnerUserId = `holder-${randomUUID()}`;
    const holding: string[] = [];
    for (const status of ['CREATING', 'NEEDS_REVIEW', 'PENDING']) {
      const id = randomUUID();
      await client.query({
        text: `INSERT INTO funding (id, idempotency_key, request_fingerprint, workflow_id, status, recipient_type, cash_in_code_masked, currency, amount, source_partner_user_id, created_at, owner_seen_at, updated_at)
               VALUES ($1::uuid, $1::text, $2, $1::text, $3::"FundingStatus", 'CODE', '*****12', 'PHP', 1, $4, now() - interval '90 minutes', now(), now())`,
        values: [id, '0'.repeat(64), status, partnerUserId],
      });
      holding.push(id);
    }
    for (const [source, count] of [
      [null, 20_000],
      [partnerUserId, 5_000],
    ] as const) {
      await client.query({
        text: `INSERT INTO funding (id, idempotency_key, request_fingerprint, workflow_id, status, recipient_type, cash_in_code_masked, currency, amount, source_partner_user_id, created_at, owner_seen_at, updated_at)
               SELECT gen_random_uuid(), $1::text || g, $2, 'w-' || $1::text || g, 'APPROVED', 'CODE', '*****12', 'PHP', 1, $3, now() - interval '30 minutes' + g * interval '1 millisecond', now(), now()
               FROM generate_series(1, $4::int) g`,
        values: [`ended-${randomUUID()}-`, '0'.repeat(64), source, count],
      });
    }
    for (const [source, expected] of [
      [null, null],
      [partnerUserId, holding],
    ] as const) {
      recording.statements.length = 0;
      const hits = await fundingsHoldingOn(recording.database, source, 20);
      for (const statement of recording.statements) {
        expect(
          await rowsExamined(client, statement, 'funding'),
          `${source ?? 'TREASURY'}: ${statement.text.replace(/\s+/g, ' ').slice(0, 200)}`,
        ).toBeLessThanOrEqual(40);
      }
      if (expected) expect(hits.map((hit) => hit.fundingId).sort()).toEqual([...expected].sort());
      else {
        // The treasury's: the fundings in flight of the file (newest first), then the running batch's waiting items.
        expect(hits).toHaveLength(20);
        expect(hits.map((hit) => hit.status).every((status) => status !== 'APPROVED')).toBe(true);
      }
    }
  });

  it('are the statuses the partial index says, as the sweep’s candidates are', async () => {
    const listed = await statusesOfIndex('funding_holding_by_source_idx');
    expect(listed.sort()).toEqual([...unfinishedFundingStatuses].sort());
  });
});

describe('the FAILED fundings the sweep asks the wallet about again', () => {
  it('are read from the window even after a position kept before it: not through every FAILED funding between them', async () => {
    // Found by the second read of the settlement's first page: a round's window (since) slides on with each sweep once
    // its mark is older than the day it looks back, while the position it kept stays (a round held back by the
    // wallet's 429s, or sweeps stopped for a day). PostgreSQL begins the scan at the row comparison, so each sweep's
    // first page walked every FAILED funding between the position and the window.
    const kind = `failed-${randomUUID()}-`;
    await client.query({
      text: `INSERT INTO funding (id, idempotency_key, request_fingerprint, workflow_id, status, recipient_type, cash_in_code_masked, currency, amount, transfer_id, error_code, created_at, owner_seen_at, updated_at)
             SELECT gen_random_uuid(), $1::text || g, $2, 'w-' || $1::text || g, 'FAILED', 'CODE', '*****12', 'PHP', 1, 't-' || $1::text || g, 'EXECUTE_FAILED',
                    now() - interval '47 hours' + g * interval '4 seconds', now(), now() - interval '47 hours' + g * interval '4 seconds'
             FROM generate_series(1, $3::int) g`,
      values: [kind, '0'.repeat(64), 20_000],
    });
    // And FAILED fundings with no transfer in the window (a create refused, say), as where most failures have none.
    await client.query({
      text: `INSERT INTO funding (id, idempotency_key, request_fingerprint, workflow_id, status, recipient_type, cash_in_code_masked, currency, amount, error_code, created_at, owner_seen_at, updated_at)
             SELECT gen_random_uuid(), $1::text || g, $2, 'w-' || $1::text || g, 'FAILED', 'CODE', '*****12', 'PHP', 1, 'CODE_INVALID',
                    now(), now(), now() - interval '100 minutes' + g * interval '100 milliseconds'
             FROM generate_series(1, $3::int) g`,
      values: [`unsent-${randomUUID()}-`, '0'.repeat(64), 20_000],
    });
    const recent: string[] = [];
    for (let index = 0; index < 3; index += 1) {
      const id = randomUUID();
      await client.query({
        text: `INSERT INTO funding (id, idempotency_key, request_fingerprint, workflow_id, status, recipient_type, cash_in_code_masked, currency, amount, transfer_id, error_code, created_at, owner_seen_at, updated_at)
               VALUES ($1::uuid, $1::text, $2, $1::text, 'FAILED', 'CODE', '*****12', 'PHP', 1, 't-' || $1::text, 'EXECUTE_FAILED', now(), now(), now() - interval '30 minutes')`,
        values: [id, '0'.repeat(64)],
      });
      recent.push(id);
    }
    await client.query({ text: 'ANALYZE funding' });
    const fundings = createFundingRecord({
      database: recording.database,
      cipher: createTokenCipher(randomBytes(32)),
    });
    recording.statements.length = 0;
    const page = await fundings.listFailedWithTransfer({
      since: new Date(Date.now() - 2 * 3_600_000),
      after: { at: new Date(Date.now() - 48 * 3_600_000), id: randomUUID() },
      limit: 100,
    });
    expect(page.map((funding) => funding.id).sort()).toEqual([...recent].sort());
    const read = recording.statements.find((statement) => statement.text.includes("f.status = 'FAILED'"))!;
    // The page's rows, through the partial index from the window on. Before: the (status, updated_at) index, the
    // 20,000 FAILED fundings without a transfer read and dropped; and with sorting off alone, the partial index walked
    // from the position (100 blocks).
    expect(await rowsExamined(client, read, 'funding')).toBeLessThanOrEqual(3);
    const blocks = await indexBlocksRead(client, read, 'funding_failed_with_transfer_idx');
    expect(blocks).toBeGreaterThan(0);
    expect(blocks).toBeLessThanOrEqual(4);
    // A position kept inside the window goes on from it: the rows after it, none before it or at it.
    const ordered = (
      await client.query({
        text: 'SELECT id::text AS id, updated_at FROM funding WHERE id = ANY($1::uuid[]) ORDER BY updated_at, id',
        values: [recent],
      })
    ).rows as Array<{ id: string; updated_at: Date }>;
    const onward = await fundings.listFailedWithTransfer({
      since: new Date(Date.now() - 2 * 3_600_000),
      after: { at: ordered[0]!.updated_at, id: ordered[0]!.id },
      limit: 100,
    });
    expect(onward.map((funding) => funding.id)).toEqual(ordered.slice(1).map((row) => row.id));
  });
});
