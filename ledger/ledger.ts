// The partner's double-entry ledger (docs/ledger.md, contract-decisions section 10): the one module
// that writes the ledger_account, ledger_transaction and ledger_entry tables. Every posting is a
// transaction whose entries sum to zero (checked by the database at the end of the statement that
// writes them), idempotent by its reference; a funding's hold is a pending transfer that is posted
// or released exactly once (the settling transaction is unique per hold). Balances are moved by
// the database's entry trigger and floors kept by a CHECK: a hold or debit that would overdraw
// fails on the row, never after a read.
// Every function that writes takes the caller's transaction, so the funding or payment record can
// post in the same transaction as the state change it accounts for.
import { Prisma, type LedgerAccountKind, type LedgerTransactionKind } from '../generated/prisma/client.ts';
import {
  sourceAccount,
  systemAccounts,
  userAccount,
  type AccountView,
  type AdjustmentView,
  type FundingSource,
  type LedgerEntryView,
  type PaymentPurpose,
} from '../domain/ledger.ts';
import type { Database } from '../lib/database.ts';
import { MAX_BIGINT } from '../lib/page-cursor.ts';
import { amountOf, fromNumeric, toNumeric } from '../domain/money.ts';

export type LedgerClient = Prisma.TransactionClient | Database;

/** One leg of a transaction: signed thousandths (positive credits the account). */
export interface Leg {
  account: string;
  amount: bigint;
  /** A hold or its reversal: moves `pending` (held), not `balance`. */
  pending?: boolean;
}

export interface Posting {
  reference: string;
  kind: 'HOLD' | 'POST' | 'RELEASE' | 'ADJUSTMENT' | 'PAYMENT';
  currency: string;
  legs: Leg[];
  settlesId?: bigint;
  fundingId?: string;
  paymentId?: string;
  reason?: string;
  fingerprint?: string;
  /** Who posted it, when a person did (an adjustment: the ops key's name); absent: walletflow itself. */
  actor?: string;
}

/** Not enough available on `account`: nothing of the caller's transaction is kept. */
export class InsufficientFundsError extends Error {
  readonly code = 'INSUFFICIENT_FUNDS';
  constructor(
    readonly account: string,
    readonly currency: string,
  ) {
    super(`not enough available on ${account}`);
    this.name = 'InsufficientFundsError';
  }
}

export const holdReference = (fundingId: string) => `funding:${fundingId}:hold`;
export const postReference = (fundingId: string) => `funding:${fundingId}:post`;
export const releaseReference = (fundingId: string) => `funding:${fundingId}:release`;
export const paymentReference = (paymentId: string) => `payment:${paymentId}:post`;
export const adjustmentReference = (idempotencyKey: string) => `adjustment:${idempotencyKey}`;

export function accountKind(account: string): LedgerAccountKind {
  if (account.startsWith('USER:')) return 'USER';
  if ((systemAccounts as readonly string[]).includes(account)) return account as LedgerAccountKind;
  throw new RangeError(`not a ledger account: ${account}`);
}

/** True for the database's refusal of a change that would take an account below its floor. */
function isFloorViolation(error: unknown): boolean {
  for (let current: unknown = error, depth = 0; current && depth < 5; depth += 1) {
    const text = `${(current as { message?: unknown }).message ?? ''} ${JSON.stringify((current as { meta?: unknown }).meta ?? '')}`;
    if (text.includes('ledger_account_floor')) return true;
    current = (current as { cause?: unknown }).cause;
  }
  return false;
}

export interface LedgerOptions {
  /** TREASURY_LIMIT in thousandths: how far the treasury may go below zero; null: no limit. */
  treasuryLimit?: bigint | null;
}

/** The counter leg of an adjustment's two entries: TREASURY, unless the treasury itself was adjusted (CAPITAL). */
function counterAccountOf(entries: Array<{ account: string }>): string {
  return entries.some((entry) => entry.account === 'CAPITAL') ? 'CAPITAL' : 'TREASURY';
}

export function createLedger(options: LedgerOptions = {}) {
  const treasuryFloor =
    options.treasuryLimit === undefined || options.treasuryLimit === null ? null : -options.treasuryLimit;
  const floorOf = (account: string): bigint | null =>
    account === 'TREASURY' ? treasuryFloor : account.startsWith('USER:') ? 0n : null;

  /** Creates missing accounts with their kind and floor (an existing account is left as it is). */
  async function ensureAccounts(tx: LedgerClient, accounts: string[], currency: string): Promise<void> {
    const rows = [...new Set(accounts)].sort().map((account) => {
      const floor = floorOf(account);
      return Prisma.sql`(${account}, ${currency}, ${accountKind(account)}::"LedgerAccountKind", ${account.startsWith('USER:') ? account.slice(5) : null},
        ${floor === null ? null : toNumeric(floor)}::numeric, ${account === 'TREASURY' && floor !== null ? toNumeric(floor) : null}::numeric)`;
    });
    await tx.$executeRaw`INSERT INTO ledger_account (account, currency, kind, partner_user_id, floor, limit_floor) VALUES ${Prisma.join(rows)} ON CONFLICT DO NOTHING`;
  }

  /**
   * Writes a transaction and its entries once per reference (and once per settled hold); answers
   * its id and whether this call wrote it. Entries go in account order, so two transactions lock
   * the same accounts in the same order (no deadlock). Throws InsufficientFundsError when a leg
   * would take a floored account below its floor.
   */
  async function post(tx: Prisma.TransactionClient, posting: Posting): Promise<{ id: bigint; created: boolean }> {
    const inserted = await tx.$queryRaw<Array<{ id: bigint }>>`
      INSERT INTO ledger_transaction (reference, kind, currency, settles_id, funding_id, payment_id, reason, fingerprint, actor)
      VALUES (${posting.reference}, ${posting.kind}::"LedgerTransactionKind", ${posting.currency}, ${posting.settlesId ?? null}::bigint,
              ${posting.fundingId ?? null}::uuid, ${posting.paymentId ?? null}::uuid, ${posting.reason ?? null}, ${posting.fingerprint ?? null}, ${posting.actor?.slice(0, 128) ?? null})
      ON CONFLICT DO NOTHING RETURNING id`;
    const row = inserted[0];
    if (!row) {
      const existing = await tx.ledgerTransaction.findUnique({
        where: { reference: posting.reference },
        select: { id: true },
      });
      return { id: existing?.id ?? -1n, created: false };
    }
    await ensureAccounts(
      tx,
      posting.legs.map((leg) => leg.account),
      posting.currency,
    );
    // Stable sort: within one account the legs keep their order (a hold's reversal before its post).
    const legs = [...posting.legs].sort((a, b) => (a.account < b.account ? -1 : a.account > b.account ? 1 : 0));
    const values = legs.map(
      (leg) =>
        Prisma.sql`(${row.id}::bigint, ${leg.account}, ${posting.currency}, ${toNumeric(leg.amount)}::numeric, ${leg.pending ?? false})`,
    );
    try {
      await tx.$executeRaw`INSERT INTO ledger_entry (transaction_id, account, currency, amount, pending) VALUES ${Prisma.join(values)}`;
    } catch (error) {
      if (!isFloorViolation(error)) throw error;
      const debited =
        legs.find((leg) => leg.amount < 0n && floorOf(leg.account) !== null) ?? legs.find((leg) => leg.amount < 0n);
      throw new InsufficientFundsError(debited?.account ?? 'unknown', posting.currency);
    }
    return { id: row.id, created: true };
  }

  /** The open hold of a funding: its transaction, source account and amount (positive); null when none or settled. */
  async function openHold(
    tx: LedgerClient,
    fundingId: string,
  ): Promise<{ id: bigint; account: string; currency: string; amount: bigint } | null> {
    const rows = await tx.$queryRaw<Array<{ id: bigint; account: string; currency: string; amount: Prisma.Decimal }>>`
      SELECT t.id, e.account, t.currency, e.amount FROM ledger_transaction t JOIN ledger_entry e ON e.transaction_id = t.id
      WHERE t.reference = ${holdReference(fundingId)} AND e.amount < 0
        AND NOT EXISTS (SELECT 1 FROM ledger_transaction s WHERE s.settles_id = t.id)`;
    const row = rows[0];
    return row ? { id: row.id, account: row.account, currency: row.currency, amount: -fromNumeric(row.amount) } : null;
  }

  /**
   * The second phase for many fundings at once (a chunk of a batch's items), as `settleFunding`
   * writes it for one: a POST (the hold reversed, the source debited, WALLET_CLEARING credited)
   * or a RELEASE (the hold reversed) settling each open hold, once; entries in account order, as
   * every posting writes them. A hold already settled is skipped. Answers how many it settled.
   */
  async function settleMany(
    tx: Prisma.TransactionClient,
    settlements: ReadonlyArray<{ fundingId: string; outcome: 'post' | 'release' }>,
  ): Promise<number> {
    if (settlements.length === 0) return 0;
    const holdReferences = settlements.map((item) => holdReference(item.fundingId));
    const references = settlements.map((item) =>
      item.outcome === 'post' ? postReference(item.fundingId) : releaseReference(item.fundingId),
    );
    const kinds = settlements.map((item) => (item.outcome === 'post' ? 'POST' : 'RELEASE'));
    if (settlements.some((item) => item.outcome === 'post')) {
      const currencies = await tx.$queryRaw<Array<{ currency: string }>>`
        SELECT DISTINCT currency FROM ledger_transaction WHERE reference = ANY(${holdReferences}::text[])`;
      for (const { currency } of currencies) await ensureAccounts(tx, ['WALLET_CLEARING'], currency);
    }
    const settled = await tx.$queryRaw<Array<{ count: bigint }>>`
      WITH input AS (SELECT * FROM unnest(${holdReferences}::text[], ${references}::text[], ${kinds}::text[]) AS i(hold_reference, reference, kind)),
      open AS (
        SELECT h.id, h.funding_id, h.currency, input.reference, input.kind FROM ledger_transaction h JOIN input ON input.hold_reference = h.reference
        WHERE h.kind = 'HOLD' AND NOT EXISTS (SELECT 1 FROM ledger_transaction s WHERE s.settles_id = h.id)),
      settle AS (
        INSERT INTO ledger_transaction (reference, kind, currency, funding_id, settles_id)
        SELECT open.reference, open.kind::"LedgerTransactionKind", open.currency, open.funding_id, open.id FROM open
        ON CONFLICT DO NOTHING
        RETURNING id, settles_id, currency, kind),
      legs AS (
        -- The hold reversed (both its legs, pending) ...
        SELECT settle.id, e.account, settle.currency, -e.amount AS amount, true AS pending, 0 AS step
        FROM settle JOIN ledger_entry e ON e.transaction_id = settle.settles_id
        UNION ALL
        -- ... and, for a POST, the source debited and WALLET_CLEARING credited.
        SELECT settle.id, leg.account, settle.currency, leg.amount, false, 1
        FROM settle JOIN ledger_entry e ON e.transaction_id = settle.settles_id AND e.amount < 0
        CROSS JOIN LATERAL (VALUES (e.account, e.amount), ('WALLET_CLEARING'::varchar, -e.amount)) AS leg(account, amount)
        WHERE settle.kind = 'POST'),
      entries AS (
        INSERT INTO ledger_entry (transaction_id, account, currency, amount, pending)
        SELECT id, account, currency, amount, pending FROM legs ORDER BY account, id, step
        RETURNING 1)
      SELECT COUNT(*)::bigint AS count FROM settle`;
    return Number(settled[0]?.count ?? 0n);
  }

  return {
    ensureAccounts,
    post,
    openHold,

    /**
     * The two-phase funding's first phase: `amount` held on the source (pending, TigerBeetle's
     * pending transfer to IN_FLIGHT). Throws InsufficientFundsError when the source's available
     * does not cover it. Once per funding (its reference).
     */
    hold: (
      tx: Prisma.TransactionClient,
      input: { fundingId: string; source: FundingSource; currency: string; amount: bigint },
    ) =>
      post(tx, {
        reference: holdReference(input.fundingId),
        kind: 'HOLD',
        currency: input.currency,
        fundingId: input.fundingId,
        legs: [
          { account: sourceAccount(input.source), amount: -input.amount, pending: true },
          { account: 'IN_FLIGHT', amount: input.amount, pending: true },
        ],
      }),

    /**
     * The first phase for many fundings at once (a batch's items): one hold each, as `hold` writes
     * it, in one statement. The source's floor is checked as the entries land: a total the source
     * does not cover throws InsufficientFundsError and the caller's transaction stores nothing.
     */
    async holdMany(
      tx: Prisma.TransactionClient,
      input: { source: FundingSource; currency: string; holds: ReadonlyArray<{ fundingId: string; amount: bigint }> },
    ): Promise<void> {
      if (input.holds.length === 0) return;
      const account = sourceAccount(input.source);
      await ensureAccounts(tx, [account, 'IN_FLIGHT'], input.currency);
      const ids = input.holds.map((hold) => hold.fundingId);
      const references = ids.map(holdReference);
      const amounts = input.holds.map((hold) => toNumeric(hold.amount));
      try {
        await tx.$executeRaw`
          WITH input AS (SELECT * FROM unnest(${ids}::uuid[], ${references}::text[], ${amounts}::numeric[]) AS i(funding_id, reference, amount)),
          held AS (
            INSERT INTO ledger_transaction (reference, kind, currency, funding_id)
            SELECT reference, 'HOLD'::"LedgerTransactionKind", ${input.currency}, funding_id FROM input
            RETURNING id, funding_id)
          INSERT INTO ledger_entry (transaction_id, account, currency, amount, pending)
          SELECT held.id, leg.account, ${input.currency}, leg.amount, true
          FROM held JOIN input USING (funding_id)
          CROSS JOIN LATERAL (VALUES (${account}::varchar, -input.amount), ('IN_FLIGHT'::varchar, input.amount)) AS leg(account, amount)
          ORDER BY leg.account, held.id`;
      } catch (error) {
        if (isFloorViolation(error)) throw new InsufficientFundsError(account, input.currency);
        throw error;
      }
    },

    /**
     * The holds of a batch's items just stored (PENDING fundings of `batchId`): one hold each, as
     * `hold` writes it, all in one statement made from the funding rows (100,000 items send no
     * list of ids back), its entries checked at its own end (the statement trigger
     * ledger_entry_1_balanced, before the balances move): the source and IN_FLIGHT accounts are locked by its last
     * step, the
     * statement trigger that moves them, to the caller's commit, which
     * the caller makes its next step. A total the source does not cover throws
     * InsufficientFundsError and the caller's transaction stores nothing.
     */
    async holdBatchItems(
      tx: Prisma.TransactionClient,
      input: { batchId: string; source: FundingSource; currency: string },
    ): Promise<void> {
      const account = sourceAccount(input.source);
      await ensureAccounts(tx, [account, 'IN_FLIGHT'], input.currency);
      try {
        await tx.$executeRaw`
          WITH held AS (
            INSERT INTO ledger_transaction (reference, kind, currency, funding_id)
            SELECT 'funding:' || f.id::text || ':hold', 'HOLD'::"LedgerTransactionKind", ${input.currency}, f.id
            FROM funding f WHERE f.batch_id = ${input.batchId}::uuid AND f.status = 'PENDING'::"FundingStatus"
            RETURNING id, funding_id)
          -- Each hold's amount by the funding's primary key (a second scan of the batch's rows here
          -- was joined row by row: 100,000 × 100,000).
          INSERT INTO ledger_entry (transaction_id, account, currency, amount, pending)
          SELECT held.id, leg.account, ${input.currency}, leg.amount, true
          FROM held JOIN funding f ON f.id = held.funding_id
          CROSS JOIN LATERAL (VALUES (${account}::varchar, -f.amount), ('IN_FLIGHT'::varchar, f.amount)) AS leg(account, amount)
          ORDER BY leg.account, held.id`;
      } catch (error) {
        if (isFloorViolation(error)) throw new InsufficientFundsError(account, input.currency);
        throw error;
      }
    },

    /**
     * Releases the open holds of many fundings at once (a batch's items that will never start), as
     * `settleFunding` releases one: a RELEASE settling each hold, once. Answers how many it released.
     * Its entries are checked at the statement’s end (ledger_entry_1_balanced), so the accounts are
     * locked from its last step to the commit.
     */
    releaseMany: (tx: Prisma.TransactionClient, fundingIds: readonly string[]): Promise<number> =>
      settleMany(
        tx,
        fundingIds.map((fundingId) => ({ fundingId, outcome: 'release' as const })),
      ),

    /**
     * Releases the open holds of a batch's items that its end cancelled (FAILED with code
     * CANCELLED), as releaseMany releases them, in one statement made from the funding rows: a
     * cancel of 100,000 items sends no list of ids (three arrays of 100,000 strings, which the API
     * built and Prisma serialised). Answers how many it released.
     */
    async releaseBatchItems(tx: Prisma.TransactionClient, input: { batchId: string }): Promise<number> {
      const released = await tx.$queryRaw<Array<{ count: bigint }>>`
        WITH open AS (
          SELECT h.id, h.funding_id, h.currency, 'funding:' || f.id::text || ':release' AS reference
          FROM funding f JOIN ledger_transaction h ON h.reference = 'funding:' || f.id::text || ':hold'
          WHERE f.batch_id = ${input.batchId}::uuid AND f.status = 'FAILED'::"FundingStatus" AND f.error_code = 'CANCELLED'
            AND h.kind = 'HOLD' AND NOT EXISTS (SELECT 1 FROM ledger_transaction s WHERE s.settles_id = h.id)),
        settle AS (
          INSERT INTO ledger_transaction (reference, kind, currency, funding_id, settles_id)
          SELECT open.reference, 'RELEASE'::"LedgerTransactionKind", open.currency, open.funding_id, open.id FROM open
          ON CONFLICT DO NOTHING
          RETURNING id, settles_id, currency),
        entries AS (
          -- The hold reversed (both its legs, pending), in account order as every posting.
          INSERT INTO ledger_entry (transaction_id, account, currency, amount, pending)
          SELECT settle.id, e.account, settle.currency, -e.amount, true
          FROM settle JOIN ledger_entry e ON e.transaction_id = settle.settles_id
          ORDER BY e.account, settle.id
          RETURNING 1)
        SELECT COUNT(*)::bigint AS count FROM settle`;
      return Number(released[0]?.count ?? 0n);
    },

    settleMany,

    /**
     * The second phase, exactly once: APPROVED posts the hold to WALLET_CLEARING, any other final
     * state releases it. Nothing when the funding has no hold (stored before the ledger existed) or
     * it is already settled. Answers what this call did.
     */
    async settleFunding(
      tx: Prisma.TransactionClient,
      fundingId: string,
      outcome: 'post' | 'release',
    ): Promise<'posted' | 'released' | 'none'> {
      const hold = await openHold(tx, fundingId);
      if (!hold) return 'none';
      const reverse: Leg[] = [
        { account: hold.account, amount: hold.amount, pending: true },
        { account: 'IN_FLIGHT', amount: -hold.amount, pending: true },
      ];
      const posted = await post(tx, {
        reference: outcome === 'post' ? postReference(fundingId) : releaseReference(fundingId),
        kind: outcome === 'post' ? 'POST' : 'RELEASE',
        currency: hold.currency,
        fundingId,
        settlesId: hold.id,
        legs:
          outcome === 'post'
            ? [
                ...reverse,
                { account: hold.account, amount: -hold.amount },
                { account: 'WALLET_CLEARING', amount: hold.amount },
              ]
            : reverse,
      });
      return posted.created ? (outcome === 'post' ? 'posted' : 'released') : 'none';
    },

    /** A SUCCEEDED payment lands: PURCHASE in MERCHANT_REVENUE, DEPOSIT on the link's user. Once per payment. */
    payment: (
      tx: Prisma.TransactionClient,
      input: { paymentId: string; purpose: PaymentPurpose; partnerUserId: string; currency: string; amount: bigint },
    ) =>
      post(tx, {
        reference: paymentReference(input.paymentId),
        kind: 'PAYMENT',
        currency: input.currency,
        paymentId: input.paymentId,
        legs: [
          { account: 'WALLET_CLEARING', amount: -input.amount },
          {
            account: input.purpose === 'DEPOSIT' ? userAccount(input.partnerUserId) : 'MERCHANT_REVENUE',
            amount: input.amount,
          },
        ],
      }),

    /**
     * An ops adjustment of `account` (signed: negative debits it), the other leg the TREASURY (the
     * treasury's own: CAPITAL), once per Idempotency-Key: a repeated key with the same body answers
     * the stored adjustment, with another body 'key-reused'. A debit below available throws
     * InsufficientFundsError (nothing stored).
     */
    async adjust(
      database: Database,
      input: {
        idempotencyKey: string;
        account: string;
        currency: string;
        amount: bigint;
        reason: string;
        fingerprint: string;
        actor?: string;
      },
    ): Promise<{ kind: 'created' | 'existing'; adjustment: AdjustmentView } | { kind: 'key-reused' }> {
      const counterAccount = input.account === 'TREASURY' ? 'CAPITAL' : 'TREASURY';
      const reference = adjustmentReference(input.idempotencyKey);
      const created = await database.$transaction((tx) =>
        post(tx, {
          reference,
          kind: 'ADJUSTMENT',
          currency: input.currency,
          reason: input.reason,
          fingerprint: input.fingerprint,
          ...(input.actor ? { actor: input.actor } : {}),
          legs: [
            { account: input.account, amount: input.amount },
            { account: counterAccount, amount: -input.amount },
          ],
        }),
      );
      const stored = await database.ledgerTransaction.findUniqueOrThrow({ where: { reference } });
      if (!created.created && stored.fingerprint !== input.fingerprint) return { kind: 'key-reused' };
      const entries = await database.ledgerEntry.findMany({
        where: { transactionId: stored.id },
        orderBy: { id: 'asc' },
      });
      const leg = entries.find((entry) => entry.account !== counterAccountOf(entries)) ?? entries[0]!;
      return {
        kind: created.created ? 'created' : 'existing',
        adjustment: {
          adjustmentId: stored.id.toString(),
          account: leg.account,
          counterAccount: leg.account === 'TREASURY' ? 'CAPITAL' : 'TREASURY',
          amount: amountOf(fromNumeric(leg.amount), stored.currency),
          reason: stored.reason ?? '',
          reference,
          createdAt: stored.createdAt.toISOString(),
        },
      };
    },

    /**
     * Sets the treasury's floor from TREASURY_LIMIT (unset: no floor). A treasury already past the limit (it drew
     * before the limit was set, or lowered) gets the floor where it stands: it draws nothing more, and every posting
     * that brings money back raises the floor with it, up to the limit's (`limit_floor`, read by the ledger's entry
     * trigger: migration 20261206100000). Answers the floor stored, and whether the treasury is past the limit.
     */
    async applyTreasuryLimit(
      database: Database,
      currency = 'PHP',
    ): Promise<{ floor: string | null; pastLimit: boolean }> {
      await ensureAccounts(database, ['TREASURY'], currency);
      const limitFloor = treasuryFloor === null ? null : toNumeric(treasuryFloor);
      const [row] = await database.$queryRaw<Array<{ floor: Prisma.Decimal | null; past: boolean }>>`
        UPDATE ledger_account
        SET limit_floor = ${limitFloor}::numeric,
          floor = CASE WHEN ${limitFloor}::numeric IS NULL THEN NULL ELSE LEAST(${limitFloor}::numeric, balance + pending) END
        WHERE account = 'TREASURY' AND currency = ${currency}
        RETURNING floor, (${limitFloor}::numeric IS NOT NULL AND balance + pending < ${limitFloor}::numeric) AS past`;
      return {
        floor: row?.floor == null ? null : amountOf(fromNumeric(row.floor), currency).value,
        pastLimit: row?.past ?? false,
      };
    },

    /** An account as the ops API shows it: zeros for an account with no entries yet. */
    async account(
      database: LedgerClient,
      account: string,
      currency = 'PHP',
    ): Promise<AccountView & { floor: string | null }> {
      const row = await database.ledgerAccount.findUnique({ where: { account_currency: { account, currency } } });
      const balance = row ? fromNumeric(row.balance) : 0n;
      const pending = row ? fromNumeric(row.pending) : 0n;
      // IN_FLIGHT's pending entries are the credits of every open hold: what it holds.
      const inFlight = account === 'IN_FLIGHT';
      const shown = inFlight ? balance + pending : balance;
      const held = inFlight ? 0n : -pending;
      // The floor the database enforces; an account with no row yet gets its own when its first entry creates it.
      const floor = row
        ? row.floor
        : floorOf(account) === null
          ? null
          : new Prisma.Decimal(toNumeric(floorOf(account)!));
      return {
        account,
        balance: amountOf(shown, currency),
        held: amountOf(held, currency),
        available: amountOf(shown - held, currency),
        floor: floor === null ? null : amountOf(fromNumeric(floor), currency).value,
      };
    },

    /** A page of entries, newest first; `cursor` is the last entry id of the previous page. */
    async entries(
      database: Database,
      query: EntriesQuery,
    ): Promise<{ items: LedgerEntryView[]; nextCursor: string | null }> {
      const page = await entryPage(database, query);
      return {
        items: page.items.map(({ kind: _kind, actor: _actor, reason: _reason, ...entry }) => entry),
        nextCursor: page.nextCursor,
      };
    },

    /** A page of entries with what moved each (its kind, an adjustment's reason and who posted it): the console's. */
    accountEntries: (
      database: Database,
      query: EntriesQuery,
    ): Promise<{ items: LedgerEntryDetail[]; nextCursor: string | null }> => entryPage(database, query),

    /**
     * The entries of a funding's or a payment's transactions (its hold, post or release; its posting), oldest first.
     */
    async entriesOf(
      database: Database,
      record: { fundingId: string } | { paymentId: string },
    ): Promise<LedgerEntryDetail[]> {
      const transactions = await database.ledgerTransaction.findMany({
        where: 'fundingId' in record ? { fundingId: record.fundingId } : { paymentId: record.paymentId },
        orderBy: { id: 'asc' },
        take: 20,
      });
      const entries = await database.ledgerEntry.findMany({
        where: { transactionId: { in: transactions.map((transaction) => transaction.id) } },
        orderBy: { id: 'asc' },
      });
      return withTransactions(entries, transactions);
    },

    /** The currencies an account has a row in (none: it never had an entry). */
    currenciesOf: accountCurrencies,
  };
}

export interface EntriesQuery {
  account?: string;
  /** With an account: only its entries in this currency (the (account, currency, id) index gives their order). */
  currency?: string;
  limit: number;
  cursor?: string;
}

/**
 * An entry with what its transaction was: the kind, who posted it (an adjustment's person or key; null: walletflow) and
 * why.
 */
export type LedgerEntryDetail = LedgerEntryView & {
  kind: LedgerTransactionKind;
  actor: string | null;
  reason: string | null;
};

type EntryRow = {
  id: bigint;
  transactionId: bigint;
  account: string;
  currency: string;
  amount: Prisma.Decimal;
  pending: boolean;
  at: Date;
};
type TransactionRow = {
  id: bigint;
  reference: string;
  kind: LedgerTransactionKind;
  actor: string | null;
  reason: string | null;
};

/**
 * Entries in their order, each with what its transaction was (read apart: an entry names its transaction by id, with no
 * relation).
 */
function withTransactions(entries: readonly EntryRow[], transactions: readonly TransactionRow[]): LedgerEntryDetail[] {
  const byId = new Map(transactions.map((transaction) => [transaction.id, transaction]));
  return entries.map((entry) => entryDetail({ ...entry, transaction: byId.get(entry.transactionId)! }));
}

const entryDetail = (entry: EntryRow & { transaction: TransactionRow }): LedgerEntryDetail => ({
  entryId: entry.id.toString(),
  transactionId: entry.transactionId.toString(),
  account: entry.account,
  amount: amountOf(fromNumeric(entry.amount), entry.currency),
  pending: entry.pending,
  reference: entry.transaction.reference,
  at: entry.at.toISOString(),
  kind: entry.transaction.kind,
  actor: entry.transaction.actor,
  reason: entry.transaction.reason,
});

/** The currencies an account has a row in (none: it never had an entry). */
async function accountCurrencies(database: Database, account: string): Promise<string[]> {
  const rows = await database.ledgerAccount.findMany({
    where: { account },
    select: { currency: true },
    orderBy: { currency: 'asc' },
  });
  return rows.map((row) => row.currency);
}

async function entryPage(
  database: Database,
  query: EntriesQuery,
): Promise<{ items: LedgerEntryDetail[]; nextCursor: string | null }> {
  const before = query.cursor ? BigInt(Buffer.from(query.cursor, 'base64url').toString('utf8')) : null;
  const read = (where: Prisma.LedgerEntryWhereInput) =>
    database.ledgerEntry.findMany({
      where: { ...where, ...(before !== null ? { id: { lt: before } } : {}) },
      orderBy: { id: 'desc' },
      take: query.limit + 1,
    });
  // An account's entries are read a currency at a time, each through the (account, currency, id) index in its order,
  // then merged: without its currency the planner walked every entry by id from the newest until it found the
  // account's, the whole ledger for an account whose entries are old.
  const currencies = query.account && !query.currency ? await accountCurrencies(database, query.account) : [];
  const rows = !query.account
    ? await read({})
    : query.currency
      ? await read({ account: query.account, currency: query.currency })
      : (await Promise.all(currencies.map((currency) => read({ account: query.account, currency }))))
          .flat()
          .sort((a, b) => (a.id < b.id ? 1 : a.id > b.id ? -1 : 0))
          .slice(0, query.limit + 1);
  const page = rows.slice(0, query.limit);
  const transactions = await database.ledgerTransaction.findMany({
    where: { id: { in: [...new Set(page.map((entry) => entry.transactionId))] } },
    select: { id: true, reference: true, kind: true, actor: true, reason: true },
  });
  const last = page.at(-1);
  return {
    items: withTransactions(page, transactions),
    nextCursor: rows.length > query.limit && last ? Buffer.from(last.id.toString()).toString('base64url') : null,
  };
}

export type Ledger = ReturnType<typeof createLedger>;

/** A ledger entries cursor as clients send it back: the base64url of a positive entry id (a PostgreSQL bigint). */
export function isEntriesCursor(cursor: string): boolean {
  const id = Buffer.from(cursor, 'base64url').toString('utf8');
  return /^[1-9]\d{0,18}$/.test(id) && BigInt(id) <= MAX_BIGINT;
}
