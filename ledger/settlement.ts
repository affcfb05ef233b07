// Settlement of a day (contract-decisions section 10): walletflow's fundings that became APPROVED
// and payments that became SUCCEEDED on that day (in SETTLEMENT_TZ), each compared with the wallet
// service's record (retrieve per transfer; for payments, the audit of the successful execute
// call) and with the ledger's posting: matched, missing (no wallet record or no posting) or
// mismatched (another status or amount). Read-only.
import { Prisma } from '../generated/prisma/client.ts';
import type { Settlement, SettlementItem } from '../domain/ledger.ts';
import { amountOf, formatAmount, fromNumeric, thousandthsIn } from '../domain/money.ts';
import { csvField } from '../lib/csv.ts';
import type { Database } from '../lib/database.ts';
import { paymentReference, postReference } from './ledger.ts';

/** The wallet's record of a transfer, or null when it has none (404). */
export type RetrieveTransfer = (transferId: string) => Promise<{ status: string; amount: { currency: string; value: string } } | null>;

export type SettlementReport = (date: string) => Promise<Settlement>;

/** A day in SETTLEMENT_TZ, as local timestamps: from its midnight to the next. */
export interface SettlementDay {
  start: string;
  end: string;
  timeZone: string;
}

/** A funding that became APPROVED on the day. */
export interface ApprovedFunding {
  id: string;
  transferId: string | null;
  amount: bigint;
  currency: string;
}

/** A payment that became SUCCEEDED on the day. */
export interface SucceededPayment {
  id: string;
  walletPaymentId: string | null;
  amount: bigint;
  currency: string;
  resolvedBy: string | null;
}

/**
 * What the settlement compares, each read by the capability that owns it: the fundings and the
 * payments of the day (fundings/, payments/), the wallet's answer for a transfer, and the wallet
 * call audit's successful executes (audit/). The ledger reads only its own postings.
 */
export interface SettlementSources {
  approvedFundings(day: SettlementDay): Promise<ApprovedFunding[]>;
  succeededPayments(day: SettlementDay): Promise<SucceededPayment[]>;
  executedWalletPayments(walletPaymentIds: string[]): Promise<Set<string>>;
  retrieveTransfer: RetrieveTransfer;
}

/** The amounts posted under these references: a funding's post to WALLET_CLEARING, a payment's credit leg. */
async function postedAmounts(database: Database, references: string[], leg: 'clearing' | 'credit'): Promise<Map<string, bigint>> {
  if (references.length === 0) return new Map();
  const rows = await database.$queryRaw<Array<{ reference: string; amount: Prisma.Decimal }>>`
    SELECT DISTINCT ON (t.reference) t.reference, e.amount FROM ledger_transaction t JOIN ledger_entry e ON e.transaction_id = t.id
    WHERE t.reference = ANY(${references}::text[])
      AND ${leg === 'clearing' ? Prisma.sql`e.account = 'WALLET_CLEARING'` : Prisma.sql`e.amount > 0`}
    ORDER BY t.reference, e.id`;
  return new Map(rows.map((row) => [row.reference, fromNumeric(row.amount)]));
}

export function createSettlementReport(deps: { database: Database; timeZone: string; sources: SettlementSources }): SettlementReport {
  const { database, timeZone, sources } = deps;
  return async (date) => {
    const day = { ...dayBounds(date), timeZone };
    const fundings = await sources.approvedFundings(day);
    const payments = await sources.succeededPayments(day);
    const fundingPosts = await postedAmounts(database, fundings.map((funding) => postReference(funding.id)), 'clearing');
    const paymentPosts = await postedAmounts(database, payments.map((payment) => paymentReference(payment.id)), 'credit');
    const executed = await sources.executedWalletPayments(payments.flatMap((payment) => (payment.walletPaymentId ? [payment.walletPaymentId] : [])));

    const items: SettlementItem[] = [];
    for (const funding of fundings) {
      const amount = funding.amount;
      const ledgerAmount = fundingPosts.get(postReference(funding.id)) ?? null;
      const wallet = funding.transferId ? await sources.retrieveTransfer(funding.transferId) : null;
      const walletAmount = wallet ? thousandthsIn(wallet.amount.value) : null;
      const problems: string[] = [];
      let result: SettlementItem['result'] = 'matched';
      if (!wallet) {
        result = 'missing';
        problems.push('the wallet has no such transfer');
      } else if (wallet.status !== 'APPROVED' || walletAmount !== amount) {
        result = 'mismatched';
        problems.push(`the wallet says ${wallet.status} ${wallet.amount.value}`);
      }
      if (ledgerAmount === null) {
        if (result === 'matched') result = 'missing';
        problems.push(`no ledger posting ${postReference(funding.id)}`);
      } else if (ledgerAmount !== amount) {
        result = 'mismatched';
        problems.push(`the ledger posted ${formatAmount(ledgerAmount, funding.currency)}`);
      }
      items.push({
        kind: 'funding',
        id: funding.id,
        walletId: funding.transferId,
        result,
        amount: amountOf(amount, funding.currency),
        walletAmount: walletAmount === null ? null : amountOf(walletAmount, funding.currency),
        walletStatus: wallet?.status ?? null,
        ledgerAmount: ledgerAmount === null ? null : amountOf(ledgerAmount, funding.currency),
        detail: problems.length > 0 ? problems.join('; ') : null,
      });
    }
    for (const payment of payments) {
      const amount = payment.amount;
      const ledgerAmount = paymentPosts.get(paymentReference(payment.id)) ?? null;
      const paymentExecuted = payment.walletPaymentId !== null && executed.has(payment.walletPaymentId);
      const problems: string[] = [];
      let result: SettlementItem['result'] = 'matched';
      if (!paymentExecuted) {
        result = 'missing';
        problems.push(payment.resolvedBy ? `no successful execute in the wallet call audit (resolved by ${payment.resolvedBy})` : 'no successful execute in the wallet call audit');
      }
      if (ledgerAmount === null) {
        result = 'missing';
        problems.push(`no ledger posting ${paymentReference(payment.id)}`);
      } else if (ledgerAmount !== amount) {
        result = 'mismatched';
        problems.push(`the ledger posted ${formatAmount(ledgerAmount, payment.currency)}`);
      }
      items.push({
        kind: 'payment',
        id: payment.id,
        walletId: payment.walletPaymentId,
        result,
        amount: amountOf(amount, payment.currency),
        walletAmount: paymentExecuted ? amountOf(amount, payment.currency) : null,
        walletStatus: paymentExecuted ? 'EXECUTED' : null,
        ledgerAmount: ledgerAmount === null ? null : amountOf(ledgerAmount, payment.currency),
        detail: problems.length > 0 ? problems.join('; ') : null,
      });
    }
    const counts = (kind: SettlementItem['kind']) => {
      const mine = items.filter((item) => item.kind === kind);
      const total = mine.reduce((sum, item) => sum + thousandthsIn(item.amount.value), 0n);
      return {
        matched: mine.filter((item) => item.result === 'matched').length,
        missing: mine.filter((item) => item.result === 'missing').length,
        mismatched: mine.filter((item) => item.result === 'mismatched').length,
        total: { count: mine.length, amount: amountOf(total, 'PHP') },
      };
    };
    return { date, timeZone, fundings: counts('funding'), payments: counts('payment'), items };
  };
}

/** The day's bounds as local timestamps of SETTLEMENT_TZ ("2026-01-31 00:00:00" to the next midnight). */
/** The day (YYYY-MM-DD in `timeZone`) that `at` falls on, as a SettlementDay. */
export function settlementDayOf(at: Date, timeZone: string): SettlementDay & { date: string } {
  const date = new Intl.DateTimeFormat('en-CA', { timeZone, year: 'numeric', month: '2-digit', day: '2-digit' }).format(at);
  return { date, ...dayBounds(date), timeZone };
}

/** The day `date` (YYYY-MM-DD) of `timeZone`, as a SettlementDay. */
export function settlementDay(date: string, timeZone: string): SettlementDay & { date: string } {
  return { date, ...dayBounds(date), timeZone };
}

function dayBounds(date: string): { start: string; end: string } {
  const next = new Date(`${date}T00:00:00Z`);
  next.setUTCDate(next.getUTCDate() + 1);
  return { start: `${date} 00:00:00`, end: `${next.toISOString().slice(0, 10)} 00:00:00` };
}

/** The settlement as CSV: one line per item, then the totals. */
export function settlementCsv(settlement: Settlement): string {
  const header = ['kind', 'id', 'wallet_id', 'result', 'currency', 'amount', 'wallet_status', 'wallet_amount', 'ledger_amount', 'detail'];
  const lines = settlement.items.map((item) =>
    [item.kind, item.id, item.walletId, item.result, item.amount.currency, item.amount.value, item.walletStatus, item.walletAmount?.value ?? null, item.ledgerAmount?.value ?? null, item.detail]
      .map(csvField)
      .join(','),
  );
  const totals = (['fundings', 'payments'] as const).map((kind) => {
    const counts = settlement[kind];
    return [`total:${kind}`, settlement.date, null, `matched=${counts.matched} missing=${counts.missing} mismatched=${counts.mismatched}`, counts.total.amount.currency, counts.total.amount.value, null, null, null, `${counts.total.count} items`]
      .map(csvField)
      .join(',');
  });
  return `${[header.join(','), ...lines, ...totals].join('\r\n')}\r\n`;
}
