// Flat with data (docs/benchmarks.md): on a database of its own with 20,000 fundings and 4,000
// payments of preloaded history (harness/bench-preload.ts), the preload keeps the ledger's
// invariants, and the statements behind POST /ops/fundings (idempotent insert, limits, hold), a
// funding's workflow steps (moves, settle), GET /ops/fundings and /ops/payments pages (by status,
// by cursor) and the sweep's recent-failures read are recorded as the real code sends them and
// EXPLAINed: none plans a sequential scan of a history table, and the list pages read the (status,
// created_at, id) index from their cursor. Plan node types only: no wall-clock bound.
import { randomBytes, randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createFundingRecord, type NewFunding } from '../../fundings/funding-record.ts';
import { preloadHistory, type PreloadSummary } from '../../harness/bench-preload.ts';
import { checkLedgerInvariants } from '../../harness/ledger-invariants.ts';
import {
  fullScans,
  indexBlocksRead,
  isPlannable,
  plannedScans,
  recordingDatabase,
  rowsExamined,
  type PlannedScan,
  type RecordedStatement,
} from '../../harness/query-plans.ts';
import { createDatabase, dropDatabase, ensureDatabaseExists } from '../../lib/database.ts';
import { createLedger } from '../../ledger/ledger.ts';
import { defaultFundingLimits } from '../../ledger/limits.ts';
import { userUsage } from '../../fundings/funding-usage.ts';
import { createTokenCipher } from '../../lib/token-cipher.ts';
import { createPaymentRecord } from '../../payments/payment-record.ts';
import { applyMigrations } from '../../prisma/schema-engine.ts';
import { latestFundingsOf, latestPaymentsOf } from '../../api/embedded/money-page.ts';
import { newFundingRow } from '../support/new-funding-row.ts';
import { batchRecordsOn, codeItems } from '../support/batch-records.ts';
import { executesOfTarget } from '../../reviews/execute-evidence.ts';
import { fundingsApprovedOn } from '../../fundings/fundings-approved-on.ts';
import { paymentsSucceededOn } from '../../payments/payments-succeeded-on.ts';
import { lastWholeDay, settlementDay } from '../../ledger/settlement.ts';

const serverUrl = inject('databaseUrl');
const databaseName = `walletflow_flat_${process.pid}_${Date.now().toString(36)}`;
let databaseUrl: string;
let summary: PreloadSummary;
let explainer: pg.Client;

beforeAll(async () => {
  // A database of its own: the history's NEEDS_REVIEW and RECONCILING fundings must not meet the
  // other tests' sweeps and gauges.
  databaseUrl = await ensureDatabaseExists(serverUrl, databaseName);
  await applyMigrations(databaseUrl);
  summary = await preloadHistory(databaseUrl, { fundings: 20_000, payments: 4_000, links: 200 });
  explainer = new pg.Client({ connectionString: databaseUrl });
  await explainer.connect();
}, 180_000);

afterAll(async () => {
  await explainer?.end();
  await dropDatabase(serverUrl, databaseName);
});

/** Each recorded statement that has a plan, with the scans it plans. */
async function plans(statements: RecordedStatement[]): Promise<Array<{ text: string; scans: PlannedScan[] }>> {
  const out = [];
  for (const statement of statements.filter(isPlannable))
    out.push({ text: statement.text, scans: await plannedScans(explainer, statement) });
  return out;
}

const noFullScans = (planned: Array<{ text: string; scans: PlannedScan[] }>) =>
  planned.flatMap((each) =>
    fullScans(each.scans).map(
      (scan) => `${scan.node} on ${scan.table}: ${each.text.replace(/\s+/g, ' ').slice(0, 300)}`,
    ),
  );

describe('flat with data', () => {
  it('preloads history whose ledger keeps its invariants', async () => {
    expect(summary).toMatchObject({ fundings: 20_000, payments: 4_000, links: 200 });
    expect(summary.fundingEvents).toBeGreaterThan(3 * 20_000);
    expect(summary.ledgerEntries).toBeGreaterThan(4 * 20_000);
    expect(Object.keys(summary.fundingsByStatus).sort()).toEqual(
      ['APPROVED', 'DECLINED', 'FAILED', 'NEEDS_REVIEW', 'REJECTED', 'RECONCILING'].sort(),
    );
    const database = createDatabase(databaseUrl);
    try {
      const report = await checkLedgerInvariants(database);
      expect(report.violations).toEqual([]);
      expect(report.checked.holds).toBe(20_000);
      expect(report.totals.treasury).toBe('0.00');
    } finally {
      await database.$disconnect();
    }
  });

  it('plans no sequential scan of a history table behind POST /ops/fundings and a funding’s workflow steps', async () => {
    const recording = recordingDatabase(databaseUrl);
    try {
      const ledger = createLedger();
      const fundings = createFundingRecord({
        database: recording.database,
        cipher: createTokenCipher(randomBytes(32)),
        ledger,
        limits: defaultFundingLimits,
      });
      const { partner_user_id: partnerUserId, id: linkId } = (
        await explainer.query<{ partner_user_id: string; id: string }>(
          'SELECT partner_user_id, id FROM link ORDER BY partner_user_id LIMIT 1',
        )
      ).rows[0]!;
      const funding = (source?: string): NewFunding =>
        newFundingRow('flat', {
          requestFingerprint: 'a'.repeat(64),
          ...(source
            ? { recipient: { type: 'TOKEN', linkId }, source: { type: 'USER_BALANCE' as const, partnerUserId: source } }
            : {}),
          requestedBy: 'flat-test',
        });
      const treasury = funding();
      const user = funding(partnerUserId);
      recording.statements.length = 0;
      expect(await fundings.insert(treasury)).toBe(true);
      expect(await fundings.insert(user)).toBe(true); // the user's limits and their own balance
      expect(await fundings.insert(treasury)).toBe(false); // a repeated key
      await fundings.getByIdempotencyKey(treasury.idempotencyKey);
      await fundings.findWithEvents(treasury.id);
      await userUsage(recording.database, partnerUserId, defaultFundingLimits.timeZone);
      // The workflow's steps, to APPROVED: the hold posted in the final move's transaction.
      await fundings.move(treasury.id, 'CREATING', { detail: 'creating' });
      await fundings.storeTransferId(treasury.id, `TRF-${randomUUID()}`);
      expect(await fundings.beginExecute(treasury.id, null)).toBe(true);
      expect((await fundings.finish(treasury.id, { status: 'APPROVED', code: null })).moved).toBe(true);
      await ledger.account(recording.database, 'TREASURY');
      await fundings.listFailedWithTransfer({ since: new Date(Date.now() - 86_400_000), limit: 200 });
      // The sweep's open holds of the fundings finished since its mark: by (status, updated_at), not every hold ever.
      await fundings.listFinalWithOpenHold({ since: new Date(Date.now() - 15 * 60_000), limit: 200 });

      const planned = await plans(recording.statements);
      expect(planned.length).toBeGreaterThan(10);
      expect(noFullScans(planned)).toEqual([]);
      // The ledger's zero-sum check at commit reads one transaction's entries (a trigger, not recorded).
      const balanced = await plannedScans(explainer, {
        text: 'SELECT SUM(amount) FROM ledger_entry WHERE transaction_id = $1',
        values: ['1'],
      });
      expect(balanced.map((scan) => scan.index)).toContain('ledger_entry_transaction_id_idx');
      // The sweep's recent FAILED fundings: the FAILED ones with a transfer by update, not every FAILED one.
      const failed = planned.find((each) => /FROM funding f\s+WHERE f\.status = 'FAILED'/.test(each.text));
      expect(failed?.scans.map((scan) => scan.index)).toContain('funding_failed_with_transfer_idx');
    } finally {
      await recording.close();
    }
  });

  it('reads the wallet app’s money page (a user’s latest fundings and payments) from indexes in time order: each read examines a page of rows, not every funding', async () => {
    const recording = recordingDatabase(databaseUrl);
    try {
      // A user with history, and one with none yet (a link made today).
      const [linked] = await explainer
        .query<{ link_id: string; partner_user_id: string }>(
          `SELECT f.link_id, l.partner_user_id FROM funding f JOIN link l ON l.id = f.link_id
         WHERE f.link_id IS NOT NULL GROUP BY 1, 2 ORDER BY count(*) DESC LIMIT 1`,
        )
        .then((result) => result.rows);
      for (const user of [
        { partnerUserId: linked!.partner_user_id, linkId: linked!.link_id },
        { partnerUserId: `new-${randomUUID()}`, linkId: randomUUID() },
      ]) {
        recording.statements.splice(0);
        await latestFundingsOf(recording.database, user, 8);
        await latestPaymentsOf(recording.database, user.linkId, 8);
        const reads = recording.statements.filter((each) => /FROM "public"\."(funding|payment)" WHERE/.test(each.text));
        expect(reads.length, JSON.stringify(user)).toBeGreaterThanOrEqual(2);
        // The user's own rows bound what a read may examine (a plan may read and sort them all), not others'.
        const [own] = await explainer
          .query<{ count: string }>(
            `SELECT (SELECT count(*) FROM funding WHERE source_partner_user_id = $1 OR link_id = $2::uuid)
                  + (SELECT count(*) FROM payment WHERE link_id = $2::uuid) AS count`,
            [user.partnerUserId, user.linkId],
          )
          .then((result) => result.rows);
        for (const read of reads) {
          const table = /FROM "public"\."payment"/.test(read.text) ? 'payment' : 'funding';
          // Before: one read with OR (source or link) walked every funding back by time for a user with few.
          expect(
            await rowsExamined(explainer, read, table),
            `${JSON.stringify(user)}: ${read.text}`,
          ).toBeLessThanOrEqual(Math.max(8, Number(own!.count)));
        }
      }
    } finally {
      await recording.close();
    }
  });

  it('reads GET /ops/fundings and /ops/payments pages by status from the (status, created_at, id) index, from the cursor on', async () => {
    const recording = recordingDatabase(databaseUrl);
    try {
      const fundings = createFundingRecord({
        database: recording.database,
        cipher: createTokenCipher(randomBytes(32)),
      });
      const payments = createPaymentRecord({ database: recording.database });
      const pageStatements: RecordedStatement[] = [];
      const take = () =>
        pageStatements.push(
          ...recording.statements
            .splice(0)
            .filter((each) => /FROM "public"\."(funding|payment)" WHERE/.test(each.text)),
        );
      for (const status of ['APPROVED', 'FAILED', 'NEEDS_REVIEW'] as const) {
        let cursor: string | undefined;
        for (let page = 0; page < 3; page += 1) {
          const read = await fundings.listPage({ status, limit: 20, ...(cursor ? { cursor } : {}) });
          expect(read.kind).toBe('page');
          if (read.kind !== 'page' || !read.nextCursor) break;
          cursor = read.nextCursor;
        }
      }
      await fundings.listPage({
        status: 'APPROVED',
        limit: 20,
        to: new Date(Date.now() - 90 * 86_400_000).toISOString(),
      });
      take();
      const first = await payments.listPage({ status: 'SUCCEEDED', limit: 20 });
      if (first.kind === 'page' && first.nextCursor)
        await payments.listPage({ status: 'SUCCEEDED', limit: 20, cursor: first.nextCursor });
      take();
      const everything = recording.statements.splice(0);
      await fundings.listPage({ limit: 20 });

      expect(pageStatements.length).toBeGreaterThanOrEqual(9);
      const planned = await plans([...pageStatements, ...everything, ...recording.statements]);
      expect(noFullScans(planned)).toEqual([]);
      for (const statement of pageStatements) {
        const scans = await plannedScans(explainer, statement);
        const table = /FROM "public"\."payment"/.test(statement.text) ? 'payment' : 'funding';
        // The rows tied with the cursor's time (created_at = c, id < i): either index starts at them.
        const indexes = /"created_at" = \$/.test(statement.text)
          ? [`${table}_status_created_at_id_idx`, `${table}_created_at_id_idx`]
          : [`${table}_status_created_at_id_idx`];
        expect(scans, statement.text).toHaveLength(1);
        expect(scans[0], statement.text).toMatchObject({ node: 'Index Scan', table });
        expect(indexes, statement.text).toContain(scans[0]!.index);
      }
      // A page after a cursor starts at the cursor: its time is an index condition (the rows tied with it past its id,
      // then those older).
      const paged = pageStatements.find((each) => /"created_at" < \$/.test(each.text));
      expect(paged, 'a page read with a cursor').toBeDefined();
      const plan = await explainer.query<{ 'QUERY PLAN': string }>({
        text: `EXPLAIN ${paged!.text}`,
        values: paged!.values,
      });
      const indexCondition = plan.rows.map((row) => row['QUERY PLAN']).find((line) => line.includes('Index Cond'));
      expect(indexCondition).toMatch(/created_at < /);
    } finally {
      await recording.close();
    }
  });

  it('pages GET /ops/fundings through rows that share their created_at (a batch’s items) at the cost of a page each: a deep page reads its own rows, not the tie’s before it', async () => {
    // 3,000 fundings of one instant, the newest of the list (a batch's items are stored in one transaction).
    const setup = new pg.Client({ connectionString: databaseUrl });
    await setup.connect();
    try {
      await setup.query(`
        UPDATE funding SET created_at = now() + interval '1 day'
        WHERE id IN (SELECT id FROM funding WHERE status = 'APPROVED' ORDER BY id LIMIT 3000)`);
    } finally {
      await setup.end();
    }
    const recording = recordingDatabase(databaseUrl);
    try {
      const fundings = createFundingRecord({
        database: recording.database,
        cipher: createTokenCipher(randomBytes(32)),
      });
      let cursor: string | undefined;
      const seen: string[] = [];
      for (let page = 0; page < 140; page += 1) {
        const read = await fundings.listPage({ status: 'APPROVED', limit: 20, ...(cursor ? { cursor } : {}) });
        if (read.kind !== 'page') throw new Error('a page');
        seen.push(...read.items.map((item) => item.id));
        cursor = read.nextCursor!;
      }
      // Every row once, in the list's order, across the tie: as PostgreSQL orders them.
      const ordered = await explainer.query<{ id: string }>(
        `SELECT id::text AS id FROM funding WHERE status = 'APPROVED' ORDER BY created_at DESC, id DESC LIMIT ${140 * 20}`,
      );
      expect(seen).toEqual(ordered.rows.map((row) => row.id));
      recording.statements.splice(0);
      const deep = await fundings.listPage({ status: 'APPROVED', limit: 20, cursor });
      expect(deep.kind === 'page' && deep.items.length).toBe(20);
      const reads = recording.statements.filter((each) => /FROM "public"\."funding" WHERE/.test(each.text));
      let examined = 0;
      for (const read of reads) examined += await rowsExamined(explainer, read, 'funding');
      // Before: the page 141 rows deep into the tie examined the 2,800 before it too (created_at <= c an index
      // condition, id < i a filter).
      expect(examined).toBeLessThanOrEqual(3 * 21);
    } finally {
      await recording.close();
    }
  });
  it('reads a review’s executes of its transfer from the audit’s index of executes by the id their path names: the transfer’s own calls, not a day of every call', async () => {
    const recording = recordingDatabase(databaseUrl);
    try {
      // A day of the audit: 20,000 calls of every kind (an outage's retrieves and tokens among them), 5,000 executes.
      await explainer.query(`
        INSERT INTO wallet_call (request_reference_no, service, operation, method, path, http_status, outcome, duration_ms, started_at)
        SELECT 'flat-' || n, 'transfers',
               CASE WHEN n % 4 = 0 THEN 'transfers.execute' ELSE 'transfers.retrieve' END,
               CASE WHEN n % 4 = 0 THEN 'PUT' ELSE 'GET' END,
               '/partners/v1/transfers/t-' || (n / 4) || CASE WHEN n % 4 = 0 THEN '/execute' ELSE '' END,
               504, 'error', 20000, now() - (n || ' seconds')::interval
        FROM generate_series(1, 20000) AS n`);
      await explainer.query('ANALYZE wallet_call');
      recording.statements.splice(0);
      const found = await executesOfTarget(recording.database, 'transfers.execute', 't-1234');
      expect(found.map((entry) => entry.requestReferenceNo)).toEqual(['flat-4936']);
      const [read] = recording.statements.filter((each) => /FROM wallet_call/.test(each.text));
      // Before: every call since the record was stored, less an hour, read by its start time and its path matched row
      // by row (a park during an outage read the outage's every call).
      expect(await rowsExamined(explainer, read!, 'wallet_call')).toBeLessThanOrEqual(1);
    } finally {
      await recording.close();
    }
  });

  it('reads an account’s entries without a currency a currency at a time, each from the (account, currency, id) index: a page examines its rows, not every newer entry', async () => {
    const recording = recordingDatabase(databaseUrl);
    try {
      // A user whose entries are among the oldest (its opening balance, the day before the history) and few.
      const { account } = (
        await explainer.query<{ account: string }>(
          `SELECT e.account FROM ledger_entry e WHERE e.account LIKE 'USER:%' GROUP BY e.account ORDER BY max(e.id) LIMIT 1`,
        )
      ).rows[0]!;
      const expected = (
        await explainer.query<{ id: string }>(
          `SELECT e.id::text AS id FROM ledger_entry e WHERE e.account = $1 ORDER BY e.id DESC LIMIT 5`,
          [account],
        )
      ).rows.map((row) => row.id);
      recording.statements.splice(0);
      const page = await createLedger().entries(recording.database, { account, limit: 5 });
      expect(page.items.map((entry) => entry.entryId)).toEqual(expected);
      // Before (no currency, as GET /ops/ledger/entries?account= sends it): every entry of the account, sorted (46
      // here), or every entry from the newest by id until the account's newest five, as the planner chose.
      for (const statement of recording.statements.filter((each) => /"ledger_entry"/.test(each.text)))
        expect(await rowsExamined(explainer, statement, 'ledger_entry'), statement.text).toBeLessThanOrEqual(6);
    } finally {
      await recording.close();
    }
  });

  // After the pages by status above: its 3,000 PENDING items would change their plans.
  it('reads a batch runner’s next items a page at a time from its cursor: each read examines a page of rows, not the batch’s every item', async () => {
    const recording = recordingDatabase(databaseUrl);
    try {
      const { credit, insertBatch, fundings } = batchRecordsOn(recording.database);
      const partnerUserId = `flat-batch-${randomUUID()}`;
      await credit(partnerUserId, 10_000_000n);
      const batchId = randomUUID();
      const items = codeItems(batchId, 3000, {
        reference: (index) => `item-${index}`,
        code: (index) => String(1_000_000 + index),
        amount: 1_000n,
      });
      await insertBatch(batchId, partnerUserId, items, null);
      const ids = items.map((item) => item.id).sort();
      for (const afterId of [null, ids[1500]!, ids[2900]!]) {
        recording.statements.splice(0);
        const page = await fundings.nextPendingBatchItems(batchId, afterId, 200);
        expect(page.length).toBe(afterId === ids[2900] ? 99 : 200);
        const [read] = recording.statements.filter((each) =>
          /FROM (?:"public"\.)?"?funding"?(?: f)?\s+WHERE/.test(each.text),
        );
        // Before: no index has the batch's items in id order, so a read fetched every PENDING item of the batch (or
        // walked every funding by its key) and sorted: a 100,000-item batch's 500 pages read 25M rows.
        expect(await rowsExamined(explainer, read!, 'funding'), `after ${afterId}`).toBeLessThanOrEqual(200);
      }
    } finally {
      await recording.close();
    }
  });

  // After the batch runner's: its batch's 3,000 items cancelled here would change that test's plans.
  it('reads a cancelled batch’s FAILED items (not the cancelled ones) a page at a time: each read examines the failed rows, not the batch’s every cancelled item', async () => {
    const recording = recordingDatabase(databaseUrl);
    try {
      const { credit, insertBatch, batches, fundings } = batchRecordsOn(recording.database);
      const partnerUserId = `flat-cancelled-${randomUUID()}`;
      await credit(partnerUserId, 10_000_000n);
      const batchId = randomUUID();
      const items = codeItems(batchId, 3000, {
        reference: (index) => `item-${String(index).padStart(4, '0')}`,
        code: (index) => String(3_000_000 + index),
        amount: 1_000n,
      });
      await insertBatch(batchId, partnerUserId, items, null);
      expect(await batches.move(batchId, 'CANCELLED', { field: 'cancelledBy', name: 'ops' })).toBe(true);
      // Three of them failed on their own before the cancel (as a create refused would leave them).
      await explainer.query(
        `UPDATE funding SET error_code = 'CREATE_FAILED' WHERE batch_id = $1 AND batch_reference IN ('item-0007', 'item-1500', 'item-2999')`,
        [batchId],
      );
      await explainer.query('ANALYZE funding');
      // Two pages of two: the first, and the next from its cursor.
      for (const [afterReference, expected] of [
        [undefined, ['item-0007', 'item-1500']],
        ['item-1500', ['item-2999']],
      ] as const) {
        recording.statements.splice(0);
        const page = await fundings.batchItemsPage(batchId, {
          status: 'FAILED',
          limit: 2,
          ...(afterReference ? { afterReference } : {}),
        });
        expect(page.map((item) => item.batchReference)).toEqual(expected);
        const [read] = recording.statements.filter((each) =>
          /FROM (?:"public"\.)?"?funding"?(?: f)?\s+WHERE/.test(each.text),
        );
        // Before: the batch's FAILED items by reference, each cancelled one read and dropped by its code: 3,000 rows.
        expect(await rowsExamined(explainer, read!, 'funding'), `after ${afterReference}`).toBeLessThanOrEqual(50);
      }
    } finally {
      await recording.close();
    }
  });

  it('reads a settlement day’s first page of approved fundings and succeeded payments from the day’s first instant: not through every approval and success before the day', async () => {
    const recording = recordingDatabase(databaseUrl);
    try {
      // The history's last whole day in Manila: it has approvals and successes, and 180 days of them before it.
      const day = settlementDay(lastWholeDay(new Date(), 'Asia/Manila'), 'Asia/Manila');
      recording.statements.length = 0;
      const fundings = await fundingsApprovedOn(recording.database, day, null, 500);
      const payments = await paymentsSucceededOn(recording.database, day, null, 500);
      expect(fundings.items.length).toBeGreaterThan(0);
      expect(payments.items.length).toBeGreaterThan(0);
      const { rows: before } = await explainer.query<{ fundings: number; payments: number }>(
        `SELECT (SELECT count(*)::int FROM funding_event WHERE status = 'APPROVED' AND at < $1) AS fundings,
                (SELECT count(*)::int FROM payment_event WHERE status = 'SUCCEEDED' AND at < $1) AS payments`,
        [day.startsAt],
      );
      expect(before[0]!.fundings).toBeGreaterThan(5000);
      expect(before[0]!.payments).toBeGreaterThan(1000);
      const read = (table: string) =>
        recording.statements.find((statement) => statement.text.includes(`FROM ${table} ev`))!;
      // The day's first page, a few hundred entries, is a few blocks of each index. Before, the first page's cursor
      // was the epoch: PostgreSQL begins a scan with a row comparison and a bound on its first column at the
      // comparison, so it walked every entry of the index before the day (68 blocks of the fundings' index here, 18 of
      // the payments'; a year at 100,000 a day, a gigabyte); and each row's look for an earlier event of its funding on
      // the day could go through the same index, walking the day's entries before it (204 and 42 blocks here; some 50
      // million entries a page at the end of a big day).
      const blocks = {
        fundings: await indexBlocksRead(explainer, read('funding_event'), 'funding_event_approved_at_id_idx'),
        payments: await indexBlocksRead(explainer, read('payment_event'), 'payment_event_succeeded_at_id_idx'),
      };
      // Read through each index (a plan that read none would prove nothing), a few blocks of it.
      expect(Math.min(blocks.fundings, blocks.payments), JSON.stringify(blocks)).toBeGreaterThan(0);
      expect(blocks.fundings, JSON.stringify(blocks)).toBeLessThanOrEqual(4);
      expect(blocks.payments, JSON.stringify(blocks)).toBeLessThanOrEqual(4);
    } finally {
      await recording.close();
    }
  });
});
