// How many fundings a batch runner or a lane runs at once, and when it may start more: a 429 from
// the wallet holds everything new back for its Retry-After (at most MAX_SLOW_DOWN_MS) and halves
// the number, once per episode (the chunks already under way when it halved tell of the same
// congestion); as many done in a row without one as run at once give one back, up to the most.
// Deterministic code only: its times are workflow time, and fundBatch and fundLane replay it.
import { patched } from '@temporalio/workflow';

/** The longest a runner waits on one 429 (the activities already cap the wallet's Retry-After this way). */
export const MAX_SLOW_DOWN_MS = 5 * 60_000;

export class InFlightRate {
  /** Done in a row without a 429 since `inFlight` last changed. */
  private successes = 0;
  /** Times `inFlight` was halved: a chunk dispatched before the last halving does not halve it again. */
  slowDowns = 0;
  /** Workflow time before which nothing new starts (after a 429). */
  resumeAt = 0;

  /** `inFlight`: how many run at once now, 1 to `max`. */
  constructor(
    public inFlight: number,
    readonly max: number,
  ) {}

  /** The episode a chunk dispatched now belongs to: given back with its outcome. */
  episode(): number {
    return this.slowDowns;
  }

  /** A chunk's outcome: the wallet's slow-down, or `done` fundings carried without one. */
  onOutcome(outcome: { slowDownMs: number | null }, done: number, episode: number): void {
    if (outcome.slowDownMs !== null) {
      this.resumeAt = Math.max(this.resumeAt, Date.now() + Math.min(Math.max(outcome.slowDownMs, 0), MAX_SLOW_DOWN_MS));
      this.successes = 0;
      if (episode === this.slowDowns) {
        this.inFlight = Math.max(1, Math.floor(this.inFlight / 2));
        this.slowDowns += 1;
      }
      return;
    }
    this.successes += done;
    if (this.successes >= this.inFlight && this.inFlight < this.max) {
      this.inFlight += 1;
      this.successes = 0;
    }
  }
}

/**
 * The patch behind a wait carried over a continue-as-new (`resumeAt` in the next run's input). A build before it
 * ignores the field, so a run it started with one (continued on this build, then moved back by a rollback) dispatches
 * at once: this build, asked to replay that run, must do the same, and does (no marker in its history). A run that
 * waited so on this build cannot be replayed by a build before it, as for any patch (docs/changing-workflows.md).
 */
export const CARRIED_WAIT_PATCH = 'carry-retry-after-over-continue-as-new';

/** The wait a run starts with: its input's `resumeAt`, behind CARRIED_WAIT_PATCH; 0 when it carries none. */
export function carriedResumeAt(resumeAt: number | undefined): number {
  return resumeAt !== undefined && patched(CARRIED_WAIT_PATCH) ? resumeAt : 0;
}
