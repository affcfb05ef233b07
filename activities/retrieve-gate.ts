// How many wallet calls a settlement run makes at once, and when: at most `inFlight` under way, and
// none while the wallet has asked the run to wait. A 429 makes every caller wait its Retry-After
// (the whole run slows down, as a funding batch does) and halves `inFlight`, once per episode (the
// calls already under way when it halved tell of the same congestion); `inFlight` calls in a row
// without one give one back, up to `maxInFlight`.
export interface RetrieveGate {
  /**
   * Waits for a place (and for the end of any wait the wallet asked for). Throws once the attempt is cancelled or a
   * call failed for good.
   */
  acquire(): Promise<void>;
  /** Gives the place back. */
  release(): void;
  succeeded(): void;
  /** The wallet answered 429: everyone waits `retryAfterMs`. */
  rateLimited(retryAfterMs: number): void;
  /**
   * Runs `tasks` through the gate's places, in order, each to its end: a task that fails does not stop the others, so
   * what they read is kept; past `stopAfter` failures (the wallet failing at large, not one transfer) the tasks not
   * started yet are not started, and no call goes out for them. Each task's result, its failure, or not run.
   */
  each<T>(tasks: ReadonlyArray<() => Promise<T>>, stopAfter: number): Promise<Array<TaskResult<T>>>;
  inFlight(): number;
  rateLimitedCount(): number;
}

/** What became of one task of `each`. */
export type TaskResult<T> = { ok: true; value: T } | { ok: false; error: unknown } | { ok: false; notRun: true };

export function createRetrieveGate(options: {
  maxInFlight: number;
  inFlight: number;
  cancelled?: AbortSignal;
  now?: () => number;
}): RetrieveGate {
  const now = options.now ?? Date.now;
  const maxInFlight = Math.max(1, Math.floor(options.maxInFlight));
  let inFlight = Math.min(maxInFlight, Math.max(1, Math.floor(options.inFlight)));
  let running = 0;
  let resumeAt = 0;
  /** The end of the wait of the last halving: a 429 before it belongs to the same episode. */
  let episodeEndsAt = 0;
  let successes = 0;
  let rateLimited = 0;
  let failure: unknown;
  const waiting: Array<() => void> = [];

  const wake = () => {
    for (const resolve of waiting.splice(0)) resolve();
  };
  options.cancelled?.addEventListener('abort', () => {
    failure ??= options.cancelled?.reason ?? new Error('cancelled');
    wake();
  });

  return {
    async acquire() {
      for (;;) {
        if (failure !== undefined) throw failure;
        const wait = resumeAt - now();
        if (wait > 0) {
          await new Promise<void>((resolve) => {
            const timer = setTimeout(resolve, wait);
            waiting.push(() => {
              clearTimeout(timer);
              resolve();
            });
          });
          continue;
        }
        if (running < inFlight) {
          running += 1;
          return;
        }
        await new Promise<void>((resolve) => waiting.push(resolve));
      }
    },
    release() {
      running -= 1;
      wake();
    },
    succeeded() {
      successes += 1;
      if (successes >= inFlight && inFlight < maxInFlight) {
        inFlight += 1;
        successes = 0;
        wake();
      }
    },
    rateLimited(retryAfterMs) {
      rateLimited += 1;
      successes = 0;
      const at = now();
      resumeAt = Math.max(resumeAt, at + Math.max(0, retryAfterMs));
      if (at >= episodeEndsAt) {
        inFlight = Math.max(1, Math.floor(inFlight / 2));
        episodeEndsAt = resumeAt;
      }
    },
    async each<T>(tasks: ReadonlyArray<() => Promise<T>>, stopAfter: number): Promise<Array<TaskResult<T>>> {
      // At most maxInFlight runners, each taking the next task: the places are waited for by a
      // few runners, not by every task of a page at once.
      const results: Array<TaskResult<T>> = tasks.map(() => ({ ok: false, notRun: true }));
      let next = 0;
      let failures = 0;
      const runner = async () => {
        while (next < tasks.length && failures < stopAfter) {
          const index = next++;
          try {
            results[index] = { ok: true, value: await tasks[index]!() };
          } catch (error) {
            results[index] = { ok: false, error };
            failures += 1;
            // Cancelled: nothing more starts, and whatever waits for a place stops waiting.
            if (failure !== undefined) return;
          }
        }
      };
      await Promise.all(Array.from({ length: Math.min(maxInFlight, tasks.length) }, runner));
      return results;
    },
    inFlight: () => inFlight,
    rateLimitedCount: () => rateLimited,
  };
}
