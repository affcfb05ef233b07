// The ledger's invariants, checked by the soak and the tests (docs/ledger.md): every transaction
// sums to zero; every balance and held amount equals the sum of its entries; no available below its
// floor; every final funding's hold settled and every open hold a funding still under way; the
// accounts sum to zero; IN_FLIGHT is what open holds hold; and, given the wallet's ledger,
// WALLET_CLEARING is what the wallet approved minus what it charged.
import type { Database } from '../lib/database.ts';
import { finalStatusLiterals } from '../fundings/funding-record.ts';
import { formatAmount, fromNumeric } from '../domain/money.ts';

export interface LedgerInvariantReport {
  violations: string[];
  /** Balances (posted + pending for IN_FLIGHT) by account kind, PHP. */
  totals: { treasury: string; users: string; inFlight: string; clearing: string; revenue: string; capital: string };
  checked: { transactions: number; accounts: number; holds: number };
}

export interface WalletWitness {
  /** Σ amounts of the wallet's APPROVED transfers that are walletflow's fundings. */
  approvedTransfers: bigint;
  /** Σ amounts of the wallet's SUCCEEDED payments that are walletflow's payments. */
  succeededPayments: bigint;
}

export async function checkLedgerInvariants(
  database: Database,
  options: { currency?: string; wallet?: WalletWitness } = {},
): Promise<LedgerInvariantReport> {
  const currency = options.currency ?? 'PHP';
  const violations: string[] = [];
  const unbalanced = await database.$queryRaw<Array<{ id: bigint }>>`
    SELECT t.id FROM ledger_transaction t LEFT JOIN ledger_entry e ON e.transaction_id = t.id
    GROUP BY t.id HAVING COALESCE(SUM(e.amount) FILTER (WHERE NOT e.pending), 0) <> 0 OR COALESCE(SUM(e.amount) FILTER (WHERE e.pending), 0) <> 0`;
  for (const row of unbalanced) violations.push(`transaction ${row.id} does not sum to zero`);

  const drift = await database.$queryRaw<Array<{ account: string; currency: string }>>`
    SELECT a.account, a.currency FROM ledger_account a
    LEFT JOIN (SELECT account, currency, SUM(amount) FILTER (WHERE NOT pending) AS posted, SUM(amount) FILTER (WHERE pending) AS held
               FROM ledger_entry GROUP BY account, currency) e ON e.account = a.account AND e.currency = a.currency
    WHERE a.balance <> COALESCE(e.posted, 0) OR a.pending <> COALESCE(e.held, 0)`;
  for (const row of drift)
    violations.push(`account ${row.account} ${row.currency}: balance or held is not the sum of its entries`);

  const belowFloor = await database.$queryRaw<Array<{ account: string }>>`
    SELECT account FROM ledger_account WHERE floor IS NOT NULL AND balance + pending < floor`;
  for (const row of belowFloor) violations.push(`account ${row.account}: available below its floor`);

  const unsettled = await database.$queryRaw<Array<{ id: string; status: string }>>`
    SELECT f.id::text AS id, f.status::text AS status FROM ledger_transaction h JOIN funding f ON f.id = h.funding_id
    WHERE h.kind = 'HOLD' AND NOT EXISTS (SELECT 1 FROM ledger_transaction s WHERE s.settles_id = h.id)
      AND f.status IN (${finalStatusLiterals})`;
  for (const row of unsettled) violations.push(`funding ${row.id} is ${row.status} but its hold is not settled`);

  const wrongSettle = await database.$queryRaw<Array<{ id: string; status: string; kind: string }>>`
    SELECT f.id::text AS id, f.status::text AS status, s.kind::text AS kind FROM ledger_transaction s
    JOIN ledger_transaction h ON h.id = s.settles_id JOIN funding f ON f.id = h.funding_id
    WHERE (s.kind = 'POST' AND f.status <> 'APPROVED') OR (s.kind = 'RELEASE' AND f.status NOT IN ('DECLINED', 'REJECTED', 'FAILED'))`;
  for (const row of wrongSettle)
    violations.push(`funding ${row.id} is ${row.status} but its hold was settled by ${row.kind}`);

  const sums = await database.$queryRaw<Array<{ kind: string; total: unknown }>>`
    SELECT kind::text AS kind, SUM(balance + pending)::text AS total FROM ledger_account WHERE currency = ${currency} GROUP BY kind`;
  const total = (kind: string) => fromNumeric(String(sums.find((row) => row.kind === kind)?.total ?? '0'));
  const parts = {
    treasury: total('TREASURY'),
    users: total('USER'),
    inFlight: total('IN_FLIGHT'),
    clearing: total('WALLET_CLEARING'),
    revenue: total('MERCHANT_REVENUE'),
    capital: total('CAPITAL'),
  };
  const sum = Object.values(parts).reduce((a, b) => a + b, 0n);
  if (sum !== 0n)
    violations.push(
      `treasury + users + in-flight + clearing + revenue + capital is ${formatAmount(sum, currency)}, not 0`,
    );

  const openHolds = await database.$queryRaw<Array<{ total: unknown }>>`
    SELECT COALESCE(SUM(e.amount), 0)::text AS total FROM ledger_transaction h JOIN ledger_entry e ON e.transaction_id = h.id
    WHERE h.kind = 'HOLD' AND h.currency = ${currency} AND e.account = 'IN_FLIGHT'
      AND NOT EXISTS (SELECT 1 FROM ledger_transaction s WHERE s.settles_id = h.id)`;
  const inFlight = fromNumeric(String(openHolds[0]?.total ?? '0'));
  if (inFlight !== parts.inFlight)
    violations.push(
      `IN_FLIGHT is ${formatAmount(parts.inFlight, currency)} but open holds hold ${formatAmount(inFlight, currency)}`,
    );

  if (options.wallet) {
    const expected = options.wallet.approvedTransfers - options.wallet.succeededPayments;
    if (expected !== parts.clearing) {
      violations.push(
        `WALLET_CLEARING is ${formatAmount(parts.clearing, currency)} but the wallet approved − charged ${formatAmount(expected, currency)}`,
      );
    }
  }

  const [transactions, accounts, holds] = await Promise.all([
    database.ledgerTransaction.count(),
    database.ledgerAccount.count(),
    database.ledgerTransaction.count({ where: { kind: 'HOLD' } }),
  ]);
  const shown = (value: bigint) => formatAmount(value, currency);
  return {
    violations,
    totals: {
      treasury: shown(parts.treasury),
      users: shown(parts.users),
      inFlight: shown(parts.inFlight),
      clearing: shown(parts.clearing),
      revenue: shown(parts.revenue),
      capital: shown(parts.capital),
    },
    checked: { transactions, accounts, holds },
  };
}
