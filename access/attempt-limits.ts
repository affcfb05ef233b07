// Attempts counted per client address across every API process, in PostgreSQL: the console's
// sign-ins and wrong ops keys, whose limits would otherwise be as many times as generous as there
// are processes. A sliding-window limit (the previous window's count, weighted by how much of it
// still overlaps the last window, plus the current window's), one row per kind, address and
// window, taken in one statement: the row's lock orders concurrent attempts from any process, so
// together they never pass the limit; the windows are the database's clock's (now()), never a
// process's, so processes whose clocks disagree count in the same ones. Only attempts let through are counted. What
// this process
// learnt is blocked it remembers until the wait is over (a bounded number of addresses), so a
// flood from a blocked address costs the database nothing more. The only writer of attempt_count,
// its purge included.
import { sqlClock, sqlInterval, type Database, type SqlClock } from '../lib/database.ts';

export type AttemptVerdict = { allowed: true } | { allowed: false; retryAfterSeconds: number };

export interface AttemptLimiterOptions {
  /** What is counted: `console-sign-in`, `ops-wrong-key` (a prefix keeps test APIs on one database apart). */
  kind: string;
  /** Attempts allowed per address within one window. */
  limit: number;
  windowMs?: number;
  /** This process's clock: only for how long it remembers a wait it was told (never a window's time). */
  now?: () => number;
  /** Tests only: the time SQL takes for the database's clock (lib/database.ts SqlClock); absent: `now()`. */
  sqlClock?: SqlClock;
  /**
   * Addresses remembered as blocked at once, at most; past it the oldest are forgotten (the database still counts
   * them). Default 10,000.
   */
  maxRemembered?: number;
}

export interface AttemptLimiter {
  /**
   * Counts one attempt of `subject` (a client address's rate key) if it stays within the limit; else refused, with the
   * wait.
   */
  take(subject: string): Promise<AttemptVerdict>;
  /**
   * The wait left for `subject` as far as this process learnt it (0: not known to be blocked), without asking the
   * database.
   */
  knownBlockedForMs(subject: string): number;
  /** Addresses remembered as blocked now (tests, and the bound on this process's memory). */
  remembered(): number;
}

export function createAttemptLimiter(database: Database, options: AttemptLimiterOptions): AttemptLimiter {
  const windowMs = options.windowMs ?? 60_000;
  const now = options.now ?? Date.now;
  const maxRemembered = options.maxRemembered ?? 10_000;
  const { kind, limit } = options;
  const window = sqlInterval(windowMs);
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
      // The windows are the database's clock's (now()), so processes whose clocks disagree count in the same ones.
      const [row] = await database.$queryRaw<
        Array<{ taken: number | null; previous: number; current: number; overlap: number; left_ms: number }>
      >`
        WITH w AS (
          SELECT c.at, c.start, c.start - ${window} AS previous_start,
                 1 - (extract(epoch FROM c.at - c.start) * 1000) / ${windowMs}::float8 AS overlap
          FROM (SELECT t.at, to_timestamp(floor(extract(epoch FROM t.at) * 1000 / ${windowMs}::float8) * ${windowMs}::float8 / 1000) AS start
                FROM (SELECT ${sqlClock(options.sqlClock)} AS at) t) c
        ), previous AS (
          SELECT a.count FROM attempt_count a, w WHERE a.kind = ${kind} AND a.subject = ${subject} AND a.window_start = w.previous_start
        ), taken AS (
          INSERT INTO attempt_count AS a (kind, subject, window_start, count, expires_at)
          SELECT ${kind}, ${subject}, w.start, 1, w.start + 2 * ${window} FROM w
          WHERE COALESCE((SELECT count FROM previous), 0) * w.overlap + 1 <= ${limit}
          ON CONFLICT (kind, subject, window_start) DO UPDATE SET count = a.count + 1
          WHERE COALESCE((SELECT count FROM previous), 0) * (SELECT overlap FROM w) + a.count + 1 <= ${limit}
          RETURNING a.count
        )
        SELECT (SELECT count FROM taken) AS taken,
               COALESCE((SELECT count FROM previous), 0) AS previous,
               COALESCE((SELECT a.count FROM attempt_count a, w WHERE a.kind = ${kind} AND a.subject = ${subject} AND a.window_start = w.start), 0) AS current,
               (SELECT overlap FROM w) AS overlap,
               (SELECT extract(epoch FROM w.start + ${window} - w.at) * 1000 FROM w)::float8 AS left_ms`;
      if (row && row.taken !== null) return { allowed: true };
      // When the count falls under the limit again: the previous window's weight fades linearly, and
      // the current window's count leaves with the window.
      const previous = row?.previous ?? 0;
      const current = row?.current ?? limit;
      const overlap = row?.overlap ?? 1;
      const excess = previous * overlap + current + 1 - limit;
      const fadeMs =
        previous > 0 && excess <= previous * overlap ? (excess / previous) * windowMs : (row?.left_ms ?? windowMs);
      const retryAfterSeconds = Math.max(1, Math.ceil(fadeMs / 1000));
      remember(subject, at + retryAfterSeconds * 1000, at);
      return { allowed: false, retryAfterSeconds };
    },
    knownBlockedForMs: (subject) => knownBlockedForMs(subject, now()),
    remembered: () => blocked.size,
  };
}

/**
 * Deletes up to `batchSize` counts no limit reads any more (their window and the next are over, by the database's
 * clock); answers how many.
 */
export async function purgeSpentAttemptCounts(
  database: Database,
  batchSize: number,
  clock?: SqlClock,
): Promise<number> {
  return database.$executeRaw`DELETE FROM attempt_count WHERE (kind, subject, window_start) IN (
    SELECT kind, subject, window_start FROM attempt_count WHERE expires_at < ${sqlClock(clock)} ORDER BY expires_at LIMIT ${batchSize})`;
}
