// Attempts counted per client address across every API process, in PostgreSQL: the console's
// sign-ins and wrong ops keys, whose limits would otherwise be as many times as generous as there
// are processes. A sliding-window limit (the previous window's count, weighted by how much of it
// still overlaps the last window, plus the current window's), one row per kind, address and
// window, taken in one statement: the row's lock orders concurrent attempts from any process, so
// together they never pass the limit. Only attempts let through are counted. What this process
// learnt is blocked it remembers until the wait is over (a bounded number of addresses), so a
// flood from a blocked address costs the database nothing more. The only writer of attempt_count,
// its purge included.
import type { Database } from '../lib/database.ts';

export type AttemptVerdict = { allowed: true } | { allowed: false; retryAfterSeconds: number };

export interface AttemptLimiterOptions {
  /** What is counted: `console-sign-in`, `ops-wrong-key` (a prefix keeps test APIs on one database apart). */
  kind: string;
  /** Attempts allowed per address within one window. */
  limit: number;
  windowMs?: number;
  now?: () => number;
  /** Addresses remembered as blocked at once, at most; past it the oldest are forgotten (the database still counts them). Default 10,000. */
  maxRemembered?: number;
}

export interface AttemptLimiter {
  /** Counts one attempt of `subject` (a client address's rate key) if it stays within the limit; else refused, with the wait. */
  take(subject: string): Promise<AttemptVerdict>;
  /** The wait left for `subject` as far as this process learnt it (0: not known to be blocked), without asking the database. */
  knownBlockedForMs(subject: string): number;
  /** Addresses remembered as blocked now (tests, and the bound on this process's memory). */
  remembered(): number;
}

export function createAttemptLimiter(database: Database, options: AttemptLimiterOptions): AttemptLimiter {
  const windowMs = options.windowMs ?? 60_000;
  const now = options.now ?? Date.now;
  const maxRemembered = options.maxRemembered ?? 10_000;
  const { kind, limit } = options;
  /** Address → when its wait ends (ms); a Map iterates in insertion order, the oldest first. */
  const blocked = new Map<string, number>();

  const knownBlockedForMs = (subject: string, at: number): number => {
    const until = blocked.get(subject);
    if (until === undefined) return 0;
    if (until > at) return until - at;
    blocked.delete(subject);
    return 0;
  };

  const remember = (subject: string, until: number, at: number): void => {
    blocked.delete(subject);
    blocked.set(subject, until);
    if (blocked.size <= maxRemembered) return;
    for (const [key, end] of blocked) if (end <= at) blocked.delete(key);
    for (const key of blocked.keys()) {
      if (blocked.size <= maxRemembered) break;
      blocked.delete(key);
    }
  };

  return {
    async take(subject) {
      const at = now();
      const waiting = knownBlockedForMs(subject, at);
      if (waiting > 0) return { allowed: false, retryAfterSeconds: Math.max(1, Math.ceil(waiting / 1000)) };
      const currentStart = Math.floor(at / windowMs) * windowMs;
      const overlap = 1 - (at - currentStart) / windowMs;
      const [row] = await database.$queryRaw<Array<{ taken: number | null; previous: number; current: number }>>`
        WITH previous AS (
          SELECT count FROM attempt_count WHERE kind = ${kind} AND subject = ${subject} AND window_start = ${new Date(currentStart - windowMs)}
        ), taken AS (
          INSERT INTO attempt_count AS a (kind, subject, window_start, count, expires_at)
          SELECT ${kind}, ${subject}, ${new Date(currentStart)}, 1, ${new Date(currentStart + 2 * windowMs)}
          WHERE COALESCE((SELECT count FROM previous), 0) * ${overlap}::float8 + 1 <= ${limit}
          ON CONFLICT (kind, subject, window_start) DO UPDATE SET count = a.count + 1
          WHERE COALESCE((SELECT count FROM previous), 0) * ${overlap}::float8 + a.count + 1 <= ${limit}
          RETURNING a.count
        )
        SELECT (SELECT count FROM taken) AS taken,
               COALESCE((SELECT count FROM previous), 0) AS previous,
               COALESCE((SELECT count FROM attempt_count WHERE kind = ${kind} AND subject = ${subject} AND window_start = ${new Date(currentStart)}), 0) AS current`;
      if (row && row.taken !== null) return { allowed: true };
      // When the count falls under the limit again: the previous window's weight fades linearly, and
      // the current window's count leaves with the window.
      const previous = row?.previous ?? 0;
      const current = row?.current ?? limit;
      const excess = previous * overlap + current + 1 - limit;
      const fadeMs = previous > 0 && excess <= previous * overlap ? (excess / previous) * windowMs : currentStart + windowMs - at;
      const retryAfterSeconds = Math.max(1, Math.ceil(fadeMs / 1000));
      remember(subject, at + retryAfterSeconds * 1000, at);
      return { allowed: false, retryAfterSeconds };
    },
    knownBlockedForMs: (subject) => knownBlockedForMs(subject, now()),
    remembered: () => blocked.size,
  };
}

/** Deletes up to `batchSize` counts no limit reads any more (their window and the next are over); answers how many. */
export async function purgeSpentAttemptCounts(database: Database, at: Date, batchSize: number): Promise<number> {
  return database.$executeRaw`DELETE FROM attempt_count WHERE (kind, subject, window_start) IN (
    SELECT kind, subject, window_start FROM attempt_count WHERE expires_at < ${at} ORDER BY expires_at LIMIT ${batchSize})`;
}
