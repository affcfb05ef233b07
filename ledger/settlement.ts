// Settlement of a day (contract-decisions section 10): walletflow's fundings that became APPROVED
// and payments that became SUCCEEDED on that day (in SETTLEMENT_TZ), each compared with the wallet
// service's record (retrieve per transfer; for payments, the audit of the successful execute
// call) and with the ledger's posting: matched, missing (no wallet record or no posting) or
// mismatched (another status or amount). Read-only.
import type { Prisma } from '../generated/prisma/client.ts';
import { money, type Settlement, type SettlementItem } from '../domain/ledger.ts';
import type { Database } from '../lib/database.ts';
import { paymentReference, postReference, thousandthsOf } from './ledger.ts';

/** The wallet's record of a transfer, or null when it has none (404). */
export type RetrieveTransfer = (transferId: string) => Promise<{ status: string; amount: { currency: string; value: string } } | null>;

export type SettleDay = (date: string) => Promise<Settlement>;

export function createSettlement(deps: { database: Database; retrieveTransfer: RetrieveTransfer; timeZone: string }): SettleDay {
  const { database, timeZone } = deps;
  return async (date) => {
    const day = dayBounds(date);
    const fundings = await database.$queryRaw<Array<{ id: string; transfer_id: string | null; amount: Prisma.Decimal; currency: string; posted: Prisma.Decimal | null }>>`
      SELECT f.id::text AS id, f.transfer_id, f.amount, f.currency,
             (SELECT e.amount FROM ledger_transaction t JOIN ledger_entry e ON e.transaction_id = t.id
               WHERE t.reference = 'funding:' || f.id::text || ':post' AND e.account = 'WALLET_CLEARING' LIMIT 1) AS posted
      FROM funding f
      WHERE f.status = 'APPROVED' AND EXISTS (
        SELECT 1 FROM funding_event ev WHERE ev.funding_id = f.id AND ev.status = 'APPROVED'
          AND ev.at >= (${day.start}::timestamp AT TIME ZONE ${timeZone}) AND ev.at < (${day.end}::timestamp AT TIME ZONE ${timeZone}))
      ORDER BY f.id`;
    const payments = await database.$queryRaw<
      Array<{ id: string; wallet_payment_id: string | null; amount: Prisma.Decimal; currency: string; executed: boolean; posted: Prisma.Decimal | null; resolved_by: string | null }>
    >`
      SELECT p.id::text AS id, p.wallet_payment_id, p.amount, p.currency, p.resolved_by,
             EXISTS (SELECT 1 FROM wallet_call c WHERE c.operation = 'op.payments.execute' AND c.outcome = 'ok'
                      AND c.path = '/merchant/payments/' || p.wallet_payment_id || '/execute') AS executed,
             (SELECT e.amount FROM ledger_transaction t JOIN ledger_entry e ON e.transaction_id = t.id
               WHERE t.reference = 'payment:' || p.id::text || ':post' AND e.amount > 0 LIMIT 1) AS posted
      FROM payment p
      WHERE p.status = 'SUCCEEDED' AND EXISTS (
        SELECT 1 FROM payment_event ev WHERE ev.payment_id = p.id AND ev.status = 'SUCCEEDED'
          AND ev.at >= (${day.start}::timestamp AT TIME ZONE ${timeZone}) AND ev.at < (${day.end}::timestamp AT TIME ZONE ${timeZone}))
      ORDER BY p.id`;

    const items: SettlementItem[] = [];
    for (const funding of fundings) {
      const amount = thousandthsOf(funding.amount);
      const ledgerAmount = funding.posted === null ? null : thousandthsOf(funding.posted);
      const wallet = funding.transfer_id ? await deps.retrieveTransfer(funding.transfer_id) : null;
      const walletAmount = wallet ? thousandthsOf(wallet.amount.value) : null;
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
        problems.push(`the ledger posted ${money(ledgerAmount, funding.currency).value}`);
      }
      items.push({
        kind: 'funding',
        id: funding.id,
        walletId: funding.transfer_id,
        result,
        amount: money(amount, funding.currency),
        walletAmount: walletAmount === null ? null : money(walletAmount, funding.currency),
        walletStatus: wallet?.status ?? null,
        ledgerAmount: ledgerAmount === null ? null : money(ledgerAmount, funding.currency),
        detail: problems.length > 0 ? problems.join('; ') : null,
      });
    }
    for (const payment of payments) {
      const amount = thousandthsOf(payment.amount);
      const ledgerAmount = payment.posted === null ? null : thousandthsOf(payment.posted);
      const problems: string[] = [];
      let result: SettlementItem['result'] = 'matched';
      if (!payment.executed) {
        result = 'missing';
        problems.push(payment.resolved_by ? `no successful execute in the wallet call audit (resolved by ${payment.resolved_by})` : 'no successful execute in the wallet call audit');
      }
      if (ledgerAmount === null) {
        result = 'missing';
        problems.push(`no ledger posting ${paymentReference(payment.id)}`);
      } else if (ledgerAmount !== amount) {
        result = 'mismatched';
        problems.push(`the ledger posted ${money(ledgerAmount, payment.currency).value}`);
      }
      items.push({
        kind: 'payment',
        id: payment.id,
        walletId: payment.wallet_payment_id,
        result,
        amount: money(amount, payment.currency),
        walletAmount: payment.executed ? money(amount, payment.currency) : null,
        walletStatus: payment.executed ? 'EXECUTED' : null,
        ledgerAmount: ledgerAmount === null ? null : money(ledgerAmount, payment.currency),
        detail: problems.length > 0 ? problems.join('; ') : null,
      });
    }
    const counts = (kind: SettlementItem['kind']) => {
      const mine = items.filter((item) => item.kind === kind);
      const total = mine.reduce((sum, item) => sum + thousandthsOf(item.amount.value), 0n);
      return {
        matched: mine.filter((item) => item.result === 'matched').length,
        missing: mine.filter((item) => item.result === 'missing').length,
        mismatched: mine.filter((item) => item.result === 'mismatched').length,
        total: { count: mine.length, amount: money(total, 'PHP') },
      };
    };
    return { date, timeZone, fundings: counts('funding'), payments: counts('payment'), items };
  };
}

/** The day's bounds as local timestamps of SETTLEMENT_TZ ("2026-01-31 00:00:00" to the next midnight). */
function dayBounds(date: string): { start: string; end: string } {
  const next = new Date(`${date}T00:00:00Z`);
  next.setUTCDate(next.getUTCDate() + 1);
  return { start: `${date} 00:00:00`, end: `${next.toISOString().slice(0, 10)} 00:00:00` };
}

const csvField = (value: string | number | null) => {
  const text = value === null ? '' : String(value);
  // Quote always; a leading = + - @ is prefixed so a spreadsheet never reads a formula.
  return `"${(/^[=+\-@]/.test(text) && !/^-?\d/.test(text) ? `'${text}` : text).replace(/"/g, '""')}"`;
};

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
