// settleDay: a day's settlement run (contract-decisions section 10, docs/ledger.md).
//   begin      → beginSettlementRun: the day's fundings and payments counted into the run's total
//   fundings   → settleItems, again and again: a page at a time by keyset, each transfer retrieved
//                (at most inFlight at once; a 429 slows the whole run down), each page's lines
//                stored with the run's progress, a heartbeat with where it got to
//   payments   → settleItems the same way (the audit's executes, no wallet call)
//   finish     → finishSettlementRun: the day's counts; the run SUCCEEDED
//   every activitiesPerRun activities: continue-as-new with where it got to, so the history stays
//   bounded at any day's size
// Deterministic code only; inputs, results and the query carry ids, dates, cursors and counts.
import {
  ActivityFailure,
  ApplicationFailure,
  continueAsNew,
  proxyActivities,
  setHandler,
  setWorkflowOptions,
  workflowInfo,
} from '@temporalio/workflow';
import {
  settleDayActivityTimeouts,
  settleDayFailureTypes,
  settleDayProgressQuery,
  type SettleDayActivities,
  type SettleDayInput,
  type SettleDayProgress,
  type SettleDayResult,
  type SettlementCursor,
  type SettlementSide,
} from './settle-day.contract.ts';

const DEFAULT_PAGE_SIZE = 500;
const DEFAULT_ITEMS_PER_ACTIVITY = 10_000;
/** About 6 events each: a run of 50 keeps the history near 300 events (500,000 items). */
const DEFAULT_ACTIVITIES_PER_RUN = 50;

const nonRetryableErrorTypes = [settleDayFailureTypes.notRunning];

/**
 * A page's work: retried with backoff, without a bound (the wallet or the database may be away for
 * a while; the run goes on where its last heartbeat said once they are back). A dead worker's
 * attempt is tried again after the heartbeat time-out, not the start-to-close.
 */
const items = proxyActivities<Pick<SettleDayActivities, 'settleItems'>>({
  startToCloseTimeout: settleDayActivityTimeouts.settleItemsMs,
  heartbeatTimeout: settleDayActivityTimeouts.heartbeatMs,
  retry: { initialInterval: '2 seconds', backoffCoefficient: 2, maximumInterval: '1 minute', nonRetryableErrorTypes },
});

const bookkeeping = proxyActivities<Pick<SettleDayActivities, 'beginSettlementRun' | 'finishSettlementRun'>>({
  startToCloseTimeout: settleDayActivityTimeouts.bookkeepingMs,
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute', nonRetryableErrorTypes },
});

// Auto-upgrade (docs/changing-workflows.md): a run moves to the current build at its next workflow
// task (a timer firing, an activity finishing, a signal), and that build replays its history: a
// change to its commands goes behind patched() while a run of the code before may be open.
setWorkflowOptions({ versioningBehavior: 'AUTO_UPGRADE' }, settleDay);

export async function settleDay(input: SettleDayInput): Promise<SettleDayResult> {
  const maxInFlight = Math.max(1, Math.floor(input.maxInFlight));
  const pageSize = Math.max(1, Math.floor(input.pageSize ?? DEFAULT_PAGE_SIZE));
  const maxItems = Math.max(pageSize, Math.floor(input.itemsPerActivity ?? DEFAULT_ITEMS_PER_ACTIVITY));
  const activitiesPerRun = Math.max(1, Math.floor(input.activitiesPerRun ?? DEFAULT_ACTIVITIES_PER_RUN));
  const progress: SettleDayProgress = {
    side: input.side ?? 'beginning',
    after: input.after ?? null,
    inFlight: Math.min(maxInFlight, Math.max(1, Math.floor(input.inFlight ?? maxInFlight))),
    rateLimited: input.rateLimited ?? 0,
  };
  setHandler(settleDayProgressQuery, () => progress);

  try {
    let side: SettlementSide;
    if (input.side === undefined) {
      await bookkeeping.beginSettlementRun(input.runId);
      side = 'fundings';
    } else side = input.side;
    let after: SettlementCursor | null = progress.after;
    for (let activities = 0; ; activities += 1) {
      if (activities >= activitiesPerRun || workflowInfo().continueAsNewSuggested) {
        return await continueAsNew<typeof settleDay>({
          ...input,
          side,
          after,
          inFlight: progress.inFlight,
          rateLimited: progress.rateLimited,
        });
      }
      progress.side = side;
      const outcome = await items.settleItems({
        runId: input.runId,
        side,
        after,
        pageSize,
        maxItems,
        maxInFlight,
        inFlight: progress.inFlight,
      });
      progress.inFlight = outcome.inFlight;
      progress.rateLimited += outcome.rateLimited;
      after = outcome.after;
      progress.after = after;
      if (!outcome.done) continue;
      if (side === 'payments') break;
      side = 'payments';
      after = null;
      progress.after = null;
    }
    progress.side = 'finishing';
    const counts = await bookkeeping.finishSettlementRun(input.runId);
    return { runId: input.runId, date: input.date, ...counts, rateLimited: progress.rateLimited };
  } catch (error) {
    // The run was given up (its row is no longer RUNNING): nothing of it is written any more.
    if (
      error instanceof ActivityFailure &&
      error.cause instanceof ApplicationFailure &&
      error.cause.type === settleDayFailureTypes.notRunning
    ) {
      throw ApplicationFailure.nonRetryable(
        `settlement run ${input.runId} of ${input.date} is no longer running`,
        settleDayFailureTypes.notRunning,
      );
    }
    throw error;
  }
}
