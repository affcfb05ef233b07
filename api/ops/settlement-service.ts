// A day's settlement for the ops API and the console (contract-decisions section 10): which run
// answers a request, starting one when the day needs it. A day is settled by a durable run (the
// settleDay workflow, its progress and lines stored by ledger/settlement-runs.ts): the first GET of
// a day starts it and waits a few seconds for it; a POST starts a fresh one while the previous
// report is served; one run per day at a time. The stored report is read a page at a time (JSON)
// or line by line (CSV), never whole. The day is SETTLEMENT_TZ's; a day that has not begun has
// nothing to settle, and today's report is the day so far (`complete: false`). A run of a past day reads it only once
// the day is SETTLEMENT_GRACE_MS over (writes stamped before midnight may still commit): its first activity waits
// for that (activities/settlement.ts), and a run that began reading after it covers the whole day, whenever it was
// asked for, so one asked for within the grace is not settled again once it is over. A run whose
// workflow Temporal cannot start now (lib/workflow-unavailable.ts) stays recorded, RUNNING, for the
// next request of the day to start: this one is refused with a WorkflowUnavailableError saying so
// (503 WORKFLOW_UNAVAILABLE), unless it can be answered with a stored report.
import { WorkflowExecutionAlreadyStartedError, type Client } from '@temporalio/client';
import { z } from 'zod';
import type { Settlement, SettlementProgress } from '../../domain/ledger.ts';
import {
  settlementCsvHeader,
  settlementCsvRow,
  settlementCsvTotals,
  dayEndsAt,
  SETTLEMENT_GRACE_MS,
  localDateOf,
  sameZone,
} from '../../ledger/settlement.ts';
import type { CsvReport, CsvValue } from '../../lib/csv.ts';
import type { LineCursor, SettlementRun, SettlementRuns } from '../../ledger/settlement-runs.ts';
import type { Logger } from '../../lib/logger.ts';
import {
  refusalWords,
  startedWords,
  workflowRefusalOf,
  WorkflowUnavailableError,
} from '../../lib/workflow-unavailable.ts';
import { settlementWorkflowId, startSettleDay } from '../../workflows/settle-day.contract.ts';
import { workflowRunState } from '../../lib/temporal.ts';
import { Overloaded } from '../../lib/admission.ts';

export interface SettlementOptions {
  /** Wallet retrieves a run makes at once, at most (SETTLEMENT_MAX_IN_FLIGHT). */
  maxInFlight: number;
  /** Runs under way at once, of any days, at most (SETTLEMENT_MAX_RUNS); absent: DEFAULT_MAX_RUNS. */
  maxRuns?: number;
  /**
   * The run's page size, items per activity and activities per workflow run (tests make them small); absent: the
   * workflow's defaults.
   */
  pageSize?: number;
  itemsPerActivity?: number;
  activitiesPerRun?: number;
}

export interface SettlementServiceDependencies {
  runs: SettlementRuns;
  temporal: Client;
  taskQueue: string;
  /** SETTLEMENT_TZ. */
  timeZone: string;
  options: SettlementOptions;
  logger: Logger;
  now?: () => Date;
}

/**
 * What a GET is answered with: the stored report of this run, its progress, or nothing for a day that has not begun.
 */
export type SettlementAnswer =
  { kind: 'report'; run: SettlementRun } | { kind: 'running'; run: SettlementRun } | { kind: 'not-started' };

/** What a POST …/runs is answered with. */
export type FreshRunAnswer =
  { kind: 'started'; run: SettlementRun } | { kind: 'running'; run: SettlementRun } | { kind: 'not-started' };

type StartedRun = { kind: 'started' | 'running'; run: SettlementRun };
type ReportedRun = { kind: 'report'; run: SettlementRun };

/** How long a GET waits for a run before it answers 202. */
export const SETTLEMENT_WAIT_MS = 5000;

/** How often a waiting GET reads the run's row. */
const POLL_MS = 200;

/** A page's cursor: the run it pages (so every page of a report is that run's) and the last line. */
const cursorSchema = z.tuple([z.uuid(), z.enum(['funding', 'payment']), z.uuid()]);

export function encodeSettlementCursor(runId: string, after: LineCursor): string {
  return Buffer.from(JSON.stringify([runId, after.kind, after.itemId])).toString('base64url');
}

export function decodeSettlementCursor(cursor: string): { runId: string; after: LineCursor } | null {
  try {
    const parsed = cursorSchema.safeParse(JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')));
    return parsed.success ? { runId: parsed.data[0], after: { kind: parsed.data[1], itemId: parsed.data[2] } } : null;
  } catch {
    return null;
  }
}

export function createSettlementService(deps: SettlementServiceDependencies) {
  const { runs, logger } = deps;
  const now = deps.now ?? (() => new Date());
  const today = () => localDateOf(now(), deps.timeZone);
  /** The last day that may still gain events: today, or yesterday within SETTLEMENT_GRACE_MS of its end. */
  const openDay = () => localDateOf(new Date(now().getTime() - SETTLEMENT_GRACE_MS), deps.timeZone);
  /** How long a run of a past day still waits before it reads (its first activity's wait, by this clock: advice). */
  const readAfterMs = (date: string): number =>
    date < today() ? Math.max(0, dayEndsAt(date, deps.timeZone).getTime() + SETTLEMENT_GRACE_MS - now().getTime()) : 0;
  const maxRunning = deps.options.maxRuns ?? DEFAULT_MAX_RUNS;

  /**
   * When to ask again: about when the run will be done at its pace so far, within 1 to 10 s; a run waiting for its
   * day's grace to pass, when it will begin.
   */
  function retryAfterSeconds(run: SettlementRun): number {
    const elapsed = (now().getTime() - run.createdAt.getTime()) / 1000;
    // Waiting for the day's grace to pass before it reads: when it will have begun.
    const waiting = run.checked === 0 ? readAfterMs(run.date) : 0;
    if (waiting > 0) return Math.min(120, Math.ceil(waiting / 1000) + 1);
    if (run.checked === 0 || elapsed <= 0) return 2;
    const left = ((run.total - run.checked) * elapsed) / run.checked;
    return Math.min(10, Math.max(1, Math.ceil(left)));
  }

  /**
   * The run's workflow, started if it is not running yet (a start that finds it running does
   * nothing). A run whose workflow closed without finishing it is given up; null then. Temporal
   * refusing the start for now: a WorkflowUnavailableError, the run left RUNNING for the next request.
   */
  async function ensureWorkflow(run: SettlementRun): Promise<SettlementRun | null> {
    try {
      await startSettleDay(deps.temporal, {
        taskQueue: deps.taskQueue,
        input: {
          runId: run.id,
          date: run.date,
          maxInFlight: deps.options.maxInFlight,
          ...(deps.options.pageSize === undefined ? {} : { pageSize: deps.options.pageSize }),
          ...(deps.options.itemsPerActivity === undefined ? {} : { itemsPerActivity: deps.options.itemsPerActivity }),
          ...(deps.options.activitiesPerRun === undefined ? {} : { activitiesPerRun: deps.options.activitiesPerRun }),
        },
      });
      return run;
    } catch (error) {
      const refusal = workflowRefusalOf(error);
      if (refusal) {
        logger.warn(
          { runId: run.id, date: run.date, reason: refusal.reason },
          'settlement run: Temporal refused its workflow’s start; the next request of the day starts it',
        );
        throw new WorkflowUnavailableError(
          refusal,
          `the settlement run of ${run.date} is recorded, but its workflow could not be started (${refusalWords[refusal.reason]}): ${startedWords(refusal, 'nothing has been checked yet.')} Ask for the day again (GET /ops/settlements/${run.date}) after Retry-After: that starts this run.`,
        );
      }
      if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
      const current = await runs.find(run.id);
      if (current?.state !== 'RUNNING') return current;
      logger.warn(
        { runId: run.id, date: run.date },
        'settlement run: its workflow closed without finishing it; the run is given up and the day runs again',
      );
      await runs.fail(run.id, 'WORKFLOW_CLOSED');
      return null;
    }
  }

  /**
   * Of the runs that fill every place, those that hold one with no workflow at work on them are given up, so the day
   * they are of runs again at its next request: a workflow that closed without finishing its run, or one never started
   * (Temporal refused its start) whose run began over a minute ago by the database's clock (`startedAWhileAgo`; a
   * younger one is a start under way). Whether any was; a run whose workflow Temporal cannot describe now keeps its
   * place. The runs' workflows are read at once, each within DESCRIBE_TIMEOUT_MS.
   */
  async function freePlaces(open: SettlementRun[], startedAWhileAgo: ReadonlySet<string>): Promise<boolean> {
    const freed = await Promise.all(
      open.map(async (run) => {
        const state = await workflowRunState(deps.temporal, settlementWorkflowId(run.date, run.id), DESCRIBE_TIMEOUT_MS)
          .then((answer) => answer.state)
          .catch(() => 'running' as const);
        if (state === 'running' || (state === 'missing' && !startedAWhileAgo.has(run.id))) return false;
        // Not RUNNING any more: another request of the same burst gave it up first, or it ended. Its place is free all
        // the same (before: this request answered 503 with a place free).
        if (!(await runs.fail(run.id, state === 'closed' ? 'WORKFLOW_CLOSED' : 'WORKFLOW_NOT_STARTED'))) return true;
        logger.warn(
          { runId: run.id, date: run.date, workflow: state },
          'settlement run: it held a place with no workflow at work on it; given up, its day runs again when asked',
        );
        return true;
      }),
    );
    return freed.some(Boolean);
  }

  /**
   * A run of the day started, or the one RUNNING; its workflow running either way. Every place taken by runs of other
   * days (SETTLEMENT_MAX_RUNS): Overloaded, nothing recorded (503 OVERLOADED with Retry-After).
   */
  function startRun(date: string, requestedBy: string): Promise<StartedRun>;
  /**
   * For a GET that found no report: the report a run of the day finished since, looked for in each try's turn to start
   * one (another request's run: a day of few items ends within moments, and a burst of GETs started a second run of it
   * once the first had finished).
   */
  function startRun(date: string, requestedBy: string, unlessReported: true): Promise<StartedRun | ReportedRun>;
  async function startRun(
    date: string,
    requestedBy: string,
    unlessReported = false,
  ): Promise<StartedRun | ReportedRun> {
    /** The runs that filled every place at the last try, if it found them so. */
    let full: SettlementRun[] | null = null;
    for (let attempt = 0; attempt < 3; attempt += 1) {
      // Not whole until it begins reading: its first activity says so by the database's clock (an API host's clock a
      // few minutes ahead would store a run of part of the day as the whole of it, served for good).
      const started = await runs.startWithin(
        { date, timeZone: deps.timeZone, wholeDay: false, requestedBy },
        maxRunning,
        unlessReported ? (finished) => serves(finished, date) : undefined,
      );
      if (started.kind === 'reported') return { kind: 'report', run: started.run };
      if (started.kind === 'full') {
        full = started.running;
        if (attempt < 2 && (await freePlaces(started.running, started.startedAWhileAgo))) continue;
        break;
      }
      full = null;
      if (started.kind === 'numbered') continue;
      const ensured = await ensureWorkflow(started.run);
      // Read again: another request may have given it up since this one's read (its workflow already started, the
      // start found nothing to do). Not a run at work then: the next try starts one. (One that finished is answered:
      // a day with nothing to check can end within moments.)
      const running = ensured && (await runs.find(ensured.id));
      if (running && running.state !== 'FAILED') return { kind: started.kind, run: running };
    }
    if (full) {
      const soonest = Math.min(...full.map((run) => retryAfterSeconds(run)));
      throw new Overloaded(
        Math.max(FULL_RETRY_AFTER_SECONDS, soonest),
        `${full.length} settlement runs are under way (${full.map((run) => run.date).join(', ')}), as many as run at once (SETTLEMENT_MAX_RUNS): nothing was started for ${date}`,
        'settlement-runs',
      );
    }
    // Every try found its run given up or numbered past: requests racing for the day, which the next one finds settled,
    // or a run whose workflow ends it as it starts, a fault logged as one. Busy to the caller either way, never a 500.
    logger.error(
      { date },
      'settlement: no run of the day could be started in three tries (each given up or numbered past as it started)',
    );
    throw new Overloaded(
      FULL_RETRY_AFTER_SECONDS,
      `settlement of ${date}: no run could be started now (other requests for the day moved first): ask again after Retry-After`,
      'settlement-runs',
    );
  }

  /** Waits up to `waitMs` for the run to end (or the caller to go away); the run as it then is. */
  async function waitFor(run: SettlementRun, waitMs: number, signal?: AbortSignal): Promise<SettlementRun> {
    const deadline = Date.now() + waitMs;
    let current = run;
    while (current.state === 'RUNNING' && Date.now() < deadline && !signal?.aborted) {
      await new Promise((resolve) => setTimeout(resolve, Math.min(POLL_MS, Math.max(0, deadline - Date.now()))));
      current = (await runs.find(run.id)) ?? current;
    }
    return current;
  }

  /**
   * A report that answers for the day: one that covers the whole of it (it began reading once the grace was over); for
   * today, the day so far; for yesterday within the grace, a run begun after the day ended (the previous release's:
   * all of it but writes still committing), never one begun while the day went on (a snapshot of the evening would
   * pass for the day). Only a run of SETTLEMENT_TZ's
   * day: one settled under another time zone covered another 24 hours.
   */
  const serves = (run: SettlementRun | null, date: string): run is SettlementRun =>
    run !== null &&
    sameZone(run.timeZone, deps.timeZone) &&
    (run.wholeDay || date >= today() || (date >= openDay() && localDateOf(run.createdAt, deps.timeZone) > date));

  return {
    timeZone: deps.timeZone,

    /**
     * GET: the day's stored report, else its run's progress after waiting up to `waitMs` for it
     * (the first GET of a day starts the run; a GET while a fresh run goes is answered with the
     * report before it).
     */
    async settle(
      date: string,
      input: { requestedBy: string; waitMs?: number; signal?: AbortSignal },
    ): Promise<SettlementAnswer> {
      if (date > today()) return { kind: 'not-started' };
      const { running, finished } = await runs.latest(date);
      if (serves(finished, date)) {
        // A fresh run under way: its workflow is started if it is not; the report is served either way.
        if (running)
          await ensureWorkflow(running).catch((error: unknown) => {
            if (!(error instanceof WorkflowUnavailableError)) throw error;
          });
        return { kind: 'report', run: finished };
      }
      let run = running ? await ensureWorkflow(running) : null;
      run ??= (await startRun(date, input.requestedBy, true)).run;
      const waited = await waitFor(run, input.waitMs ?? SETTLEMENT_WAIT_MS, input.signal);
      // A run begun while the day went on (the day so far) may end after midnight: it does not answer for the past day.
      if (waited.state === 'SUCCEEDED' && serves(waited, date)) return { kind: 'report', run: waited };
      if (waited.state === 'RUNNING') return { kind: 'running', run: waited };
      // Given up while we waited (its workflow closed), or a report of part of the day: another run, answered with its
      // progress, unless another request's run has reported on the day meanwhile.
      const next = await startRun(date, input.requestedBy, true);
      return next.kind === 'report' ? next : { kind: 'running', run: next.run };
    },

    /**
     * The day's report or its run as they are now, never starting one, nor its workflow, nor writing
     * anything (a HEAD, the console's GET and its stream each second: a request the browser or a
     * monitor makes on its own starts no work). `none`: no report answers for the day and no run
     * works on it: none is recorded, or the one recorded has no open workflow (its start was refused,
     * or it was ended by hand), which the next GET, POST or console form starts or gives up. When
     * Temporal cannot say, the run is answered as it is stored.
     */
    async current(date: string): Promise<SettlementAnswer | { kind: 'none' }> {
      if (date > today()) return { kind: 'not-started' };
      const { running, finished } = await runs.latest(date);
      if (serves(finished, date)) return { kind: 'report', run: finished };
      if (!running) return { kind: 'none' };
      const { state } = await workflowRunState(
        deps.temporal,
        settlementWorkflowId(running.date, running.id),
        DESCRIBE_TIMEOUT_MS,
      ).catch((error: unknown) => {
        logger.warn({ runId: running.id, err: (error as Error).message }, 'settlement run: its workflow not read');
        return { state: 'running' as const };
      });
      if (state === 'running') return { kind: 'running', run: running };
      // Its workflow may have finished it between the two reads: its report, then.
      const now = await runs.find(running.id);
      return now?.state === 'SUCCEEDED' && serves(now, date) ? { kind: 'report', run: now } : { kind: 'none' };
    },

    /** POST …/runs: a fresh run of the day, unless one is running. */
    async startFresh(date: string, requestedBy: string): Promise<FreshRunAnswer> {
      if (date > today()) return { kind: 'not-started' };
      return startRun(date, requestedBy);
    },

    /** A run named by a page's cursor: the report it pages, when it is one of this day's finished runs. */
    async finishedRun(date: string, runId: string): Promise<SettlementRun | null> {
      const run = await runs.find(runId);
      return run && run.date === date && run.state === 'SUCCEEDED' ? run : null;
    },

    /** The 202 body of a run under way. */
    progress(run: SettlementRun): SettlementProgress {
      return {
        date: run.date,
        state: 'RUNNING',
        checked: run.checked,
        total: run.total,
        runId: run.id,
        startedAt: run.createdAt.toISOString(),
      };
    },

    retryAfterSeconds,

    /** A page of the stored report: its head and up to `limit` items after `after`. */
    async page(run: SettlementRun, after: LineCursor | null, limit: number): Promise<Settlement> {
      const { items, next } = await runs.page(run.id, after, limit);
      const summary = run.summary ?? { fundings: emptyCounts(), payments: emptyCounts() };
      return {
        date: run.date,
        timeZone: run.timeZone,
        runId: run.id,
        settledAt: settledAtOf(run),
        complete: run.wholeDay,
        readUntil: run.readUntil?.toISOString() ?? null,
        fundings: summary.fundings,
        payments: summary.payments,
        items,
        nextCursor: next ? encodeSettlementCursor(run.id, next) : null,
      };
    },

    /**
     * The finished run's report as CSV rows, read a page at a time as the client takes them (api/http/csv-stream.ts).
     */
    csv(run: SettlementRun): CsvReport {
      async function* rows(): AsyncGenerator<CsvValue[]> {
        for await (const item of runs.lines(run.id)) yield settlementCsvRow(item);
        yield* settlementCsvTotals(run.date, run.summary ?? { fundings: emptyCounts(), payments: emptyCounts() }, {
          complete: run.wholeDay,
          settledAt: settledAtOf(run),
          readUntil: run.readUntil?.toISOString() ?? null,
        });
      }
      return { report: 'settlement', header: settlementCsvHeader, rows: rows() };
    },
  };
}

/** How long a read of a run's workflow may take before the run is answered as it is stored. */
const DESCRIBE_TIMEOUT_MS = 2000;

/** Settlement runs under way at once, of any days, when SETTLEMENT_MAX_RUNS is not set. */
export const DEFAULT_MAX_RUNS = 2;

/** The least Retry-After of a start refused for runs of other days under way. */
const FULL_RETRY_AFTER_SECONDS = 5;

/** When the run's report was settled (its end; its start while it has none). */
const settledAtOf = (run: SettlementRun): string => (run.finishedAt ?? run.createdAt).toISOString();

/** The header a CSV report carries: whether it is the whole day (`true`) or the day so far (`false`). */
export const SETTLEMENT_COMPLETE_HEADER = 'Settlement-Complete';

const emptyCounts = () => ({
  matched: 0,
  missing: 0,
  mismatched: 0,
  total: { count: 0, amount: { currency: 'PHP', value: '0.00' } },
});

export type SettlementService = ReturnType<typeof createSettlementService>;
