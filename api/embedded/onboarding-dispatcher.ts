// The onboarding dispatcher: starts the onboardEmbeddedSession workflows of the sessions the
// session URL stored, off the request path. It drains the outbox (links/onboarding-outbox.ts):
// claims due rows in batches, starts each workflow with the contract's id (a repeated start finds
// the running workflow or refuses a closed one: both mean "started"), then deletes the started rows
// and puts the failed ones back after a backoff. It runs a pass shortly after each stored session
// (wake), at start-up and every sweepIntervalMs, so a session stored by a process that died before
// its start is onboarded by whichever API copy sweeps next: none is lost.
import { WorkflowExecutionAlreadyStartedError, type Client } from '@temporalio/client';
import type { Database } from '../../lib/database.ts';
import { retryDelayOf } from '../../wallet/index.ts';
import type { Logger } from '../../lib/logger.ts';
import type { Metrics, OnboardingStartOutcome } from '../../lib/metrics.ts';
import type { SessionOnboarding } from '../../links/embedded-onboarding.ts';
import {
  claimDueOnboardings,
  clearOnboardings,
  isOnboardingPending,
  retryOnboardingsLater,
} from '../../links/onboarding-outbox.ts';
import { startOnboardEmbeddedSession } from '../../workflows/onboard-embedded-session.contract.ts';

export interface OnboardingDispatcherOptions {
  database: Database;
  temporal: Client;
  /** The task queue this API starts workflows on: the dispatcher takes that queue's rows only. */
  taskQueue: string;
  logger: Logger;
  metrics?: Pick<Metrics, 'onboardingStart'>;
  /** Rows per claim (default 32): a batch's starts must end well within the lease, even when Temporal is slow. */
  batchSize?: number;
  /** Workflow starts in flight at once (default 8): the starts share Temporal with everything else. */
  concurrency?: number;
  /** How long a claim keeps other dispatchers off a row (default 30 s). */
  leaseMs?: number;
  /** The sweep for rows no wake reached: stored by a process that died, or due again after a failure (default 2 s). */
  sweepIntervalMs?: number;
  /** How long a wake waits, so one claim takes the sessions stored meanwhile (default 5 ms). */
  wakeDelayMs?: number;
  /**
   * Onboards a session here and now (links/embedded-onboarding.ts) when its user is already on
   * the landing page (expedite): a storm's backlog in the worker's queue never makes a user who
   * is looking wait. Absent: expedite only starts the workflow.
   */
  onboardNow?: Pick<SessionOnboarding, 'link'>;
}

/** What one drain did. */
export interface DrainResult {
  started: number;
  failed: number;
}

export interface OnboardingDispatcher {
  /** The first sweep now, then one every sweepIntervalMs; wake() works from here on. */
  start(): void;
  /** A session was stored: a pass soon (passes never overlap; wakes during a pass ask for one more). */
  wake(): void;
  /**
   * The landing page's: the user is here, so a session still in the outbox has its workflow
   * started now, and the session is onboarded on demand in this process instead of
   * waiting for the worker behind a backlog; the workflow then finds it done. A failure is logged
   * and left to the workflow.
   */
  expedite(sessionRecordId: string): Promise<void>;
  /** Passes until no due row is left or a pass fails (the tests' and the sweep's unit of work). */
  drain(): Promise<DrainResult>;
  /** Stops the timers and waits for the pass in flight: nothing runs after this resolves. */
  stop(): Promise<void>;
}

/** How long a session's on-demand onboarding waits after the wallet said "later" without saying when. */
export const ON_DEMAND_WAIT_MS = 5000;
/** Sessions whose on-demand wait a process remembers. */
const ON_DEMAND_WAITS_KEPT = 10_000;

export function createOnboardingDispatcher(options: OnboardingDispatcherOptions): OnboardingDispatcher {
  const { database, temporal, taskQueue, logger } = options;
  const batchSize = options.batchSize ?? 32;
  const concurrency = options.concurrency ?? 8;
  const leaseMs = options.leaseMs ?? 30_000;
  const sweepIntervalMs = options.sweepIntervalMs ?? 2000;
  const wakeDelayMs = options.wakeDelayMs ?? 5;

  let started = false;
  let stopped = false;
  let wakeTimer: NodeJS.Timeout | undefined;
  let sweepTimer: NodeJS.Timeout | undefined;
  let running: Promise<DrainResult> | undefined;
  let again = false;
  /** Sessions being onboarded on demand in this process: a page's reloads and polls share one try. */
  const onDemand = new Map<string, Promise<void>>();
  /**
   * When a session's next on-demand try may go out, after the wallet said "later" (its Retry-After, else a few
   * seconds): a page polling every second is not a profile call (and a client token) a second, each refused.
   */
  const notBefore = new Map<string, number>();

  async function onboardOnDemand(sessionRecordId: string): Promise<void> {
    if (!options.onboardNow) return;
    const until = notBefore.get(sessionRecordId);
    if (until !== undefined && Date.now() < until) return;
    notBefore.delete(sessionRecordId);
    const outcome = await options.onboardNow.link(sessionRecordId);
    if (outcome.kind === 'retry') {
      // Bounded: the oldest entries go first (a session lives minutes; its wait is seconds).
      if (notBefore.size >= ON_DEMAND_WAITS_KEPT) notBefore.delete(notBefore.keys().next().value!);
      notBefore.set(sessionRecordId, Date.now() + (retryDelayOf(outcome.error) ?? ON_DEMAND_WAIT_MS));
      logger.info(
        { sessionRecordId, code: outcome.error.code },
        'on-demand onboarding: the wallet did not give the profile now; the workflow goes on',
      );
    }
  }

  /** Starts one session's workflow; a refusal because it already ran counts as started. */
  async function startOne(sessionRecordId: string): Promise<OnboardingStartOutcome> {
    try {
      await startOnboardEmbeddedSession(temporal, { taskQueue, sessionRecordId });
      return 'started';
    } catch (error) {
      if (error instanceof WorkflowExecutionAlreadyStartedError) return 'already_closed';
      logger.warn(
        { sessionRecordId, err: (error as Error).message },
        'could not start session onboarding; retried later',
      );
      return 'failed';
    }
  }

  async function pass(): Promise<DrainResult & { claimed: number }> {
    const claimed = await claimDueOnboardings(database, { taskQueue, limit: batchSize, leaseMs });
    const done: string[] = [];
    const failed: string[] = [];
    let next = 0;
    const lane = async () => {
      while (next < claimed.length) {
        const row = claimed[next++]!;
        const outcome = await startOne(row.sessionRecordId);
        options.metrics?.onboardingStart(outcome);
        (outcome === 'failed' ? failed : done).push(row.sessionRecordId);
      }
    };
    await Promise.all(Array.from({ length: Math.min(concurrency, claimed.length) }, lane));
    await clearOnboardings(database, done);
    await retryOnboardingsLater(database, failed);
    return { claimed: claimed.length, started: done.length, failed: failed.length };
  }

  async function drainLoop(): Promise<DrainResult> {
    const total: DrainResult = { started: 0, failed: 0 };
    do {
      again = false;
      for (;;) {
        const result = await pass();
        total.started += result.started;
        total.failed += result.failed;
        // A full batch: more may be due. A failure: leave the rest to the backoff.
        if (stopped || result.claimed < batchSize || result.failed > 0) break;
      }
    } while (again && !stopped);
    return total;
  }

  function drain(): Promise<DrainResult> {
    if (running) {
      again = true;
      return running;
    }
    running = drainLoop().finally(() => {
      running = undefined;
    });
    return running;
  }

  /** A pass from a timer: a failure (PostgreSQL down) is logged; the next sweep tries again. */
  function runInBackground(): void {
    if (stopped) return;
    drain().catch((error: unknown) =>
      logger.error({ err: (error as Error).message }, 'onboarding dispatch failed; the next sweep retries'),
    );
  }

  return {
    start() {
      if (started || stopped) return;
      started = true;
      sweepTimer = setInterval(runInBackground, sweepIntervalMs);
      sweepTimer.unref();
      runInBackground();
    },
    wake() {
      if (!started || stopped) return;
      if (running) {
        again = true;
        return;
      }
      if (wakeTimer) return;
      wakeTimer = setTimeout(() => {
        wakeTimer = undefined;
        runInBackground();
      }, wakeDelayMs);
    },
    async expedite(sessionRecordId) {
      try {
        if (await isOnboardingPending(database, sessionRecordId)) {
          const outcome = await startOne(sessionRecordId);
          options.metrics?.onboardingStart(outcome);
          if (outcome !== 'failed') await clearOnboardings(database, [sessionRecordId]);
        }
      } catch (error) {
        logger.warn(
          { sessionRecordId, err: (error as Error).message },
          'could not expedite session onboarding; the dispatcher will start it',
        );
      }
      let running = onDemand.get(sessionRecordId);
      if (!running) {
        running = onboardOnDemand(sessionRecordId)
          .catch((error: unknown) =>
            logger.warn(
              { sessionRecordId, err: (error as Error).message },
              'on-demand onboarding failed; the workflow goes on',
            ),
          )
          .finally(() => onDemand.delete(sessionRecordId));
        onDemand.set(sessionRecordId, running);
      }
      await running;
    },
    drain,
    async stop() {
      stopped = true;
      clearTimeout(wakeTimer);
      clearInterval(sweepTimer);
      await running?.catch(() => undefined);
    },
  };
}
