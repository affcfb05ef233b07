// A day of approved fundings planted at once, for `walletflow bench --settlement` and the
// settlement tests: the wallet's side through the sandbox's admin API (POST /_sandbox/transfers:
// executed transfers, nothing moved), walletflow's side written straight into PostgreSQL with
// set-based SQL in one transaction: each funding APPROVED with its transfer id and its timeline
// (PENDING, CREATING, EXECUTING, APPROVED on the day, in SETTLEMENT_TZ), its hold and the hold's
// post to WALLET_CLEARING from the treasury, as the records and the ledger write them for an
// approved funding. The ledger's triggers run (a statement each): the books still balance. 100,000
// fundings cannot go through the workflow in a bench's time; what the settlement reads is the same.
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import type { SandboxAdminClient } from '../sandbox/admin-client.ts';

export interface PlantedDay {
  date: string;
  fundings: number;
  /** The wallet's transfer ids of the fundings, in the order they were approved. */
  transferIds: string[];
  /** How long the sandbox's transfers and the rows took, s. */
  seconds: number;
}

/** Transfers the sandbox plants per call (its limit). */
const TRANSFERS_PER_CALL = 10_000;

/**
 * `count` fundings of `amount` (PHP) from the treasury, approved on `date` (YYYY-MM-DD in
 * `timeZone`) one after the other through the day, to a fresh sandbox user's wallet.
 */
export async function plantApprovedDay(
  deps: { databaseUrl: string; admin: Pick<SandboxAdminClient, 'createUser' | 'plantTransfers'> },
  input: { date: string; timeZone: string; count: number; amount?: string },
): Promise<PlantedDay> {
  const started = Date.now();
  const amount = input.amount ?? '1.00';
  const user = await deps.admin.createUser({ kycLevel: 'KYC1', balance: '0.00' });
  const transferIds: string[] = [];
  while (transferIds.length < input.count) {
    const count = Math.min(TRANSFERS_PER_CALL, input.count - transferIds.length);
    transferIds.push(...(await deps.admin.plantTransfers({ recipientUserId: user.userId, amount, count })).transferIds);
  }
  const salt = randomBytes(6).toString('hex');
  const client = new pg.Client({ connectionString: deps.databaseUrl });
  await client.connect();
  try {
    await client.query({ text: 'BEGIN' });
    await client.query(`SET LOCAL synchronous_commit = off; SET LOCAL work_mem = '64MB'`);
    await client.query({
      text: `CREATE TEMP TABLE planted ON COMMIT DROP AS
               SELECT t.i, gen_random_uuid() AS id, md5($4 || '-' || t.i) AS h, t.transfer_id, $2::numeric AS amount,
                      ($1::date::timestamp AT TIME ZONE $3) + make_interval(secs => 60 + (t.i - 1) * (82800.0 / $5)) AS approved_at
               FROM unnest($6::text[]) WITH ORDINALITY AS t(transfer_id, i)`,
      values: [input.date, amount, input.timeZone, salt, input.count, transferIds],
    });
    await client.query(`
      INSERT INTO funding (id, idempotency_key, request_fingerprint, workflow_id, status, recipient_type, cash_in_code_encrypted, cash_in_code_masked,
                           currency, amount, transfer_id, abandoned_transfer_ids, created_at, updated_at, owner_seen_at)
        SELECT p.id, 'planted-' || p.h, p.h || md5(p.h), 'funding-' || p.h, 'APPROVED', 'CODE', decode(p.h || md5(p.h) || substr(p.h, 1, 16), 'hex'),
               '*****' || lpad((p.i % 100)::text, 2, '0'), 'PHP', p.amount, p.transfer_id, ARRAY[]::text[],
               p.approved_at - interval '900 milliseconds', p.approved_at, p.approved_at
        FROM planted p ORDER BY p.id`);
    await client.query(`
      INSERT INTO funding_event (funding_id, status, request_reference_no, detail, at)
        SELECT p.id, e.status, e.ref, e.detail, p.approved_at - e.before
        FROM planted p CROSS JOIN LATERAL (VALUES
            ('PENDING'::"FundingStatus", NULL, 'funding requested by ops key bench', interval '900 milliseconds'),
            ('CREATING'::"FundingStatus", NULL, 'creating the transfer', interval '780 milliseconds'),
            ('EXECUTING'::"FundingStatus", substr(p.h, 1, 32), 'transfer created; executing', interval '500 milliseconds'),
            ('APPROVED'::"FundingStatus", substr(md5(p.h), 1, 32), NULL, interval '0')
          ) AS e(status, ref, detail, before)
        ORDER BY p.id`);
    await client.query(`
      INSERT INTO ledger_account (account, currency, kind)
        VALUES ('TREASURY', 'PHP', 'TREASURY'), ('IN_FLIGHT', 'PHP', 'IN_FLIGHT'), ('WALLET_CLEARING', 'PHP', 'WALLET_CLEARING')
        ON CONFLICT DO NOTHING`);
    // The holds, then their posts: what ledger.holdBatchItems and ledger.settleMany write, a statement each.
    await client.query(`
      WITH held AS (
        INSERT INTO ledger_transaction (reference, kind, currency, funding_id, created_at)
        SELECT 'funding:' || p.id::text || ':hold', 'HOLD', 'PHP', p.id, p.approved_at - interval '900 milliseconds' FROM planted p
        RETURNING id, funding_id)
      INSERT INTO ledger_entry (transaction_id, account, currency, amount, pending)
        SELECT held.id, leg.account, 'PHP', leg.amount, true
        FROM held JOIN planted p ON p.id = held.funding_id
        CROSS JOIN LATERAL (VALUES ('TREASURY'::varchar, -p.amount), ('IN_FLIGHT'::varchar, p.amount)) AS leg(account, amount)
        ORDER BY leg.account, held.id`);
    await client.query(`
      WITH posted AS (
        INSERT INTO ledger_transaction (reference, kind, currency, funding_id, settles_id, created_at)
        SELECT 'funding:' || p.id::text || ':post', 'POST', 'PHP', p.id, h.id, p.approved_at
        FROM planted p JOIN ledger_transaction h ON h.reference = 'funding:' || p.id::text || ':hold'
        RETURNING id, funding_id)
      INSERT INTO ledger_entry (transaction_id, account, currency, amount, pending)
        SELECT posted.id, leg.account, 'PHP', leg.amount, leg.pending
        FROM posted JOIN planted p ON p.id = posted.funding_id
        CROSS JOIN LATERAL (VALUES ('TREASURY'::varchar, p.amount, true), ('IN_FLIGHT'::varchar, -p.amount, true),
                                   ('TREASURY'::varchar, -p.amount, false), ('WALLET_CLEARING'::varchar, p.amount, false)) AS leg(account, amount, pending)
        ORDER BY leg.account, posted.id`);
    await client.query({ text: 'COMMIT' });
  } catch (error) {
    await client.query({ text: 'ROLLBACK' }).catch(() => undefined);
    throw error;
  } finally {
    await client.end();
  }
  // Fresh statistics, so the settlement's page queries are planned for the rows just written.
  const analyze = new pg.Client({ connectionString: deps.databaseUrl });
  await analyze.connect();
  try {
    await analyze.query('ANALYZE funding, funding_event, ledger_transaction');
  } finally {
    await analyze.end();
  }
  return {
    date: input.date,
    fundings: input.count,
    transferIds,
    seconds: Math.round((Date.now() - started) / 100) / 10,
  };
}
