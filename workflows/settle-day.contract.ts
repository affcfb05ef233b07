// settleDay's contract: what its starters and the workflow itself agree on (type name, input and
// result, workflow id, the progress query, the activities it schedules and their time-outs) and
// the one start every starter uses. Imported by the workflow bundle: runtime imports from
// @temporalio/* and workflows/ only (the workflow imports this file, never the reverse).
import type { Client } from '@temporalio/client';
import { defineQuery } from '@temporalio/workflow';
import { startOncePolicies } from './idempotent-start.ts';

/** The workflow type: the name Temporal and every stored history know it by (the function's name). */
export const settleDayWorkflowType = 'settleDay';

/**
 * One workflow per settlement run: the day, then the run's id (a day's runs follow one another;
 * the database lets one run at a time).
 */
export const settlementWorkflowId = (date: string, runId: string) => `settlement-${date}-${runId}`;

/** The day's two sides, checked in this order. */
export type SettlementSide = 'fundings' | 'payments';

/**
 * Where a side's reading stands: the event that made its last checked item APPROVED or SUCCEEDED
 * (time, ISO with milliseconds, and id). Ids and times only.
 */
export interface SettlementCursor {
  at: string;
  eventId: string;
}

export interface SettleDayInput {
  /** The settlement_run row this workflow runs (ledger/settlement-runs.ts). */
  runId: string;
  /** The day, YYYY-MM-DD (for the eyes: the run row holds it). */
  date: string;
  /** Wallet retrieves under way at once, at most. */
  maxInFlight: number;
  /** Items read per page (default 500). */
  pageSize?: number;
  /** Items one settleItems activity checks before it returns (default 10,000). */
  itemsPerActivity?: number;
  /** settleItems activities per run before it continues as new (default 50). */
  activitiesPerRun?: number;
  /** Carried over a continue-as-new: the side being checked (absent: the run begins). */
  side?: SettlementSide;
  /** Carried over a continue-as-new: where that side's reading stands. */
  after?: SettlementCursor | null;
  /** Carried over a continue-as-new: the retrieves at once the wallet's 429s left. */
  inFlight?: number;
  /** Carried over a continue-as-new: the retrieves refused 429 so far. */
  rateLimited?: number;
}

export interface SettleDayResult {
  runId: string;
  date: string;
  /** Lines stored: the day's fundings and payments. */
  checked: number;
  matched: number;
  missing: number;
  mismatched: number;
  /** Retrieves the wallet refused with 429 (each waited for and sent again). */
  rateLimited: number;
}

/**
 * Where the current run of the workflow stands: for ops' eyes and the tests, never for decisions. Wire name 'progress'.
 */
export interface SettleDayProgress {
  side: SettlementSide | 'finishing' | 'beginning';
  after: SettlementCursor | null;
  inFlight: number;
  rateLimited: number;
}
export const settleDayProgressQuery = defineQuery<SettleDayProgress>('progress');

/** The ApplicationFailure types the settlement activities throw and settleDay never retries. */
export const settleDayFailureTypes = {
  /** The run row is gone or no longer RUNNING (given up): nothing more is written for it. */
  notRunning: 'SettlementRunNotRunning',
} as const;

/** settleDay's activities' time-outs (ms). */
export const settleDayActivityTimeouts = {
  /**
   * A settleItems attempt: bounded by its items (itemsPerActivity), at worst a long wait for the
   * wallet; its heartbeat, not this, notices a dead worker.
   */
  settleItemsMs: 30 * 60_000,
  /**
   * A worker that died or froze: its settleItems attempt is tried again after this, where its last heartbeat said it
   * was.
   */
  heartbeatMs: 10_000,
  /** The run's beginning (two counts) and its end (the day's counts from its lines). */
  bookkeepingMs: 120_000,
} as const;

/** What one settleItems activity did. */
export interface SettleItemsOutcome {
  /** Where the side's reading stands now; null with `done`. */
  after: SettlementCursor | null;
  /** The side has no item left. */
  done: boolean;
  /** Lines this activity stored. */
  stored: number;
  /** The retrieves at once it ended with (halved by each episode of 429s, one back after each run of successes). */
  inFlight: number;
  /** Retrieves the wallet refused with 429. */
  rateLimited: number;
}

export interface SettleItemsInput {
  runId: string;
  side: SettlementSide;
  after: SettlementCursor | null;
  pageSize: number;
  maxItems: number;
  maxInFlight: number;
  inFlight: number;
}

/** The activities settleDay schedules (activities/settlement.ts implements them, taking its types from here). */
export interface SettleDayActivities {
  /** Counts the day's fundings and payments into the run's total. */
  beginSettlementRun(runId: string): Promise<{ total: number }>;
  /**
   * The side's next items, a page at a time from `after` (a retried attempt from its last
   * heartbeat instead), each checked once: a page's retrieves at most inFlight at once, its lines
   * and the run's progress stored together, then a heartbeat with where it got to. An item already
   * stored is neither retrieved nor stored again.
   */
  settleItems(input: SettleItemsInput): Promise<SettleItemsOutcome>;
  /** The day's counts from the run's lines; the run SUCCEEDED. */
  finishSettlementRun(
    runId: string,
  ): Promise<{ checked: number; matched: number; missing: number; mismatched: number }>;
}

/** settleDay's signature: what starters type-check against. */
export type SettleDayWorkflow = (input: SettleDayInput) => Promise<SettleDayResult>;

/**
 * Starts the run's workflow; a second start finds the running one. A closed one is not started
 * again: the start throws WorkflowExecutionAlreadyStartedError, and the starter gives that run up.
 */
export async function startSettleDay(
  client: Client,
  options: { taskQueue: string; input: SettleDayInput },
): Promise<void> {
  await client.workflow.start<SettleDayWorkflow>(settleDayWorkflowType, {
    taskQueue: options.taskQueue,
    workflowId: settlementWorkflowId(options.input.date, options.input.runId),
    args: [options.input],
    ...startOncePolicies,
  });
}
