// The soak's invariant checker: a pure function over walletflow's records and the sandbox ledger
// that lists every violation (which invariant, which ids) and builds the table the soak prints.
import { isFinalFundingStatus } from '../domain/funding.ts';
import { formatAmount, thousandthsIn } from '../domain/money.ts';
import { isFinalPaymentStatus } from '../domain/payment.ts';

export interface Expected {
  status: string;
  /** The error code the final state must carry; null: none. */
  code: string | null;
}

export interface SoakFundingRow {
  id: string;
  status: string;
  errorCode: string | null;
  transferId: string | null;
  abandonedTransferIds: string[];
  /** Decimal string. */
  amount: string;
  /** Epoch ms. */
  createdAt: number;
  /** Epoch ms of the first final event; null while not final. */
  finalAt: number | null;
  /** How a review ended (contract section 11), when the funding needed one. */
  resolvedOutcome?: string | null;
  /** What the soak's plan expects of this funding; null: not planned (unknown to the driver). */
  expected: Expected | null;
  /**
   * The owner fence of each timeline event written by an owning run, in the order written
   * (docs/architecture.md, who owns a funding).
   */
  eventFences?: number[];
}

export interface SoakPaymentRow {
  id: string;
  status: string;
  errorCode: string | null;
  walletPaymentId: string | null;
  amount: string;
  fee: string | null;
  createdAt: number;
  finalAt: number | null;
  /** Epoch ms it was parked in NEEDS_REVIEW (time to final stops there: the rest is a person's). */
  reviewAt: number | null;
  resolvedOutcome: string | null;
  expected: Expected | null;
  /** The owner fence of each timeline event written by an owning run, in the order written. */
  eventFences?: number[];
}

export interface SoakLedger {
  transfers: Array<{ transferId: string; status: string; executions: number; amount: { value: string } }>;
  payments: Array<{
    paymentId: string;
    status: string;
    executions: number;
    amount: { value: string };
    fee: { value: string };
  }>;
}

export interface SoakCheckInput {
  /** What the driver asked for: requests that never got an id are lost requests. */
  requested: { fundings: number; payments: number };
  fundings: SoakFundingRow[];
  payments: SoakPaymentRow[];
  ledger: SoakLedger;
  /** Sandbox users the soak funded or charged: balance before and after (a third witness). */
  balances?: Array<{ userId: string; before: string; after: string }>;
}

export type Invariant =
  | 'lost-request'
  | 'stuck'
  | 'double-execution'
  | 'execution-mismatch'
  | 'ledger-state-mismatch'
  | 'amount-mismatch'
  | 'executed-without-record'
  | 'money-credited'
  | 'money-debited'
  | 'balances'
  | 'unexpected-outcome'
  /** A timeline event written by a run after another run had claimed the record (a stale owner's write). */
  | 'stale-owner'
  /** The partner's ledger (harness/ledger-invariants.ts): zero-sum, balances, floors, holds, clearing. */
  | 'ledger'
  /** A funding batch (harness/soak-batches.ts): its holds equal its open items, its counts its items' states. */
  | 'batch';

export interface Violation {
  invariant: Invariant;
  /** walletflow ids (funding/payment) or ledger ids (transfer/payment) concerned. */
  ids: string[];
  detail: string;
}

export interface SideSummary {
  requested: number;
  recorded: number;
  statuses: Record<string, number>;
  p50Ms: number | null;
  p99Ms: number | null;
  /** Items by executions of their own ledger entry: 0, 1, more. */
  executions: { zero: number; one: number; more: number };
  matching: number;
  /** walletflow's sum and the ledger's sum (decimal strings, PHP). */
  money: { walletflow: string; ledger: string };
  executedWithoutRecord: number;
  stuck: number;
  asPlanned: number;
}

export interface SoakTable {
  fundings: SideSummary & {
    /** Ended through review (NEEDS_REVIEW: every execute's outcome stayed unknown), by outcome. */
    reviews: { APPROVED: number; FAILED: number };
    /** As payments' below: planned APPROVED, reviewed FAILED with nothing credited. */
    failedUnderFaults: number;
  };
  payments: SideSummary & {
    reviews: { SUCCEEDED: number; FAILED: number };
    /**
     * Planned to succeed, parked because every execute attempt had an unknown outcome, and resolved
     * FAILED with no execution in the ledger: the faults kept the execute from the wallet each time.
     * The right end for such a payment (payWallet retries a bounded number of times, then a person
     * decides from the wallet's record), so counted apart from the plan, not as a violation.
     */
    failedUnderFaults: number;
  };
}

export interface SoakCheckResult {
  violations: Violation[];
  table: SoakTable;
  /** Ids of the payments counted in `failedUnderFaults`, for their timelines. */
  failedUnderFaults: string[];
}

const executedFunding = new Set(['APPROVED', 'DECLINED']);

const thousandths = (value: string | null | undefined): bigint =>
  value === null || value === undefined ? 0n : thousandthsIn(value);
const php = (value: bigint) => formatAmount(value, 'PHP');

/** Nearest-rank percentile of `values` (ms); null when empty. */
export function percentile(values: number[], p: number): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length)));
  return sorted[rank - 1] ?? null;
}

function countBy<T>(items: T[], key: (item: T) => string): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const item of items) counts[key(item)] = (counts[key(item)] ?? 0) + 1;
  return counts;
}

const matchesExpected = (expected: Expected | null, status: string, code: string | null) =>
  expected === null ||
  (expected.status === status && (expected.code === null ? code === null : expected.code === code));

export function checkSoak(input: SoakCheckInput): SoakCheckResult {
  const violations: Violation[] = [];
  const add = (invariant: Invariant, ids: string[], detail: string) => violations.push({ invariant, ids, detail });
  const transfers = new Map(input.ledger.transfers.map((transfer) => [transfer.transferId, transfer]));
  const ledgerPayments = new Map(input.ledger.payments.map((payment) => [payment.paymentId, payment]));

  // Requests that never became records.
  for (const [side, requested, recorded] of [
    ['fundings', input.requested.fundings, input.fundings.length],
    ['payments', input.requested.payments, input.payments.length],
  ] as const) {
    if (recorded < requested)
      add('lost-request', [], `${requested - recorded} of ${requested} ${side} requested have no record in walletflow`);
  }

  // One writer at a time (docs/architecture.md, who owns a funding): a run writes only under its
  // own claim, and claims only go up, so a fence lower than one written before it is a write by an
  // overtaken run.
  for (const [side, rows] of [
    ['funding', input.fundings],
    ['payment', input.payments],
  ] as const) {
    for (const row of rows) {
      const fences = row.eventFences ?? [];
      const at = fences.findIndex((fence, index) => index > 0 && fence < fences[index - 1]!);
      if (at > 0)
        add(
          'stale-owner',
          [row.id],
          `${side} event ${at + 1} was written under fence ${fences[at]} after fence ${fences[at - 1]}`,
        );
    }
  }

  // No ledger entry executed twice, whoever it belongs to.
  for (const transfer of input.ledger.transfers) {
    if (transfer.executions > 1)
      add('double-execution', [transfer.transferId], `transfer executed ${transfer.executions} times`);
  }
  for (const payment of input.ledger.payments) {
    if (payment.executions > 1)
      add('double-execution', [payment.paymentId], `payment executed ${payment.executions} times`);
  }

  // Fundings: executions match the final state, amounts match, nothing stuck.
  const fundingSide = {
    ...emptySide(input.requested.fundings, input.fundings.length),
    reviews: { APPROVED: 0, FAILED: 0 },
    failedUnderFaults: 0,
  };
  const failedUnderFaults: string[] = [];
  const fundingTimes: number[] = [];
  let credited = 0n;
  const ownTransfers = new Set<string>();
  for (const row of input.fundings) {
    const transfer = row.transferId ? transfers.get(row.transferId) : undefined;
    if (row.transferId) ownTransfers.add(row.transferId);
    for (const abandoned of row.abandonedTransferIds) {
      ownTransfers.add(abandoned);
      const intent = transfers.get(abandoned);
      if ((intent?.executions ?? 0) > 0)
        add('execution-mismatch', [row.id, abandoned], `abandoned intent executed ${intent?.executions} time(s)`);
    }
    const executions = transfer?.executions ?? 0;
    tallyExecutions(fundingSide, executions);
    if (!isFinalFundingStatus(row.status)) {
      fundingSide.stuck += 1;
      add(
        'stuck',
        [row.id],
        `funding still ${row.status} at the end${row.transferId ? ` (transfer ${row.transferId}, ${executions} execution(s))` : ''}`,
      );
      continue;
    }
    if (row.finalAt !== null) fundingTimes.push(row.finalAt - row.createdAt);
    const wantExecuted = executedFunding.has(row.status);
    if (row.transferId && !transfer)
      add('execution-mismatch', [row.id, row.transferId], 'its transfer is not in the ledger');
    if ((wantExecuted ? 1 : 0) === executions) fundingSide.matching += 1;
    else
      add(
        'execution-mismatch',
        [row.id, ...(row.transferId ? [row.transferId] : [])],
        `funding ${row.status} but its transfer was executed ${executions} time(s)`,
      );
    if (transfer && wantExecuted && transfer.status !== row.status) {
      add(
        'ledger-state-mismatch',
        [row.id, transfer.transferId],
        `walletflow says ${row.status}, the ledger ${transfer.status}`,
      );
    }
    if (transfer && thousandths(transfer.amount.value) !== thousandths(row.amount)) {
      add(
        'amount-mismatch',
        [row.id, transfer.transferId],
        `walletflow ${row.amount}, ledger ${transfer.amount.value}`,
      );
    }
    if (row.status === 'APPROVED') credited += thousandths(row.amount);
    if (row.resolvedOutcome === 'APPROVED' || row.resolvedOutcome === 'FAILED')
      fundingSide.reviews[row.resolvedOutcome] += 1;
    if (
      matchesExpected(row.expected, row.status, row.errorCode) ||
      (row.resolvedOutcome && row.expected?.status === row.status)
    ) {
      fundingSide.asPlanned += 1;
    } else if (
      row.expected?.status === 'APPROVED' &&
      row.resolvedOutcome === 'FAILED' &&
      row.status === 'FAILED' &&
      executions === 0
    ) {
      fundingSide.failedUnderFaults += 1;
      failedUnderFaults.push(row.id);
    } else {
      add(
        'unexpected-outcome',
        [row.id],
        `expected ${describe(row.expected)}, ended ${row.status}${row.errorCode ? ` ${row.errorCode}` : ''}`,
      );
    }
  }
  let ledgerCredited = 0n;
  for (const transfer of input.ledger.transfers) {
    if (transfer.status === 'APPROVED') ledgerCredited += thousandths(transfer.amount.value);
    if (transfer.executions > 0 && !ownTransfers.has(transfer.transferId)) {
      fundingSide.executedWithoutRecord += 1;
      add(
        'executed-without-record',
        [transfer.transferId],
        `transfer ${transfer.status}, executed ${transfer.executions} time(s), no funding names it`,
      );
    }
  }
  fundingSide.money = { walletflow: php(credited), ledger: php(ledgerCredited) };
  if (credited !== ledgerCredited)
    add('money-credited', [], `walletflow credited ${php(credited)}, the ledger ${php(ledgerCredited)} PHP`);

  // Payments: the same, amount plus fee debited.
  const paymentSide = {
    ...emptySide(input.requested.payments, input.payments.length),
    reviews: { SUCCEEDED: 0, FAILED: 0 },
    failedUnderFaults: 0,
  };
  const paymentTimes: number[] = [];
  let debited = 0n;
  const ownPayments = new Set<string>();
  for (const row of input.payments) {
    const payment = row.walletPaymentId ? ledgerPayments.get(row.walletPaymentId) : undefined;
    if (row.walletPaymentId) ownPayments.add(row.walletPaymentId);
    const executions = payment?.executions ?? 0;
    tallyExecutions(paymentSide, executions);
    if (row.resolvedOutcome === 'SUCCEEDED' || row.resolvedOutcome === 'FAILED')
      paymentSide.reviews[row.resolvedOutcome] += 1;
    if (!isFinalPaymentStatus(row.status)) {
      paymentSide.stuck += 1;
      add(
        'stuck',
        [row.id],
        `payment still ${row.status} at the end${row.walletPaymentId ? ` (wallet payment ${row.walletPaymentId}, ${executions} execution(s))` : ''}`,
      );
      continue;
    }
    const settledAt = row.reviewAt ?? row.finalAt;
    if (settledAt !== null) paymentTimes.push(settledAt - row.createdAt);
    if (row.walletPaymentId && !payment)
      add('execution-mismatch', [row.id, row.walletPaymentId], 'its wallet payment is not in the ledger');
    if ((row.status === 'SUCCEEDED' ? 1 : 0) === executions) paymentSide.matching += 1;
    else
      add(
        'execution-mismatch',
        [row.id, ...(row.walletPaymentId ? [row.walletPaymentId] : [])],
        `payment ${row.status} but it was executed ${executions} time(s)`,
      );
    if (payment && thousandths(payment.amount.value) !== thousandths(row.amount)) {
      add('amount-mismatch', [row.id, payment.paymentId], `walletflow ${row.amount}, ledger ${payment.amount.value}`);
    }
    if (payment && row.status === 'SUCCEEDED' && thousandths(payment.fee.value) !== thousandths(row.fee)) {
      add(
        'amount-mismatch',
        [row.id, payment.paymentId],
        `fee: walletflow ${row.fee ?? 'none'}, ledger ${payment.fee.value}`,
      );
    }
    if (row.status === 'SUCCEEDED') debited += thousandths(row.amount) + thousandths(row.fee);
    if (
      matchesExpected(row.expected, row.status, row.errorCode) ||
      (row.resolvedOutcome !== null && row.expected?.status === row.status)
    ) {
      paymentSide.asPlanned += 1;
    } else if (
      row.expected?.status === 'SUCCEEDED' &&
      row.resolvedOutcome === 'FAILED' &&
      row.status === 'FAILED' &&
      executions === 0
    ) {
      paymentSide.failedUnderFaults += 1;
      failedUnderFaults.push(row.id);
    } else {
      add(
        'unexpected-outcome',
        [row.id],
        `expected ${describe(row.expected)}, ended ${row.status}${row.errorCode ? ` ${row.errorCode}` : ''}`,
      );
    }
  }
  let ledgerDebited = 0n;
  for (const payment of input.ledger.payments) {
    if (payment.executions > 0)
      ledgerDebited +=
        BigInt(payment.executions) * (thousandths(payment.amount.value) + thousandths(payment.fee.value));
    if (payment.executions > 0 && !ownPayments.has(payment.paymentId)) {
      paymentSide.executedWithoutRecord += 1;
      add(
        'executed-without-record',
        [payment.paymentId],
        `payment ${payment.status}, executed ${payment.executions} time(s), no walletflow payment names it`,
      );
    }
  }
  paymentSide.money = { walletflow: php(debited), ledger: php(ledgerDebited) };
  if (debited !== ledgerDebited)
    add('money-debited', [], `walletflow debited ${php(debited)}, the ledger ${php(ledgerDebited)} PHP`);

  // The users' balances moved by exactly what the ledger says (credited minus debited).
  if (input.balances) {
    const moved = input.balances.reduce((sum, user) => sum + thousandths(user.after) - thousandths(user.before), 0n);
    if (moved !== ledgerCredited - ledgerDebited) {
      add(
        'balances',
        [],
        `user balances moved ${php(moved)}, the ledger says ${php(ledgerCredited - ledgerDebited)} PHP`,
      );
    }
  }

  for (const [side, values] of [
    [fundingSide, fundingTimes],
    [paymentSide, paymentTimes],
  ] as const) {
    side.p50Ms = percentile(values, 50);
    side.p99Ms = percentile(values, 99);
  }
  fundingSide.statuses = countBy(input.fundings, (row) => row.status);
  paymentSide.statuses = countBy(input.payments, (row) => row.status);
  return { violations, table: { fundings: fundingSide, payments: paymentSide }, failedUnderFaults };
}

function emptySide(requested: number, recorded: number): SideSummary {
  return {
    requested,
    recorded,
    statuses: {},
    p50Ms: null,
    p99Ms: null,
    executions: { zero: 0, one: 0, more: 0 },
    matching: 0,
    money: { walletflow: '0.00', ledger: '0.00' },
    executedWithoutRecord: 0,
    stuck: 0,
    asPlanned: 0,
  };
}

function tallyExecutions(side: SideSummary, executions: number): void {
  if (executions === 0) side.executions.zero += 1;
  else if (executions === 1) side.executions.one += 1;
  else side.executions.more += 1;
}

const describe = (expected: Expected | null) =>
  expected ? `${expected.status}${expected.code ? ` ${expected.code}` : ''}` : 'a planned outcome';

function seconds(ms: number | null): string {
  return ms === null ? '–' : `${(ms / 1000).toFixed(1)} s`;
}

const statusOrder = [
  'APPROVED',
  'SUCCEEDED',
  'DECLINED',
  'REJECTED',
  'FAILED',
  'NEEDS_REVIEW',
  'RECONCILING',
  'EXECUTING',
  'CREATING',
  'PENDING',
];
function statuses(counts: Record<string, number>): string {
  const names = Object.keys(counts).sort((a, b) => statusOrder.indexOf(a) - statusOrder.indexOf(b));
  return names.length === 0 ? '–' : names.map((name) => `${name} ${counts[name]}`).join(', ');
}

/** The table as Markdown (it goes into the README as is). */
export function formatSoakTable(table: SoakTable, violations: Violation[]): string {
  const f = table.fundings;
  const p = table.payments;
  const bad = (invariant: Invariant) => violations.some((violation) => violation.invariant === invariant);
  const mark = (...invariants: Invariant[]) => (invariants.some(bad) ? '✗' : '✓');
  const rows: Array<[string, string, string, string]> = [
    [
      'requests (recorded / asked)',
      `${f.recorded} / ${f.requested}`,
      `${p.recorded} / ${p.requested}`,
      mark('lost-request'),
    ],
    ['final states', statuses(f.statuses), statuses(p.statuses), ''],
    [
      'time to final state p50 / p99',
      `${seconds(f.p50Ms)} / ${seconds(f.p99Ms)}`,
      `${seconds(p.p50Ms)} / ${seconds(p.p99Ms)}`,
      '',
    ],
    [
      'executions per item: 0 / 1 / more',
      `${f.executions.zero} / ${f.executions.one} / ${f.executions.more}`,
      `${p.executions.zero} / ${p.executions.one} / ${p.executions.more}`,
      mark('double-execution'),
    ],
    [
      'executions match the final state',
      `${f.matching} / ${f.recorded - f.stuck}`,
      `${p.matching} / ${p.recorded - p.stuck}`,
      mark('execution-mismatch', 'ledger-state-mismatch', 'amount-mismatch'),
    ],
    [
      'money, walletflow = ledger (PHP)',
      `credited ${f.money.walletflow} = ${f.money.ledger}`,
      `debited ${p.money.walletflow} = ${p.money.ledger}`,
      mark('money-credited', 'money-debited', 'balances'),
    ],
    [
      'executed without a funding / payment',
      String(f.executedWithoutRecord),
      String(p.executedWithoutRecord),
      mark('executed-without-record'),
    ],
    ['stuck (not final at the end)', String(f.stuck), String(p.stuck), mark('stuck')],
    [
      'reviews resolved (from the ledger)',
      `${f.reviews.APPROVED + f.reviews.FAILED} (APPROVED ${f.reviews.APPROVED}, FAILED ${f.reviews.FAILED})`,
      `${p.reviews.SUCCEEDED + p.reviews.FAILED} (SUCCEEDED ${p.reviews.SUCCEEDED}, FAILED ${p.reviews.FAILED})`,
      '',
    ],
    [
      'outcome as planned',
      `${f.asPlanned} / ${f.recorded - f.stuck}${f.failedUnderFaults > 0 ? ` (and ${f.failedUnderFaults} reviewed FAILED, nothing credited: the faults kept every execute from the wallet)` : ''}`,
      `${p.asPlanned} / ${p.recorded - p.stuck}${p.failedUnderFaults > 0 ? ` (and ${p.failedUnderFaults} reviewed FAILED, nothing debited: the faults kept every execute from the wallet)` : ''}`,
      mark('unexpected-outcome'),
    ],
  ];
  const lines = [
    '| check | fundings | payments | ok |',
    '|---|---|---|---|',
    ...rows.map((row) => `| ${row.join(' | ')} |`),
  ];
  return lines.join('\n');
}

/** One line per violation, ids included. */
export function formatViolations(violations: Violation[]): string {
  return violations
    .map(
      (violation) =>
        `  ✗ ${violation.invariant}: ${violation.detail}${violation.ids.length ? ` [${violation.ids.join(', ')}]` : ''}`,
    )
    .join('\n');
}
