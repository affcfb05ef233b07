// Settlement of a day (contract-decisions section 10): walletflow's fundings that became APPROVED
// and payments that became SUCCEEDED on that day (in SETTLEMENT_TZ), each compared with the wallet
// service's record (retrieve per transfer; for payments, the audit of the successful execute
// call) and with the ledger's posting: matched, missing (no wallet record or no posting) or
// mismatched (another status or amount). The rules for one line, the ledger's postings for a page
// of them, the day's bounds and the CSV's lines; the run that applies them a page at a time is the
// settleDay workflow (activities/settlement.ts), its lines stored by ledger/settlement-runs.ts.
import { Prisma } from '../generated/prisma/client.ts';
import { DAY_SO_FAR_WORDS, upTo, type SettlementCounts, type SettlementItem } from '../domain/ledger.ts';
import { amountOf, formatAmount, fromNumeric, thousandthsIn } from '../domain/money.ts';
import type { CsvValue } from '../lib/csv.ts';
import type { Database } from '../lib/database.ts';
import { paymentReference, postReference } from './ledger.ts';

/**
 * A day (YYYY-MM-DD) in SETTLEMENT_TZ, and the instants it begins and ends there, as this process's time zone data
 * reckons them (`dayEndsAt`). Every read of a day (the settlement's windows, the home's totals, the audit's day) takes
 * these instants as they are, so a run's grace, a day's completeness and the rows read agree: PostgreSQL's own reading
 * of the zone could differ (a midnight that happens twice is its later one; CET is its fixed abbreviation).
 */
export interface SettlementDay {
  date: string;
  timeZone: string;
  /** Its first instant: where the day before ends. */
  startsAt: Date;
  /** The first instant of a later day. */
  endsAt: Date;
}

/**
 * Where a page of the day's fundings or payments ends: the event that made the last one APPROVED
 * or SUCCEEDED (its time, ISO with milliseconds, and its id). The next page starts after it.
 */
export interface DayCursor {
  at: string;
  eventId: string;
}

/** The day's first instant and the first of a later day, as SQL instants: the one way a read bounds a day. */
export function dayWindow(day: Pick<SettlementDay, 'startsAt' | 'endsAt'>): { start: Prisma.Sql; end: Prisma.Sql } {
  return {
    start: Prisma.sql`${day.startsAt.toISOString()}::timestamptz`,
    end: Prisma.sql`${day.endsAt.toISOString()}::timestamptz`,
  };
}

/**
 * The day's bounds as SQL instants, and the cursor a page starts after: how the fundings (fundings/) and the payments
 * (payments/) read their timelines' events of the day. The first page's is the day's first instant, before any event
 * id (they begin at 1), and never one before it: PostgreSQL begins an index scan with a row comparison and a bound on
 * the same first column at the comparison, so a cursor of the epoch walked every entry of the index before the day
 * (a year's history at 100,000 a day: a gigabyte of index for each run's first page).
 */
export function dayEventsAfter(
  day: SettlementDay,
  after: DayCursor | null,
): { start: Prisma.Sql; end: Prisma.Sql; cursor: DayCursor } {
  const dayStart: DayCursor = { at: day.startsAt.toISOString(), eventId: '0' };
  return {
    ...dayWindow(day),
    cursor: after && Date.parse(after.at) >= day.startsAt.getTime() ? after : dayStart,
  };
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
  /** The Request-Reference-No of the execute its SUCCEEDED event names: the call whose answer made it so. */
  succeededBy: string | null;
}

/** The wallet's record of a transfer, or null when it has none (404). */
/**
 * The wallet's record of a transfer; null: it has none; `unreadable`: it refused, again and again, to say (a lasting
 * 4xx, an answer that is no record), so the line is reported not matched with why, and the day's run goes on.
 */
export type WalletTransferRecord =
  { status: string; amount: { currency: string; value: string } } | { unreadable: string } | null;

/** Past what settlement_line's amounts hold (numeric(16,3)): no funding's amount comes near it. */
const STORABLE_THOUSANDTHS = 10n ** 16n;

/** The amounts posted under these references: a funding's post to WALLET_CLEARING, a payment's credit leg. */
export async function postedAmounts(
  database: Database,
  references: string[],
  leg: 'clearing' | 'credit',
): Promise<Map<string, bigint>> {
  if (references.length === 0) return new Map();
  const rows = await database.$queryRaw<Array<{ reference: string; amount: Prisma.Decimal }>>`
    SELECT DISTINCT ON (t.reference) t.reference, e.amount FROM ledger_transaction t JOIN ledger_entry e ON e.transaction_id = t.id
    WHERE t.reference = ANY(${references}::text[])
      AND ${leg === 'clearing' ? Prisma.sql`e.account = 'WALLET_CLEARING'` : Prisma.sql`e.amount > 0`}
    ORDER BY t.reference, e.id`;
  return new Map(rows.map((row) => [row.reference, fromNumeric(row.amount)]));
}

/** The funding's posting to WALLET_CLEARING, for each funding of a page (absent: none). */
export const fundingPosts = (database: Database, fundingIds: string[]) =>
  postedAmounts(database, fundingIds.map(postReference), 'clearing');
/** The payment's credit leg, for each payment of a page (absent: none). */
export const paymentPosts = (database: Database, paymentIds: string[]) =>
  postedAmounts(database, paymentIds.map(paymentReference), 'credit');

/** The wallet's record as a line reads it: none, one it could not read, or a record and its amount in thousandths. */
function readRecord(
  wallet: WalletTransferRecord,
):
  | { kind: 'none' }
  | { kind: 'unreadable'; why: string }
  | { kind: 'record'; record: { status: string; amount: { currency: string; value: string } }; thousandths: bigint } {
  if (wallet === null) return { kind: 'none' };
  if ('unreadable' in wallet) return { kind: 'unreadable', why: wallet.unreadable };
  let thousandths: bigint;
  try {
    thousandths = thousandthsIn(wallet.amount.value);
  } catch {
    return { kind: 'unreadable', why: `an amount walletflow cannot read (${wallet.amount.value})` };
  }
  // Past any amount walletflow moves (it would not fit its line either): no figure to compare.
  if (thousandths >= STORABLE_THOUSANDTHS || thousandths <= -STORABLE_THOUSANDTHS)
    return { kind: 'unreadable', why: `an amount past any funding's (${wallet.amount.value})` };
  return { kind: 'record', record: wallet, thousandths };
}

/** A funding against the wallet's record of its transfer and the ledger's posting of its hold. */
export function fundingLine(
  funding: ApprovedFunding,
  wallet: WalletTransferRecord,
  posts: Map<string, bigint>,
): SettlementItem {
  const amount = funding.amount;
  const ledgerAmount = posts.get(postReference(funding.id)) ?? null;
  const read = readRecord(wallet);
  const record = read.kind === 'record' ? read.record : null;
  // The line keeps one currency, the funding's: a figure in another is in `detail` only, never shown as this one.
  const walletAmount =
    read.kind === 'record' && read.record.amount.currency === funding.currency ? read.thousandths : null;
  const problems: string[] = [];
  let result: SettlementItem['result'] = 'matched';
  if (read.kind === 'unreadable') {
    // Not known to match, and not known to differ: a person looks (it is never counted matched).
    result = 'mismatched';
    problems.push(`the wallet's record could not be read: ${read.why}`);
  } else if (!record) {
    result = 'missing';
    problems.push('the wallet has no such transfer');
  } else if (record.status !== 'APPROVED' || walletAmount !== amount) {
    // Another currency is another amount, whatever its figure.
    result = 'mismatched';
    const walletCurrency = record.amount.currency === funding.currency ? '' : `${record.amount.currency} `;
    problems.push(`the wallet says ${record.status} ${walletCurrency}${record.amount.value}`);
  }
  if (ledgerAmount === null) {
    if (result === 'matched') result = 'missing';
    problems.push(`no ledger posting ${postReference(funding.id)}`);
  } else if (ledgerAmount !== amount) {
    result = 'mismatched';
    problems.push(`the ledger posted ${formatAmount(ledgerAmount, funding.currency)}`);
  }
  return {
    kind: 'funding',
    id: funding.id,
    walletId: funding.transferId,
    result,
    amount: amountOf(amount, funding.currency),
    walletAmount: walletAmount === null ? null : amountOf(walletAmount, funding.currency),
    walletStatus: record?.status ?? null,
    ledgerAmount: ledgerAmount === null ? null : amountOf(ledgerAmount, funding.currency),
    detail: problems.length > 0 ? problems.join('; ') : null,
  };
}

/**
 * A payment against the audit's successful execute (the interface has no payment retrieve) and the ledger's posting.
 */
export function paymentLine(
  payment: SucceededPayment,
  executed: ReadonlySet<string>,
  posts: Map<string, bigint>,
): SettlementItem {
  const amount = payment.amount;
  const ledgerAmount = posts.get(paymentReference(payment.id)) ?? null;
  const paymentExecuted = payment.walletPaymentId !== null && executed.has(payment.walletPaymentId);
  const problems: string[] = [];
  let result: SettlementItem['result'] = 'matched';
  if (!paymentExecuted) {
    result = 'missing';
    problems.push(
      payment.resolvedBy
        ? `no successful execute in the wallet call audit (resolved by ${payment.resolvedBy})`
        : 'no successful execute in the wallet call audit',
    );
  }
  if (ledgerAmount === null) {
    result = 'missing';
    problems.push(`no ledger posting ${paymentReference(payment.id)}`);
  } else if (ledgerAmount !== amount) {
    result = 'mismatched';
    problems.push(`the ledger posted ${formatAmount(ledgerAmount, payment.currency)}`);
  }
  return {
    kind: 'payment',
    id: payment.id,
    walletId: payment.walletPaymentId,
    result,
    amount: amountOf(amount, payment.currency),
    // The audit shows the wallet's answer that it executed, not a figure of its own: none is shown as the wallet's.
    walletAmount: null,
    walletStatus: paymentExecuted ? 'EXECUTED' : null,
    ledgerAmount: ledgerAmount === null ? null : amountOf(ledgerAmount, payment.currency),
    detail: problems.length > 0 ? problems.join('; ') : null,
  };
}

/**
 * What a settlement run reads of its day: the whole of it, or for a report of the day so far, the events stamped before
 * its `readUntil` (so the report covers up to a stated instant, not whatever its reads happened to reach).
 */
export function settlementWindowOf(run: { date: string; timeZone: string; readUntil: Date | null }): SettlementDay {
  const day = settlementDay(run.date, run.timeZone);
  return run.readUntil !== null && run.readUntil < day.endsAt ? { ...day, endsAt: run.readUntil } : day;
}

/** The day (YYYY-MM-DD in `timeZone`) that `at` falls on, as a SettlementDay. */
export function settlementDayOf(at: Date, timeZone: string): SettlementDay {
  return settlementDay(localDateOf(at, timeZone), timeZone);
}

/** The date (YYYY-MM-DD) in `timeZone` at `at`. */
export function localDateOf(at: Date, timeZone: string): string {
  return dateFormatOf(timeZone).format(at);
}

/** One date format per time zone (made once: a format costs far more to make than to use). */
const dateFormats = new Map<string, Intl.DateTimeFormat>();
function dateFormatOf(timeZone: string): Intl.DateTimeFormat {
  let format = dateFormats.get(timeZone);
  if (!format) {
    format = new Intl.DateTimeFormat('en-CA', { timeZone, year: 'numeric', month: '2-digit', day: '2-digit' });
    dateFormats.set(timeZone, format);
  }
  return format;
}

/**
 * The last whole day at `at` in `timeZone`: the calendar day before today's there (YYYY-MM-DD). Not the day 24 hours
 * ago: after a 23-hour day (a clock put forward) that is two days back in the first hour.
 */
export function lastWholeDay(at: Date, timeZone: string): string {
  const today = new Date(`${localDateOf(at, timeZone)}T00:00:00Z`);
  today.setUTCDate(today.getUTCDate() - 1);
  return today.toISOString().slice(0, 10);
}

/**
 * How long after a day's end its run waits before it reads the day: an event is stamped as its statement starts (the
 * database's clock; its writer's clock in releases before 2026-12-06, whose workers may still run during a roll)
 * and becomes visible when that transaction commits, up to a transaction's time-out later (5 s by default). A run
 * that began reading at midnight could page past an approval stamped 23:59:59.9 that commits a moment later. A report
 * of the day so far ends where no open transaction can still commit one (activities/settlement.ts, daySoFarEnd), at
 * most this long before its begin.
 */
export const SETTLEMENT_GRACE_MS = 120_000;

/**
 * Whether two settings of SETTLEMENT_TZ name the same zone, however spelled (`asia/manila` and `Asia/Manila`, `Etc/UTC`
 * and `UTC`), as this process's time zone data reads them: a stored run is served only to its own zone.
 */
export function sameZone(a: string, b: string): boolean {
  if (a === b) return true;
  try {
    const named = (zone: string) => new Intl.DateTimeFormat('en', { timeZone: zone }).resolvedOptions().timeZone;
    return named(a) === named(b);
  } catch {
    return false;
  }
}

/**
 * The instant the day `date` (YYYY-MM-DD) of `timeZone` ends: the first millisecond that falls on a later day there
 * (its next midnight, or where a clock put forward skips midnight, the first instant after it). Found by halving, on
 * the day's own calendar: whatever the zone's offsets that day, no rule of thumb about them.
 */
export function dayEndsAt(date: string, timeZone: string): Date {
  const next = Date.parse(`${dateAfter(date, 1)}T00:00:00Z`);
  // Every zone's midnight lies within 14 hours of UTC's (UTC-12 to UTC+14): a bound before it and one after it.
  let before = next - 15 * 3600_000;
  let after = next + 13 * 3600_000;
  while (after - before > 1) {
    const middle = Math.floor((before + after) / 2);
    if (localDateOf(new Date(middle), timeZone) > date) after = middle;
    else before = middle;
  }
  return new Date(after);
}

/** The day `date` (YYYY-MM-DD) of `timeZone`, as a SettlementDay (kept once found: a limit check reads today's). */
export function settlementDay(date: string, timeZone: string): SettlementDay {
  const key = `${timeZone} ${date}`;
  let day = knownDays.get(key);
  if (!day) {
    if (knownDays.size >= 1000) knownDays.clear();
    day = { date, timeZone, startsAt: dayEndsAt(dateAfter(date, -1), timeZone), endsAt: dayEndsAt(date, timeZone) };
    knownDays.set(key, day);
  }
  return { ...day, startsAt: new Date(day.startsAt), endsAt: new Date(day.endsAt) };
}
const knownDays = new Map<string, SettlementDay>();

/** The calendar date `days` after `date` (YYYY-MM-DD). */
function dateAfter(date: string, days: number): string {
  const next = new Date(`${date}T00:00:00Z`);
  next.setUTCDate(next.getUTCDate() + days);
  return next.toISOString().slice(0, 10);
}

/** The settlement CSV's header line, as the report has always written it (names unquoted). */
export const settlementCsvHeader =
  'kind,id,wallet_id,result,currency,amount,wallet_status,wallet_amount,ledger_amount,detail\r\n';

/** One item's CSV row. */
export const settlementCsvRow = (item: SettlementItem): CsvValue[] => [
  item.kind,
  item.id,
  item.walletId,
  item.result,
  item.amount.currency,
  item.amount.value,
  item.walletStatus,
  item.walletAmount?.value ?? null,
  item.ledgerAmount?.value ?? null,
  item.detail,
];

/**
 * The CSV's last two rows: each side's counts and total; a report of the day so far (its run began before the day was
 * over: `complete: false`) says so in their detail, so a file is never taken for the whole day.
 */
export function settlementCsvTotals(
  date: string,
  sides: { fundings: SettlementCounts; payments: SettlementCounts },
  scope: { complete: boolean; settledAt: string; readUntil: string | null },
): CsvValue[][] {
  return (['fundings', 'payments'] as const).map((kind) => {
    const counts = sides[kind];
    return [
      `total:${kind}`,
      date,
      null,
      `matched=${counts.matched} missing=${counts.missing} mismatched=${counts.mismatched}`,
      counts.total.amount.currency,
      counts.total.amount.value,
      null,
      null,
      null,
      scope.complete
        ? `${counts.total.count} items`
        : `${counts.total.count} items; ${DAY_SO_FAR_WORDS} (${upTo(scope)})`,
    ];
  });
}
