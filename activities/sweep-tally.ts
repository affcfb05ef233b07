// The sweep's report as it is filled: every funding and payment it looks at is counted, each list
// keeps only its first MAX_SWEEP_LISTED entries, and every funding or payment the sweep acted on or
// left for ops gets a log line of its own. The report is the sweep activity's result, one Temporal
// payload (2 MB at most), while a sweep may look at every item of several 100,000-item batches:
// what it returns must not grow with what it saw.
import type { Logger } from '../lib/logger.ts';
import type { Metrics } from '../lib/metrics.ts';
import {
  MAX_SWEEP_LISTED,
  type RepairAction,
  type SweepCounts,
  type SweepReport,
} from '../workflows/sweep.contract.ts';

/** Fundings and payments left to the owner that is working on them: counted, neither listed nor logged one by one. */
const leftToOwner: ReadonlySet<RepairAction> = new Set(['workflow-running', 'owner-active']);

type ListName =
  | 'items'
  | 'paymentItems'
  | 'fundingsNeedingReview'
  | 'paymentsNeedingReview'
  | 'failedButExecuted'
  | 'holdsSettled'
  | 'batchRunners';
type EntryOf<Name extends ListName> = NonNullable<SweepReport[Name]>[number];

export type SweepTally = ReturnType<typeof createSweepTally>;

export function createSweepTally(deps: { logger: Logger; metrics?: Pick<Metrics, 'sweepRepair'> | undefined }) {
  const counts: SweepCounts = {
    fundings: {},
    payments: {},
    fundingsNeedingReview: 0,
    paymentsNeedingReview: 0,
    failedButExecuted: 0,
    holdsSettled: 0,
    batchRunners: 0,
  };
  const report: SweepReport & Required<Omit<SweepReport, 'checked' | 'repaired'>> = {
    checked: 0,
    repaired: 0,
    items: [],
    paymentItems: [],
    paymentsNeedingReview: [],
    fundingsNeedingReview: [],
    failedButExecuted: [],
    holdsSettled: [],
    batchRunners: [],
    counts,
  };

  /** Keeps the entry while its list has room (the count is the caller's). */
  function list<Name extends ListName>(name: Name, entry: EntryOf<Name>): void {
    const entries = report[name] as Array<EntryOf<Name>>;
    if (entries.length < MAX_SWEEP_LISTED) entries.push(entry);
  }

  function repaired(action: string): void {
    report.repaired += 1;
    deps.metrics?.sweepRepair(action);
  }

  return {
    report,
    /** What the sweep did with one funding it looked at; `repair`: the record took a repair. */
    funding(entry: EntryOf<'items'>, repair: boolean): void {
      counts.fundings[entry.action] = (counts.fundings[entry.action] ?? 0) + 1;
      if (repair) repaired(entry.action);
      if (leftToOwner.has(entry.action)) return;
      list('items', entry);
      deps.logger.info(
        { fundingId: entry.fundingId, status: entry.status, action: entry.action, detail: entry.detail },
        'sweep: funding',
      );
    },
    /** What the sweep did with one payment it looked at. */
    payment(entry: EntryOf<'paymentItems'>, repair: boolean): void {
      counts.payments[entry.action] = (counts.payments[entry.action] ?? 0) + 1;
      if (repair) repaired(entry.action);
      if (leftToOwner.has(entry.action)) return;
      list('paymentItems', entry);
      deps.logger.info(
        { paymentId: entry.id, status: entry.status, action: entry.action, detail: entry.detail },
        'sweep: payment',
      );
    },
    /** Fundings in review: the first of them, and how many there are (all of them, asked in this sweep or not). */
    fundingsNeedingReview(entries: ReadonlyArray<EntryOf<'fundingsNeedingReview'>>, count: number): void {
      counts.fundingsNeedingReview = count;
      for (const entry of entries) list('fundingsNeedingReview', entry);
    },
    /** A FAILED funding whose transfer the wallet shows executed (the caller logs it as an error). */
    failedButExecuted(entry: EntryOf<'failedButExecuted'>): void {
      counts.failedButExecuted += 1;
      list('failedButExecuted', entry);
      deps.metrics?.sweepRepair('failed-but-executed');
    },
    holdSettled(entry: EntryOf<'holdsSettled'>): void {
      counts.holdsSettled += 1;
      list('holdsSettled', entry);
      if (entry.action !== 'none') repaired(entry.action === 'posted' ? 'hold-posted' : 'hold-released');
      deps.logger.info(
        { fundingId: entry.fundingId, status: entry.status, action: entry.action },
        'sweep: open hold of a final funding settled',
      );
    },
    batchRunner(entry: EntryOf<'batchRunners'>): void {
      counts.batchRunners += 1;
      list('batchRunners', entry);
      report.repaired += 1;
    },
    /** Payments in review: the first of them, and how many there are. */
    paymentsNeedingReview(entries: ReadonlyArray<EntryOf<'paymentsNeedingReview'>>, count: number): void {
      counts.paymentsNeedingReview = count;
      for (const entry of entries) list('paymentsNeedingReview', entry);
    },
  };
}
