// `walletflow bench --preload`: months of history written straight into PostgreSQL with set-based
// SQL (INSERT … SELECT over generate_series), in one transaction, so the bench can measure the ops
// API on a database that is not empty (docs/benchmarks.md, flat with data). The rows are what the
// app itself writes for each outcome: a funding with its timeline (PENDING, CREATING, EXECUTING,
// final), its hold and the hold's post (APPROVED) or release (DECLINED, REJECTED, FAILED), kept
// open while in review or reconciling, and its webhook event; a payment with its timeline, its
// ledger posting when SUCCEEDED and its webhook event; the links they used; opening balances for
// the partner users whose own balance funded some of them, and the treasury's float for the rest,
// so every account ends where it was and the ledger's invariants (harness/ledger-invariants.ts)
// still hold.
//
// Speed: the ledger's row triggers (apply each entry to its account, the zero-sum check at commit)
// and the foreign-key triggers are switched off for this transaction only
// (session_replication_role = replica, which needs a superuser); the balances are then moved once
// per account by the sum of the new entries, which is what the entry trigger would have done row
// by row. The tables written are locked against writers for the transaction, so nothing else's
// rows fall between the reserved ids. Historical cash-in codes are 40 random bytes, the size of a
// sealed code: they were sealed under some earlier key and are never decrypted again.
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { z } from 'zod';

export const preloadOptionsSchema = z.object({
  fundings: z.number().int().min(0).max(20_000_000),
  payments: z.number().int().min(0).max(5_000_000),
  /** Links the history's payments and user-funded fundings spread over. */
  links: z.number().int().min(1).max(1_000_000).default(2000),
  /** How far back the history goes, days (it ends an hour ago). */
  days: z.number().int().min(1).max(3650).default(180),
});
export type PreloadOptions = z.input<typeof preloadOptionsSchema>;

export const preloadSummarySchema = z.object({
  fundings: z.number().int(),
  payments: z.number().int(),
  links: z.number().int(),
  fundingEvents: z.number().int(),
  paymentEvents: z.number().int(),
  ledgerTransactions: z.number().int(),
  ledgerEntries: z.number().int(),
  webhookEvents: z.number().int(),
  /** Fundings by status, as preloaded. */
  fundingsByStatus: z.record(z.string(), z.number().int()),
  seconds: z.number(),
});
export type PreloadSummary = z.infer<typeof preloadSummarySchema>;

export class PreloadError extends Error {
  constructor(
    readonly code: 'PRELOAD_NOT_SUPERUSER' | 'PRELOAD_FAILED',
    message: string,
  ) {
    super(message);
    this.name = 'PreloadError';
  }
}

/** A UUID v4-shaped id from 32 hex digits (an md5), so ids are random-looking and valid in cursors (z.uuid()). */
const uuidOf = (hex: string) => `(overlay(overlay(${hex} placing '4' from 13) placing '8' from 17))::uuid`;

/** The tables the preload writes: locked against other writers while it runs. */
const writtenTables = [
  'link',
  'funding',
  'funding_event',
  'payment',
  'payment_event',
  'ledger_account',
  'ledger_transaction',
  'ledger_entry',
  'webhook_event',
];

/** The big tables: their secondary indexes are dropped for the load and built again after it. */
const rebuiltTables = [
  'funding',
  'funding_event',
  'payment',
  'payment_event',
  'ledger_transaction',
  'ledger_entry',
  'webhook_event',
];
/** Kept through the load: their keys arrive in order, so each insert lands on the index's last page. */
const keptIndexes = ['ledger_transaction_settles_id_key', 'ledger_transaction_created_at_idx'];

/** The data statements, in order; `salt` keeps two preloads in one database apart. */
function statements(o: z.output<typeof preloadOptionsSchema>, salt: string): Array<{ label: string; sql: string }> {
  const n = o.fundings;
  const m = o.payments;
  const l = o.links;
  const d = o.days;
  const tag = `'${salt}'`;
  const start = `(now() - interval '1 hour' - make_interval(days => ${d}))`;
  const span = `make_interval(days => ${d})`;
  return [
    {
      label: 'links',
      sql: `
        CREATE TEMP TABLE preload_link ON COMMIT DROP AS
          SELECT i, ${uuidOf(`md5('link-' || ${tag} || '-' || i)`)} AS id, 'preload-' || ${tag} || '-' || i AS partner_user_id,
                 ${start} + (i::float8 / ${l}) * ${span} * 0.5 AS created_at
          FROM generate_series(1, ${l}) i;
        INSERT INTO link (id, partner_user_id, profile_id, masked_user_id, kind, scopes, status, created_at, updated_at)
          SELECT id, partner_user_id, 'preload-' || ${tag} || '-' || i, '+63******' || lpad((i % 10000)::text, 4, '0'),
                 (CASE WHEN i % 3 = 0 THEN 'STANDALONE' ELSE 'EMBEDDED' END)::"LinkKind", ARRAY['profile', 'transfers', 'payments'],
                 'ACTIVE'::"LinkStatus", created_at, created_at
          FROM preload_link`,
    },
    {
      // One row per funding with everything its rows are made of: two hashes (h, k) feed every id,
      // key and reference, so each funding costs two md5s.
      label: 'fundings (plan)',
      sql: `
        CREATE TEMP TABLE preload_funding ON COMMIT DROP AS
          SELECT s.g, ${uuidOf('s.h')} AS id, s.h, md5(s.h) AS k,
                 (CASE WHEN r1 < 0.85 THEN 'APPROVED' WHEN r1 < 0.91 THEN 'DECLINED' WHEN r1 < 0.94 THEN 'REJECTED'
                       WHEN r1 < 0.9985 THEN 'FAILED' WHEN r1 < 0.9998 THEN 'NEEDS_REVIEW' ELSE 'RECONCILING' END)::"FundingStatus" AS status,
                 r1 >= 0.94 AND r1 < 0.955 AS cancelled,
                 ${start} + (s.g::float8 / ${n}) * ${span} AS created_at,
                 round((1 + r4 * r4 * r4 * 4999)::numeric, 2) AS amount,
                 u.i AS user_link, u.partner_user_id, COALESCE('USER:' || u.partner_user_id, 'TREASURY') AS source, t.id AS link_id
          FROM (SELECT g, md5(${tag} || '-f-' || g) AS h, random() AS r1, random() AS r2, random() AS r3, random() AS r4 FROM generate_series(1, ${n}) g) s
          LEFT JOIN preload_link u ON s.r2 < 0.2 AND u.i = 1 + floor(s.r3 * ${l})::int
          LEFT JOIN preload_link t ON (s.r2 < 0.2 OR s.r2 >= 0.85) AND t.i = 1 + floor(s.r3 * ${l})::int`,
    },
    {
      label: 'fundings',
      sql: `
        INSERT INTO funding (id, idempotency_key, request_fingerprint, workflow_id, status, recipient_type, link_id, cash_in_code_encrypted,
                             cash_in_code_masked, currency, amount, transfer_id, abandoned_transfer_ids, cancel_requested, source_partner_user_id,
                             error_code, error_message, review_reason, review_evidence, created_at, updated_at)
          SELECT f.id, ${uuidOf('f.k')}::text, f.h || f.k, 'funding-' || f.k || f.h,
                 f.status, (CASE WHEN f.link_id IS NULL THEN 'CODE' ELSE 'TOKEN' END)::"RecipientType", f.link_id,
                 CASE WHEN f.link_id IS NULL THEN decode(f.k || f.h || substr(f.k, 9, 16), 'hex') END,
                 CASE WHEN f.link_id IS NULL THEN '*****' || lpad((f.g % 100)::text, 2, '0') END, 'PHP', f.amount,
                 CASE WHEN f.status IN ('REJECTED') OR f.cancelled THEN NULL ELSE 'TRF' || upper(substr(f.k, 1, 20)) END,
                 ARRAY[]::text[], f.cancelled, f.partner_user_id,
                 CASE f.status WHEN 'DECLINED' THEN (ARRAY['6001', '6002', '6051'])[1 + f.g % 3] WHEN 'REJECTED' THEN 'CODE_INVALID'
                               WHEN 'FAILED' THEN CASE WHEN f.cancelled THEN 'CANCELLED' ELSE 'TRANSFER_EXPIRED' END END,
                 CASE f.status WHEN 'DECLINED' THEN 'The recipient wallet has reached its limit.' WHEN 'REJECTED' THEN 'The cash-in code is unknown, used or expired.'
                               WHEN 'FAILED' THEN 'The funding failed.' END,
                 CASE WHEN f.status = 'NEEDS_REVIEW' THEN 'execute outcome unknown after retries; the wallet could not decide it' END,
                 CASE WHEN f.status = 'NEEDS_REVIEW' THEN jsonb_build_array(jsonb_build_object('at', f.created_at, 'requestReferenceNo', f.k,
                                                                 'httpStatus', 504, 'code', 'TIMEOUT', 'outcome', 'unknown')) END,
                 f.created_at, f.created_at + interval '900 milliseconds'
          FROM preload_funding f ORDER BY f.id`,
    },
    {
      label: 'funding events',
      sql: `
        INSERT INTO funding_event (funding_id, status, request_reference_no, detail, at)
          SELECT f.id, e.status, e.ref, e.detail, f.created_at + e.after
          FROM preload_funding f CROSS JOIN LATERAL (VALUES
              (1, 'PENDING'::"FundingStatus", NULL, CASE WHEN f.partner_user_id IS NULL THEN 'funding requested by ops key ops' ELSE 'funding requested' END, interval '0'),
              (2, 'CREATING'::"FundingStatus", NULL, 'creating the transfer', interval '120 milliseconds'),
              (3, 'EXECUTING'::"FundingStatus", substr(f.h, 1, 32), 'transfer created; executing', interval '400 milliseconds'),
              (4, f.status, substr(f.k, 1, 32), NULL, interval '900 milliseconds')
            ) AS e(step, status, ref, detail, after)
          WHERE e.step = 1 OR (e.step = 2 AND NOT f.cancelled)
             OR (e.step = 3 AND f.status IN ('APPROVED', 'DECLINED', 'NEEDS_REVIEW', 'RECONCILING'))
             OR (e.step = 4)`,
    },
    {
      label: 'payments (plan)',
      sql: `
        CREATE TEMP TABLE preload_payment ON COMMIT DROP AS
          SELECT s.g, ${uuidOf('s.h')} AS id, s.h, md5(s.h) AS k,
                 (CASE WHEN r1 < 0.92 THEN 'SUCCEEDED' WHEN r1 < 0.999 THEN 'FAILED' ELSE 'NEEDS_REVIEW' END)::"PaymentStatus" AS status,
                 (CASE WHEN r2 < 0.1 THEN 'DEPOSIT' ELSE 'PURCHASE' END)::"PaymentPurpose" AS purpose,
                 ${start} + (s.g::float8 / GREATEST(${m}, 1)) * ${span} AS created_at,
                 round((1 + r4 * r4 * 1999)::numeric, 2) AS amount,
                 l.id AS link_id, l.partner_user_id
          FROM (SELECT g, md5(${tag} || '-p-' || g) AS h, random() AS r1, random() AS r2, random() AS r3, random() AS r4 FROM generate_series(1, ${m}) g) s
          JOIN preload_link l ON l.i = 1 + floor(s.r3 * ${l})::int`,
    },
    {
      label: 'payments',
      sql: `
        INSERT INTO payment (id, idempotency_key, request_fingerprint, workflow_id, status, link_id, purpose, currency, amount, wallet_payment_id,
                             fee_currency, fee, error_code, error_message, review_reason, created_at, updated_at)
          SELECT p.id, ${uuidOf('p.k')}::text, p.h || p.k, 'payment-' || p.k || p.h,
                 p.status, p.link_id, p.purpose, 'PHP', p.amount, 'PAY' || upper(substr(p.k, 1, 20)),
                 CASE WHEN p.status = 'SUCCEEDED' THEN 'PHP' END, CASE WHEN p.status = 'SUCCEEDED' THEN 0 END,
                 CASE WHEN p.status = 'FAILED' THEN 'INSUFFICIENT_BALANCE' END, CASE WHEN p.status = 'FAILED' THEN 'The wallet balance does not cover the payment.' END,
                 CASE WHEN p.status = 'NEEDS_REVIEW' THEN 'execute outcome unknown after retries' END,
                 p.created_at, p.created_at + interval '700 milliseconds'
          FROM preload_payment p ORDER BY p.id`,
    },
    {
      label: 'payment events',
      sql: `
        INSERT INTO payment_event (payment_id, status, request_reference_no, detail, at)
          SELECT p.id, e.status, e.ref, e.detail, p.created_at + e.after
          FROM preload_payment p CROSS JOIN LATERAL (VALUES
              (1, 'PENDING'::"PaymentStatus", NULL, 'payment requested', interval '0'),
              (2, 'CREATING'::"PaymentStatus", NULL, 'creating the payment', interval '100 milliseconds'),
              (3, 'EXECUTING'::"PaymentStatus", p.h, 'payment created; executing', interval '300 milliseconds'),
              (4, p.status, p.k, NULL, interval '700 milliseconds')
            ) AS e(step, status, ref, detail, after)
          WHERE e.step <> 3 OR p.status <> 'FAILED'`,
    },
    {
      // Reserved transaction ids: hold g, its settle n + g, payment 2n + g, adjustments after.
      label: 'ledger ids',
      sql: `
        CREATE TEMP TABLE preload_ids ON COMMIT DROP AS SELECT nextval('ledger_transaction_id_seq') AS base;
        SELECT setval('ledger_transaction_id_seq', (SELECT base FROM preload_ids) + ${2 * n + m + l + 2})`,
    },
    {
      label: 'ledger accounts',
      sql: `
        INSERT INTO ledger_account (account, currency, kind, partner_user_id, floor)
          VALUES ('TREASURY', 'PHP', 'TREASURY', NULL, NULL), ('IN_FLIGHT', 'PHP', 'IN_FLIGHT', NULL, NULL), ('WALLET_CLEARING', 'PHP', 'WALLET_CLEARING', NULL, NULL),
                 ('MERCHANT_REVENUE', 'PHP', 'MERCHANT_REVENUE', NULL, NULL), ('CAPITAL', 'PHP', 'CAPITAL', NULL, NULL)
          ON CONFLICT DO NOTHING;
        INSERT INTO ledger_account (account, currency, kind, partner_user_id, floor, created_at, updated_at)
          SELECT 'USER:' || partner_user_id, 'PHP', 'USER', partner_user_id, 0, created_at, created_at FROM preload_link ON CONFLICT DO NOTHING;
        CREATE TEMP TABLE preload_entry_start ON COMMIT DROP AS SELECT COALESCE(max(id), 0) AS last_id FROM ledger_entry`,
    },
    {
      // Opening balances: each user is credited what its fundings drew (approved or still held)
      // plus 1,000.00 from the treasury; CAPITAL gives the treasury what the history drew from it.
      label: 'opening balances',
      sql: `
        CREATE TEMP TABLE preload_credit ON COMMIT DROP AS
          SELECT l.i, l.partner_user_id, 1000 + COALESCE(SUM(f.amount) FILTER (WHERE f.status IN ('APPROVED', 'NEEDS_REVIEW', 'RECONCILING')), 0) AS amount
          FROM preload_link l LEFT JOIN preload_funding f ON f.user_link = l.i GROUP BY l.i, l.partner_user_id;
        INSERT INTO ledger_transaction (id, reference, kind, currency, reason, fingerprint, created_at)
          SELECT b.base + ${2 * n + m} + c.i, 'adjustment:preload-' || ${tag} || '-opening-' || c.i, 'ADJUSTMENT', 'PHP', 'preload: opening balance',
                 md5('adj-' || c.partner_user_id) || md5('adj2-' || c.partner_user_id), ${start} - interval '1 day'
          FROM preload_credit c, preload_ids b;
        INSERT INTO ledger_entry (transaction_id, account, currency, amount, pending, at)
          SELECT b.base + ${2 * n + m} + c.i, e.account, 'PHP', e.amount, false, ${start} - interval '1 day'
          FROM preload_credit c, preload_ids b CROSS JOIN LATERAL (VALUES ('TREASURY', -c.amount), ('USER:' || c.partner_user_id, c.amount)) AS e(account, amount);
        INSERT INTO ledger_transaction (id, reference, kind, currency, reason, fingerprint, created_at)
          SELECT b.base + ${2 * n + m + l + 1}, 'adjustment:preload-' || ${tag} || '-float', 'ADJUSTMENT', 'PHP', 'preload: the treasury''s float for the history',
                 md5('float-' || ${tag}) || md5('float2-' || ${tag}), ${start} - interval '1 day' FROM preload_ids b;
        INSERT INTO ledger_entry (transaction_id, account, currency, amount, pending, at)
          SELECT b.base + ${2 * n + m + l + 1}, e.account, 'PHP', e.amount, false, ${start} - interval '1 day'
          FROM preload_ids b, (SELECT COALESCE((SELECT SUM(amount) FROM preload_credit), 0)
                                      + COALESCE((SELECT SUM(amount) FROM preload_funding WHERE partner_user_id IS NULL AND status IN ('APPROVED', 'NEEDS_REVIEW', 'RECONCILING')), 0) AS total) t
          CROSS JOIN LATERAL (VALUES ('CAPITAL', -t.total), ('TREASURY', t.total)) AS e(account, amount)
          WHERE t.total > 0`,
    },
    {
      label: 'ledger holds and settles',
      sql: `
        INSERT INTO ledger_transaction (id, reference, kind, currency, settles_id, funding_id, created_at)
          SELECT b.base + f.g, 'funding:' || f.id || ':hold', 'HOLD', 'PHP', NULL, f.id, f.created_at FROM preload_funding f, preload_ids b;
        INSERT INTO ledger_transaction (id, reference, kind, currency, settles_id, funding_id, created_at)
          SELECT b.base + ${n} + f.g, 'funding:' || f.id || CASE WHEN f.status = 'APPROVED' THEN ':post' ELSE ':release' END,
                 (CASE WHEN f.status = 'APPROVED' THEN 'POST' ELSE 'RELEASE' END)::"LedgerTransactionKind", 'PHP', b.base + f.g, f.id,
                 f.created_at + interval '900 milliseconds'
          FROM preload_funding f, preload_ids b WHERE f.status IN ('APPROVED', 'DECLINED', 'REJECTED', 'FAILED')`,
    },
    {
      label: 'ledger entries of holds and settles',
      sql: `
        INSERT INTO ledger_entry (transaction_id, account, currency, amount, pending, at)
          SELECT b.base + e.tx, e.account, 'PHP', e.amount, e.pending, f.created_at + e.after
          FROM preload_funding f, preload_ids b CROSS JOIN LATERAL (VALUES
              (1, f.g, 'IN_FLIGHT', f.amount, true, interval '0'),
              (2, f.g, f.source, -f.amount, true, interval '0'),
              (3, ${n} + f.g, 'IN_FLIGHT', -f.amount, true, interval '900 milliseconds'),
              (4, ${n} + f.g, f.source, f.amount, true, interval '900 milliseconds'),
              (5, ${n} + f.g, f.source, -f.amount, false, interval '900 milliseconds'),
              (6, ${n} + f.g, 'WALLET_CLEARING', f.amount, false, interval '900 milliseconds')
            ) AS e(step, tx, account, amount, pending, after)
          WHERE e.step <= 2 OR (e.step <= 4 AND f.status IN ('APPROVED', 'DECLINED', 'REJECTED', 'FAILED')) OR f.status = 'APPROVED'`,
    },
    {
      label: 'ledger payments',
      sql: `
        INSERT INTO ledger_transaction (id, reference, kind, currency, payment_id, created_at)
          SELECT b.base + ${2 * n} + p.g, 'payment:' || p.id || ':post', 'PAYMENT', 'PHP', p.id, p.created_at + interval '700 milliseconds'
          FROM preload_payment p, preload_ids b WHERE p.status = 'SUCCEEDED';
        INSERT INTO ledger_entry (transaction_id, account, currency, amount, pending, at)
          SELECT b.base + ${2 * n} + p.g, e.account, 'PHP', e.amount, false, p.created_at + interval '700 milliseconds'
          FROM preload_payment p, preload_ids b CROSS JOIN LATERAL (VALUES
              ('WALLET_CLEARING', -p.amount),
              (CASE WHEN p.purpose = 'DEPOSIT' THEN 'USER:' || p.partner_user_id ELSE 'MERCHANT_REVENUE' END, p.amount)
            ) AS e(account, amount)
          WHERE p.status = 'SUCCEEDED'`,
    },
    {
      // What the entry trigger would have done row by row: each account moved by its new entries.
      label: 'ledger balances',
      sql: `
        UPDATE ledger_account a SET balance = a.balance + s.posted, pending = a.pending + s.held, updated_at = now()
          FROM (SELECT account, currency, COALESCE(SUM(amount) FILTER (WHERE NOT pending), 0) AS posted, COALESCE(SUM(amount) FILTER (WHERE pending), 0) AS held
                FROM ledger_entry WHERE id > (SELECT last_id FROM preload_entry_start) GROUP BY account, currency) s
          WHERE a.account = s.account AND a.currency = s.currency`,
    },
    {
      // The outbox row each final (or NEEDS_REVIEW) move wrote: its body trimmed to the main fields.
      label: 'webhook events',
      sql: `
        INSERT INTO webhook_event (id, type, funding_id, body, created_at)
          SELECT 'evt_' || f.k, 'funding.' || lower(f.status::text COLLATE "C"), f.id,
                 '{"id":"evt_' || f.k || '","type":"funding.' || lower(f.status::text COLLATE "C") || '","createdAt":"' || (f.created_at + interval '900 milliseconds') ||
                 '","data":{"fundingId":"' || f.id || '","status":"' || f.status || '","amount":{"currency":"PHP","value":"' || f.amount || '"}}}',
                 f.created_at + interval '900 milliseconds'
          FROM preload_funding f WHERE f.status <> 'RECONCILING';
        INSERT INTO webhook_event (id, type, payment_id, body, created_at)
          SELECT 'evt_' || p.k, 'payment.' || lower(p.status::text COLLATE "C"), p.id,
                 '{"id":"evt_' || p.k || '","type":"payment.' || lower(p.status::text COLLATE "C") || '","createdAt":"' || (p.created_at + interval '700 milliseconds') ||
                 '","data":{"paymentId":"' || p.id || '","status":"' || p.status || '","amount":{"currency":"PHP","value":"' || p.amount || '"}}}',
                 p.created_at + interval '700 milliseconds'
          FROM preload_payment p`,
    },
  ];
}

async function count(client: pg.Client, sql: string): Promise<number> {
  const result = await client.query<{ n: string }>(sql);
  return Number(result.rows[0]?.n ?? 0);
}

/**
 * Writes the history into the database at `databaseUrl` in one transaction (all of it or
 * nothing), then VACUUMs and ANALYZEs the tables and checkpoints (the steady state autovacuum
 * would reach after such a load). Needs a superuser
 * (the bench's and the tests' PostgreSQL are).
 */
export async function preloadHistory(
  databaseUrl: string,
  input: PreloadOptions,
  log: (line: string) => void = () => undefined,
): Promise<PreloadSummary> {
  const options = preloadOptionsSchema.parse(input);
  const salt = randomBytes(6).toString('hex');
  const started = Date.now();
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    // Before the first temporary table of the session: the plan tables stay in memory.
    await client.query(`SET temp_buffers = '1GB'`);
    const superuser = await client.query<{ rolsuper: boolean }>(
      'SELECT rolsuper FROM pg_roles WHERE rolname = current_user',
    );
    if (!superuser.rows[0]?.rolsuper)
      throw new PreloadError(
        'PRELOAD_NOT_SUPERUSER',
        'the preload needs a PostgreSQL superuser (it switches the ledger triggers off for its own transaction)',
      );
    const before = {
      fundingEvents: await count(client, 'SELECT count(*) AS n FROM funding_event'),
      paymentEvents: await count(client, 'SELECT count(*) AS n FROM payment_event'),
      ledgerTransactions: await count(client, 'SELECT count(*) AS n FROM ledger_transaction'),
      ledgerEntries: await count(client, 'SELECT count(*) AS n FROM ledger_entry'),
      webhookEvents: await count(client, 'SELECT count(*) AS n FROM webhook_event'),
    };
    await client.query({ text: 'BEGIN' });
    try {
      await client.query(`SET LOCAL session_replication_role = replica; SET LOCAL synchronous_commit = off; SET LOCAL work_mem = '128MB';
                          SET LOCAL maintenance_work_mem = '512MB'; SELECT setseed(0.18)`);
      await client.query(`LOCK TABLE ${writtenTables.join(', ')} IN EXCLUSIVE MODE`);
      // Indexes that back no constraint (primary keys stay): a sorted build after the load is
      // several times faster than a million scattered inserts into each of them.
      const indexes = await client.query<{ name: string; definition: string }>(
        `SELECT i.indexname AS name, i.indexdef AS definition FROM pg_indexes i
         WHERE i.schemaname = current_schema() AND i.tablename = ANY($1::text[])
           AND i.indexname <> ALL($2::text[])
           AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = format('%I.%I', i.schemaname, i.indexname)::regclass)`,
        [rebuiltTables, keptIndexes],
      );
      for (const index of indexes.rows) await client.query(`DROP INDEX ${pg.escapeIdentifier(index.name)}`);
      for (const step of statements(options, salt)) {
        const at = Date.now();
        await client.query(step.sql);
        log(`preload: ${step.label} (${((Date.now() - at) / 1000).toFixed(1)} s)`);
      }
      const built = Date.now();
      for (const index of indexes.rows) {
        const at = Date.now();
        await client.query(index.definition);
        if (process.env.WALLETFLOW_PRELOAD_VERBOSE)
          log(`preload:   ${index.name} (${((Date.now() - at) / 1000).toFixed(1)} s)`);
      }
      log(`preload: ${indexes.rows.length} indexes built again (${((Date.now() - built) / 1000).toFixed(1)} s)`);
      const byStatus = await client.query<{ status: string; n: string }>(
        'SELECT status::text AS status, count(*) AS n FROM preload_funding GROUP BY status ORDER BY status',
      );
      await client.query({ text: 'COMMIT' });
      const at = Date.now();
      // A database in steady state, as production's is: VACUUM sets the pages' visibility and hint
      // bits now (else the first reads after the load write them, and autovacuum runs during the
      // measurement), ANALYZE gives the planner the new sizes, CHECKPOINT writes the load out.
      await client.query(`VACUUM (ANALYZE) ${writtenTables.join(', ')}`);
      await client.query({ text: 'CHECKPOINT' });
      log(`preload: vacuum, analyze and checkpoint (${((Date.now() - at) / 1000).toFixed(1)} s)`);
      return preloadSummarySchema.parse({
        fundings: options.fundings,
        payments: options.payments,
        links: options.links,
        fundingEvents: (await count(client, 'SELECT count(*) AS n FROM funding_event')) - before.fundingEvents,
        paymentEvents: (await count(client, 'SELECT count(*) AS n FROM payment_event')) - before.paymentEvents,
        ledgerTransactions:
          (await count(client, 'SELECT count(*) AS n FROM ledger_transaction')) - before.ledgerTransactions,
        ledgerEntries: (await count(client, 'SELECT count(*) AS n FROM ledger_entry')) - before.ledgerEntries,
        webhookEvents: (await count(client, 'SELECT count(*) AS n FROM webhook_event')) - before.webhookEvents,
        fundingsByStatus: Object.fromEntries(byStatus.rows.map((row) => [row.status, Number(row.n)])),
        seconds: Math.round((Date.now() - started) / 100) / 10,
      });
    } catch (error) {
      await client.query({ text: 'ROLLBACK' }).catch(() => undefined);
      if (error instanceof PreloadError) throw error;
      throw new PreloadError('PRELOAD_FAILED', `preload failed: ${(error as Error).message}`);
    }
  } finally {
    await client.end();
  }
}
