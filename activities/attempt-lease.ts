// Whether a heartbeating activity attempt is still the current one. Temporal replaces an attempt
// whose heartbeat stopped for its heartbeat time-out (a frozen or paused worker), but the replaced
// attempt's own process does not know it: when it resumes, its clock still allows calls for most of
// its start-to-close. So the attempt keeps a lease of its own, on the monotonic clock: it beats
// every `everyMs`, and a beat that comes later than `lapseMs` after the one before (the process was
// stopped or stalled that long, so the server may have given up on it) ends the lease for good.
// A cancellation Temporal delivers (the server refused a heartbeat) ends it too. Before each claim,
// each wallet call and each hand-over, the attempt asks `current()` and stops when it is not.
import { performance } from 'node:perf_hooks';

export interface AttemptLease {
  /** False from the moment this attempt may have been replaced; never true again. */
  current(): boolean;
  /** Stops the beats (the attempt ended). */
  stop(): void;
}

export interface AttemptLeaseOptions {
  /** Records a heartbeat with Temporal (Context.heartbeat). */
  heartbeat: () => void;
  /** Temporal's cancellation of the attempt (a refused heartbeat, a cancelled workflow). */
  cancelled?: AbortSignal;
  /** How often it beats. */
  everyMs: number;
  /**
   * The longest gap between beats that still proves the attempt current: under the heartbeat
   * time-out, less the worker's heartbeat throttle (a beat may reach the server that much later)
   * and a margin.
   */
  lapseMs: number;
  /** Also done on a beat, at most this often, while the lease holds (the chunk shows its items' owner alive). */
  whileCurrent?: { everyMs: number; run: () => Promise<void> };
  /** Called once when the lease ends by a lapse (for a log line). */
  onLapse?: (gapMs: number) => void;
  now?: () => number;
}

export function startAttemptLease(options: AttemptLeaseOptions): AttemptLease {
  const now = options.now ?? (() => performance.now());
  let lastBeat = now();
  let lapsed = false;
  let lastRun = Number.NEGATIVE_INFINITY;
  let running = false;

  const current = () => !lapsed && !options.cancelled?.aborted && now() - lastBeat <= options.lapseMs;

  const beat = () => {
    const at = now();
    const gap = at - lastBeat;
    lastBeat = at;
    if (lapsed) return;
    if (gap > options.lapseMs) {
      lapsed = true;
      options.onLapse?.(gap);
      return;
    }
    if (options.cancelled?.aborted) return;
    options.heartbeat();
    const work = options.whileCurrent;
    if (work && !running && at - lastRun >= work.everyMs) {
      lastRun = at;
      running = true;
      // Best effort: a beat that fails to write is made again at the next one.
      void work
        .run()
        .catch(() => undefined)
        .finally(() => {
          running = false;
        });
    }
  };
  const timer = setInterval(beat, options.everyMs);
  return {
    current,
    stop: () => clearInterval(timer),
  };
}
