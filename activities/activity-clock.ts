// An activity's place in its retries and the time it has left, from Temporal's activity context: a
// retried execute must not be sent before a retrieve, and an execute must not be sent when the
// activity could time out while it is still in flight (a retry could race it). Outside an activity
// (a test calling one directly): the first attempt, with no deadline.
import { Context } from '@temporalio/activity';

export interface ActivityClock {
  /** 1 for the first attempt, 2 after Temporal retried it once, … */
  attempt: number;
  /** When start-to-close runs out (ms since the epoch); Infinity outside an activity. */
  deadlineMs: number;
  /**
   * False once the attempt may have been replaced by another (a batch chunk whose heartbeat
   * lapsed: activities/attempt-lease.ts); absent: the attempt is current until its deadline.
   */
  current?: () => boolean;
}

/** Read once at the activity's start (start-to-close counts from there). */
export function activityClock(now: () => number = Date.now): ActivityClock {
  try {
    const { attempt, startToCloseTimeoutMs } = Context.current().info;
    return { attempt, deadlineMs: now() + startToCloseTimeoutMs };
  } catch {
    return { attempt: 1, deadlineMs: Number.POSITIVE_INFINITY };
  }
}

/** WALLET_TIMEOUT_MS's default (lib/config.ts), for activities built without it. */
export const DEFAULT_WALLET_TIMEOUT_MS = 10_000;

/** Margin kept between the end of a wallet call's time-out and the activity's own. */
export const ACTIVITY_DEADLINE_MARGIN_MS = 2_000;

/**
 * Whether a wallet call with this time-out still ends before the activity's deadline, from an attempt still current.
 */
export function callFitsBefore(clock: ActivityClock, walletTimeoutMs: number, now: () => number = Date.now): boolean {
  return !pastItsTime(clock, now) && now() + walletTimeoutMs + ACTIVITY_DEADLINE_MARGIN_MS <= clock.deadlineMs;
}

/** Whether the attempt is past its deadline or may have been replaced: it writes and calls nothing more. */
export function pastItsTime(clock: ActivityClock, now: () => number = Date.now): boolean {
  return now() >= clock.deadlineMs || clock.current?.() === false;
}
