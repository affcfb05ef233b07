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
  /** Runs `tasks` through the gate's places, in order, all of them or the first failure. */
  all<T>(tasks: ReadonlyArray<() => Promise<T>>): Promise<T[]>;
  inFlight(): number;
  rateLimitedCount(): number;
}

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
    async all<T>(tasks: ReadonlyArray<() => Promise<T>>): Promise<T[]> {
      // At most maxInFlight runners, each taking the next task: the places are waited for by a
      // few runners, not by every task of a page at once.
      const results: T[] = new Array(tasks.length);
      let next = 0;
      const runner = async () => {
        while (next < tasks.length) {
          const index = next++;
          results[index] = await tasks[index]!();
        }
      };
      try {
        await Promise.all(Array.from({ length: Math.min(maxInFlight, tasks.length) }, runner));
        return results;
      } catch (error) {
        // The others stop at their next place: no call goes out for a page that will be read again.
        failure ??= error;
        wake();
        throw error;
      }
    },
    inFlight: () => inFlight,
    rateLimitedCount: () => rateLimited,
  };
}
