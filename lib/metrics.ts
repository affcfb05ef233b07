// walletflow's Prometheus series (prom-client), one registry per process or per test stack and
// handed to whoever records through their dependency factories: no global registry, so several
// stacks in one test process keep their own counts. Label values are bounded: route templates,
// states, operation names and codes, never an id, a path with ids, or a token.
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { FinalFundingStatus } from '../domain/funding.ts';
import type { FinalPaymentStatus } from '../domain/payment.ts';

/** The wallet call fields the metrics read (audit/wallet-call-log.ts's row, wallet/call-record.ts). */
export interface WalletCallSample {
  service: string;
  operation: string;
  httpStatus: number | null;
  outcome: string;
  errorCode: string | null;
  durationMs: number;
}

export type TokenRefreshResult = 'refreshed' | 'reauth_required' | 'failed';

/**
 * A start of an onboarding workflow from the outbox: started (or found running), refused because it already ran, failed
 * (retried later).
 */
export type OnboardingStartOutcome = 'started' | 'already_closed' | 'failed';

/**
 * How a streamed report ended: whole, the client went away, the client stopped reading past the stall limit, or a
 * failure cut it.
 */
export type ReportStreamOutcome = 'completed' | 'disconnected' | 'stalled' | 'refused' | 'failed';

/**
 * How a console live stream ended: its last render (done), its session ended (signed-out), a newer
 * stream of its session took its place (replaced), its lifetime passed, its client went away, its
 * client took nothing for the stall bound (stalled: cut off), or a render failed (failed: cut off).
 */
export type LiveStreamOutcome =
  'done' | 'signed-out' | 'replaced' | 'refused' | 'lifetime' | 'disconnected' | 'stalled' | 'failed';

/** What a process's console live streams hold now. */
export interface LiveStreamsHeld {
  open: number;
  /** Bytes their responses hold that their sockets have not taken. */
  bufferedBytes: number;
}

export interface Metrics {
  readonly registry: Registry;
  /** A funding reached a final state (counted once, by whoever moved it there). */
  fundingFinished(status: FinalFundingStatus, createdAt: Date): void;
  /** A single funding accepted, by the run that carries it: its own workflow or a lane (fundings/funding-paths.ts). */
  fundingStarted(path: 'workflow' | 'lane'): void;
  /** A payment reached a final state. */
  paymentFinished(status: FinalPaymentStatus, createdAt: Date): void;
  walletCall(call: WalletCallSample): void;
  tokenRefresh(kind: 'EMBEDDED' | 'STANDALONE', result: TokenRefreshResult): void;
  /** One repair of the sweep (`action` is its RepairAction). */
  sweepRepair(action: string): void;
  sessionUrl(status: number, seconds: number): void;
  /** One onboarding workflow start by the dispatcher or the landing page (api/embedded/onboarding-dispatcher.ts). */
  onboardingStart(outcome: OnboardingStartOutcome): void;
  httpRequest(request: { method: string; route: string; status: number; seconds: number }): void;
  /** Rows a streamed report (api/http/csv-stream.ts) read from its source and wrote, as it goes. */
  reportRows(report: string, rows: number): void;
  /** A streamed report ended, and how. */
  reportStreamEnded(report: string, outcome: ReportStreamOutcome): void;
  /** Where to read what the console's live streams hold (api/console/live-region.ts), when the series are collected. */
  liveStreamsHeld(read: () => LiveStreamsHeld): void;
  /** A console live stream ended, and how. */
  liveStreamEnded(outcome: LiveStreamOutcome): void;
}

/** Seconds from a request to its answer (HTTP, wallet calls, the session URL). */
const latencyBuckets = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
/** Seconds from a funding or payment's creation to its final state: most in seconds, some after a reconciliation. */
const finishBuckets = [0.5, 1, 2, 5, 10, 30, 60, 300, 900, 3600, 21_600, 86_400];

/** Past this many distinct values, a label's new values are reported as `other`. */
export const MAX_LABEL_VALUES = 100;
const labelValuePattern = /^[A-Za-z0-9_.:/{}*-]{1,64}$/;

/**
 * Keeps a label's values bounded: a value of unexpected shape, or any new value past `max`
 * distinct ones, becomes `other` (an outside service's error codes, a route table that grew).
 */
export function boundedLabel(max = MAX_LABEL_VALUES): (value: string | null | undefined, fallback?: string) => string {
  const seen = new Set<string>();
  return (value, fallback = 'none') => {
    if (value === null || value === undefined || value === '') return fallback;
    if (!labelValuePattern.test(value)) return 'other';
    if (seen.has(value)) return value;
    if (seen.size >= max) return 'other';
    seen.add(value);
    return value;
  };
}

const walletOutcomes = new Set(['ok', 'rejected', 'unknown', 'retryable']);
const httpMethods = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

export function createMetrics(options: { defaultMetrics?: boolean; labels?: Record<string, string> } = {}): Metrics {
  const registry = new Registry();
  if (options.labels) registry.setDefaultLabels(options.labels);
  if (options.defaultMetrics) collectDefaultMetrics({ register: registry });

  const fundings = new Counter({
    name: 'walletflow_fundings_finished_total',
    help: 'Fundings that reached a final state, by that state',
    labelNames: ['status'] as const,
    registers: [registry],
  });
  const fundingsStarted = new Counter({
    name: 'walletflow_fundings_started_total',
    help: 'Single fundings accepted, by the run that carries them: workflow (their own) or lane (a shared one)',
    labelNames: ['path'] as const,
    registers: [registry],
  });
  const fundingSeconds = new Histogram({
    name: 'walletflow_funding_duration_seconds',
    help: 'Seconds from a funding request to its final state',
    labelNames: ['status'] as const,
    buckets: finishBuckets,
    registers: [registry],
  });
  const payments = new Counter({
    name: 'walletflow_payments_finished_total',
    help: 'Payments that reached a final state, by that state',
    labelNames: ['status'] as const,
    registers: [registry],
  });
  const paymentSeconds = new Histogram({
    name: 'walletflow_payment_duration_seconds',
    help: 'Seconds from a payment request to its final state',
    labelNames: ['status'] as const,
    buckets: finishBuckets,
    registers: [registry],
  });
  const walletCalls = new Counter({
    name: 'walletflow_wallet_calls_total',
    help: 'Calls to the wallet service, by operation, HTTP status (none: no answer), outcome and error code',
    labelNames: ['service', 'operation', 'http_status', 'outcome', 'error_code'] as const,
    registers: [registry],
  });
  const walletSeconds = new Histogram({
    name: 'walletflow_wallet_call_duration_seconds',
    help: 'Seconds per wallet service call, by operation and HTTP status',
    labelNames: ['service', 'operation', 'http_status'] as const,
    buckets: latencyBuckets,
    registers: [registry],
  });
  const tokenRefreshes = new Counter({
    name: 'walletflow_token_refreshes_total',
    help: 'User token refreshes by the token vault, by link kind and result',
    labelNames: ['kind', 'result'] as const,
    registers: [registry],
  });
  const repairs = new Counter({
    // The sweep's repairs; the metric keeps its first name, which dashboards and alerts hold.
    name: 'walletflow_reconcile_repairs_total',
    help: 'Fundings and payments repaired by the sweep, by action',
    labelNames: ['action'] as const,
    registers: [registry],
  });
  const sessionSeconds = new Histogram({
    name: 'walletflow_session_url_duration_seconds',
    help: 'Seconds to answer the session URL (POST /embedded/session), by HTTP status',
    labelNames: ['status'] as const,
    buckets: latencyBuckets,
    registers: [registry],
  });
  const onboardingStarts = new Counter({
    name: 'walletflow_onboarding_starts_total',
    help: 'Onboarding workflow starts from the session outbox, by outcome (failed: retried after a backoff)',
    labelNames: ['outcome'] as const,
    registers: [registry],
  });
  const httpSeconds = new Histogram({
    name: 'walletflow_http_request_duration_seconds',
    help: 'Seconds to answer an API request, by method, route template and HTTP status',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: latencyBuckets,
    registers: [registry],
  });
  const reportRows = new Counter({
    name: 'walletflow_report_rows_total',
    help: 'Rows streamed reports read from the database and wrote, by report, counted as they are written',
    labelNames: ['report'] as const,
    registers: [registry],
  });
  const reportStreams = new Counter({
    name: 'walletflow_report_streams_total',
    help: 'Streamed reports ended, by report and outcome (completed, disconnected, stalled, refused, failed)',
    labelNames: ['report', 'outcome'] as const,
    registers: [registry],
  });

  /** Every app's live streams on this registry (one in production; tests may start several). */
  const liveReaders = new Set<() => LiveStreamsHeld>();
  const liveHeld = (): LiveStreamsHeld =>
    [...liveReaders].reduce(
      (sum, read) => {
        const held = read();
        return { open: sum.open + held.open, bufferedBytes: sum.bufferedBytes + held.bufferedBytes };
      },
      { open: 0, bufferedBytes: 0 },
    );
  new Gauge({
    name: 'walletflow_console_live_streams',
    help: 'Console live streams (Server-Sent Events) open in this process',
    registers: [registry],
    collect() {
      this.set(liveHeld().open);
    },
  });
  new Gauge({
    name: 'walletflow_console_live_buffered_bytes',
    help: 'Bytes the open console live streams hold that their clients have not taken (per stream at most a socket buffer and a push)',
    registers: [registry],
    collect() {
      this.set(liveHeld().bufferedBytes);
    },
  });
  const liveStreamsEnded = new Counter({
    name: 'walletflow_console_live_streams_ended_total',
    help: 'Console live streams ended, by outcome (done, signed-out, replaced, lifetime, disconnected, stalled, failed)',
    labelNames: ['outcome'] as const,
    registers: [registry],
  });

  const sinceSeconds = (createdAt: Date) => Math.max(0, (Date.now() - createdAt.getTime()) / 1000);
  const operationLabel = boundedLabel();
  const errorCodeLabel = boundedLabel();
  const routeLabel = boundedLabel();
  const actionLabel = boundedLabel(20);
  const reportLabel = boundedLabel(20);

  return {
    registry,
    fundingFinished(status, createdAt) {
      fundings.inc({ status });
      fundingSeconds.observe({ status }, sinceSeconds(createdAt));
    },
    fundingStarted(path) {
      fundingsStarted.inc({ path });
    },
    paymentFinished(status, createdAt) {
      payments.inc({ status });
      paymentSeconds.observe({ status }, sinceSeconds(createdAt));
    },
    walletCall(call) {
      const service = ['connect', 'op', 'transfers'].includes(call.service) ? call.service : 'other';
      const operation = operationLabel(call.operation);
      const httpStatus = call.httpStatus === null ? 'none' : String(call.httpStatus);
      walletCalls.inc({
        service,
        operation,
        http_status: httpStatus,
        outcome: walletOutcomes.has(call.outcome) ? call.outcome : 'other',
        error_code: errorCodeLabel(call.errorCode),
      });
      walletSeconds.observe({ service, operation, http_status: httpStatus }, call.durationMs / 1000);
    },
    tokenRefresh(kind, result) {
      tokenRefreshes.inc({ kind, result });
    },
    sweepRepair(action) {
      repairs.inc({ action: actionLabel(action) });
    },
    sessionUrl(status, seconds) {
      sessionSeconds.observe({ status: String(status) }, seconds);
    },
    onboardingStart(outcome) {
      onboardingStarts.inc({ outcome });
    },
    httpRequest({ method, route, status, seconds }) {
      httpSeconds.observe(
        { method: httpMethods.has(method) ? method : 'other', route: routeLabel(route), status: String(status) },
        seconds,
      );
    },
    reportRows(report, rows) {
      if (rows > 0) reportRows.inc({ report: reportLabel(report) }, rows);
    },
    reportStreamEnded(report, outcome) {
      reportStreams.inc({ report: reportLabel(report), outcome });
    },
    liveStreamsHeld(read) {
      liveReaders.add(read);
    },
    liveStreamEnded(outcome) {
      liveStreamsEnded.inc({ outcome });
    },
  };
}
