// On-call gauges computed at scrape time from PostgreSQL (docs/runbook.md): items in review, items
// reconciling, unfinished items by status and the age of the oldest unfinished funding and
// payment, the session URL's onboarding outbox (sessions whose onboarding workflow is not started
// yet, and the oldest one's age), and the settlement runs under way (and the oldest one's age: a
// day of 100,000 items settles in minutes, so a run much older is stuck). One grouped query per
// table over the (status, created_at) index (the outbox and the runs under way are small), cached
// a few seconds and shared by every gauge and concurrent scrape, so scraping never loads the
// database: one read at a time, however slow. A scrape waits for it a bounded time (3 s), then
// answers without these gauges, so the process's other metrics still come when the database is
// slow, the moment on-call needs them. Every API copy reports the same values: alert on max(), not sum().
import { Gauge, type Registry } from 'prom-client';
import { unfinishedFundingStatuses } from '../domain/funding.ts';
import { finalPaymentStatuses, paymentStatuses, type PaymentStatus } from '../domain/payment.ts';
import type { Database } from './database.ts';

export type WorkloadKind = 'funding' | 'payment';

/** Unfinished items of one kind: count by status and when the oldest was created. */
export interface WorkloadCounts {
  byStatus: Record<string, number>;
  oldestCreatedAt: Date | null;
}

/** The onboarding outbox: sessions stored whose onboarding workflow is not started yet. */
export interface OnboardingBacklog {
  pending: number;
  oldestCreatedAt: Date | null;
}

/** Settlement runs RUNNING: how many, and when the oldest began. */
export interface SettlementsRunning {
  running: number;
  oldestCreatedAt: Date | null;
}

export type Workload = Record<WorkloadKind, WorkloadCounts> & {
  onboarding: OnboardingBacklog;
  settlements: SettlementsRunning;
};

const unfinishedPaymentStatuses: readonly PaymentStatus[] = paymentStatuses.filter(
  (status) => !(finalPaymentStatuses as readonly string[]).includes(status),
);

/** The series this module registers (the alert-rule test reads them from a registry). */
export const workloadSeries = {
  fundingsInReview: 'walletflow_fundings_in_review',
  paymentsInReview: 'walletflow_payments_in_review',
  fundingsReconciling: 'walletflow_fundings_reconciling',
  unfinished: 'walletflow_unfinished_items',
  oldestAge: 'walletflow_oldest_unfinished_age_seconds',
  onboardingsPending: 'walletflow_onboardings_pending',
  oldestPendingOnboardingAge: 'walletflow_oldest_pending_onboarding_age_seconds',
  settlementsRunning: 'walletflow_settlement_runs_running',
  oldestSettlementAge: 'walletflow_oldest_running_settlement_age_seconds',
} as const;

function countsOf(
  rows: { status: string; _count: { _all: number }; _min: { createdAt: Date | null } }[],
): WorkloadCounts {
  const byStatus: Record<string, number> = {};
  let oldest: Date | null = null;
  for (const row of rows) {
    byStatus[row.status] = row._count._all;
    if (row._min.createdAt && (!oldest || row._min.createdAt < oldest)) oldest = row._min.createdAt;
  }
  return { byStatus, oldestCreatedAt: oldest };
}

/**
 * Two grouped reads (fundings, payments) of the unfinished statuses only, one of the onboarding outbox and one of the
 * settlement runs under way (a few a day).
 */
export async function readWorkload(database: Database): Promise<Workload> {
  const [fundings, payments, [outbox], [settlements]] = await Promise.all([
    database.funding.groupBy({
      by: ['status'],
      where: { status: { in: [...unfinishedFundingStatuses] } },
      _count: { _all: true },
      _min: { createdAt: true },
    }),
    database.payment.groupBy({
      by: ['status'],
      where: { status: { in: [...unfinishedPaymentStatuses] } },
      _count: { _all: true },
      _min: { createdAt: true },
    }),
    database.$queryRaw<
      Array<{ pending: number; oldest: Date | null }>
    >`SELECT count(*)::int AS pending, min(created_at) AS oldest FROM onboarding_outbox`,
    database.$queryRaw<
      Array<{ running: number; oldest: Date | null }>
    >`SELECT count(*)::int AS running, min(created_at) AS oldest FROM settlement_run WHERE state = 'RUNNING'`,
  ]);
  return {
    funding: countsOf(fundings),
    payment: countsOf(payments),
    onboarding: { pending: outbox?.pending ?? 0, oldestCreatedAt: outbox?.oldest ?? null },
    settlements: { running: settlements?.running ?? 0, oldestCreatedAt: settlements?.oldest ?? null },
  };
}

/** After this many scrape waits a read under way is taken to have hung, and the next scrape reads again. */
const ABANDON_AFTER_WAITS = 20;

export interface WorkloadGaugeOptions {
  /** How long one read serves scrapes (default 5 s). */
  cacheMs?: number;
  /** How long a scrape waits for a read under way before it answers without these gauges (default 3 s). */
  readTimeoutMs?: number;
  now?: () => number;
  /** A failed read, or one not done in time: the gauges report nothing for this scrape (absent, not stale). */
  onError?: (error: unknown) => void;
}

/** Registers the gauges on `registry`, each collected from one cached `read()`. */
export function registerWorkloadGauges(
  registry: Registry,
  read: () => Promise<Workload>,
  options: WorkloadGaugeOptions = {},
): void {
  if (registry.getSingleMetric(workloadSeries.fundingsInReview)) return;
  const now = options.now ?? Date.now;
  const cacheMs = options.cacheMs ?? 5000;
  const readTimeoutMs = options.readTimeoutMs ?? 3000;
  /** A failure told, never thrown on: a scrape answers whatever onError does. */
  const reportError = (error: unknown) => {
    try {
      options.onError?.(error);
    } catch {
      // Nothing more to say.
    }
  };
  let cached: { at: number; workload: Workload } | undefined;
  /**
   * The read under way, shared by every gauge and scrape: never a second one beside it, unless it has hung for
   * ABANDON_AFTER_WAITS waits (a connection gone half-open): then it is given up, and the next scrape reads again.
   */
  let reading: { started: number; workload: Promise<Workload | null> } | undefined;
  /** The scrape's wait for the read under way, shared by the gauges of one scrape. */
  let waiting: Promise<Workload | null> | undefined;
  const snapshot = (): Promise<Workload | null> => {
    if (cached && now() - cached.at < cacheMs) return Promise.resolve(cached.workload);
    if (reading && now() - reading.started >= readTimeoutMs * ABANDON_AFTER_WAITS) reading = undefined;
    const current = (reading ??= {
      started: now(),
      workload: read()
        .then(
          (workload) => {
            // Served from when it was read: a read slower than the scrape's wait serves the scrapes after it.
            cached = { at: now(), workload };
            return workload;
          },
          (error: unknown) => {
            reportError(error);
            return null;
          },
        )
        .finally(() => {
          if (reading?.workload === current) reading = undefined;
        }),
    }).workload;
    waiting ??= new Promise<Workload | null>((resolve) => {
      const late = setTimeout(() => {
        reportError(new Error(`the workload was not read within ${readTimeoutMs} ms: absent from this scrape`));
        resolve(null);
      }, readTimeoutMs);
      void current.then((workload) => {
        clearTimeout(late);
        resolve(workload);
      });
    }).finally(() => {
      waiting = undefined;
    });
    return waiting;
  };
  const ageOf = (counts: { oldestCreatedAt: Date | null }) =>
    counts.oldestCreatedAt ? Math.max(0, (now() - counts.oldestCreatedAt.getTime()) / 1000) : 0;

  const gauge = <L extends string>(
    name: string,
    help: string,
    labelNames: readonly L[],
    fill: (gauge: Gauge<L>, workload: Workload) => void,
  ) =>
    new Gauge<L>({
      name,
      help,
      labelNames,
      registers: [registry],
      async collect() {
        this.reset();
        const workload = await snapshot();
        if (workload) fill(this, workload);
        // reset() gives a gauge without labels a 0: no read, no value (absent, not a false 0).
        else if (labelNames.length === 0) this.remove({} as Partial<Record<L, string>>);
      },
    });

  gauge(
    workloadSeries.fundingsInReview,
    'Fundings in NEEDS_REVIEW, waiting for a person (walletflow fundings resolve)',
    [],
    (g, w) => g.set(w.funding.byStatus.NEEDS_REVIEW ?? 0),
  );
  gauge(
    workloadSeries.paymentsInReview,
    'Payments in NEEDS_REVIEW, waiting for a person (walletflow payments resolve)',
    [],
    (g, w) => g.set(w.payment.byStatus.NEEDS_REVIEW ?? 0),
  );
  gauge(workloadSeries.fundingsReconciling, 'Fundings in RECONCILING: an execute outcome not known yet', [], (g, w) =>
    g.set(w.funding.byStatus.RECONCILING ?? 0),
  );
  gauge(
    workloadSeries.unfinished,
    'Fundings and payments not final, by kind and status',
    ['kind', 'status'] as const,
    (g, w) => {
      for (const status of unfinishedFundingStatuses)
        g.set({ kind: 'funding', status }, w.funding.byStatus[status] ?? 0);
      for (const status of unfinishedPaymentStatuses)
        g.set({ kind: 'payment', status }, w.payment.byStatus[status] ?? 0);
    },
  );
  gauge(
    workloadSeries.oldestAge,
    'Seconds since the oldest unfinished funding or payment was requested (0: none)',
    ['kind'] as const,
    (g, w) => {
      g.set({ kind: 'funding' }, ageOf(w.funding));
      g.set({ kind: 'payment' }, ageOf(w.payment));
    },
  );
  gauge(
    workloadSeries.onboardingsPending,
    'Embedded sessions stored whose onboarding workflow is not started yet (the session outbox)',
    [],
    (g, w) => g.set(w.onboarding.pending),
  );
  gauge(
    workloadSeries.oldestPendingOnboardingAge,
    'Seconds since the oldest session still waiting for its onboarding start was stored (0: none)',
    [],
    (g, w) => g.set(ageOf(w.onboarding)),
  );
  gauge(workloadSeries.settlementsRunning, 'Settlement runs under way (RUNNING), any day', [], (g, w) =>
    g.set(w.settlements.running),
  );
  gauge(
    workloadSeries.oldestSettlementAge,
    'Seconds since the oldest settlement run still RUNNING began (0: none)',
    [],
    (g, w) => g.set(ageOf(w.settlements)),
  );
}
