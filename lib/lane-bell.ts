// The lanes' bell: a funding that joins a lane is announced by the API with pg_notify once it is
// stored (createLaneAnnouncer), and the worker's lane runs wait on this bell instead of reading the
// table again and again. One LISTEN connection per worker process.
// A bell that lost its connection rings every waiter and reconnects; the waiters read the table
// again after at most `pollMs` anyway, so a lost notification costs latency, never a funding.
import pg from 'pg';
import type { Database } from './database.ts';
import type { Logger } from './logger.ts';

/** The channel a lane's run listens on for fundings that joined it (the payload: the lane's number). */
export const LANE_CHANNEL = 'walletflow_funding_lane';

export interface LaneBell {
  /** Rings so far for a lane: read before looking at the table, then passed to wait. */
  rings(lane: number): number;
  /**
   * Resolves once the lane rang after `since` (at once if it already did), after `ms`, or when
   * `signal` aborts, whichever comes first.
   */
  wait(lane: number, since: number, ms: number, signal?: AbortSignal): Promise<void>;
  close(): Promise<void>;
}

/** A bell that never rings: its waiters read the table every `ms` (tests that build activities alone). */
export const silentLaneBell: LaneBell = {
  rings: () => 0,
  wait: (_lane, _since, ms, signal) => sleepUnlessAborted(ms, signal),
  close: async () => {},
};

/** Resolves after `ms`, or at once when `signal` aborts. */
export function sleepUnlessAborted(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}

/** How long the bell waits before it connects again after losing its connection. */
const RECONNECT_MS = 2000;

export function createLaneBell(options: { databaseUrl: string; channel: string; logger: Logger }): LaneBell {
  const counts = new Map<number, number>();
  const waiters = new Set<{ lane: number | null; wake: () => void }>();
  let client: pg.Client | null = null;
  let closed = false;
  let reconnect: NodeJS.Timeout | undefined;

  const ring = (lane: number | null) => {
    if (lane !== null) counts.set(lane, (counts.get(lane) ?? 0) + 1);
    for (const waiter of [...waiters]) if (lane === null || waiter.lane === lane) waiter.wake();
  };

  /** The client being connected, until it listens (then it is `client`). */
  let connecting: pg.Client | null = null;

  const connect = async () => {
    if (closed) return;
    const next = new pg.Client({ connectionString: options.databaseUrl });
    connecting = next;
    next.on('notification', (message) => {
      const lane = Number(message.payload);
      if (Number.isInteger(lane)) ring(lane);
    });
    next.on('error', (error) => {
      options.logger.warn({ err: error.message }, 'lane bell: its connection failed; reconnecting');
      lost(next);
    });
    next.on('end', () => lost(next));
    try {
      await next.connect();
      await next.query(`LISTEN ${options.channel}`);
      if (closed || connecting !== next) {
        await next.end().catch(() => {});
        return;
      }
      connecting = null;
      client = next;
      // Whatever was announced while it was not listening: every waiter reads the table again.
      ring(null);
    } catch (error) {
      options.logger.warn({ err: (error as Error).message }, 'lane bell: could not listen; retrying');
      lost(next);
    }
  };

  /** A client that failed or ended: closed; a new one is connected, unless it was an old one (already replaced). */
  const lost = (which: pg.Client) => {
    which.end().catch(() => {});
    if (which !== client && which !== connecting) return;
    if (client === which) client = null;
    if (connecting === which) connecting = null;
    ring(null);
    if (!closed && !reconnect) {
      reconnect = setTimeout(() => {
        reconnect = undefined;
        void connect();
      }, RECONNECT_MS);
      reconnect.unref();
    }
  };

  void connect();

  return {
    rings: (lane) => counts.get(lane) ?? 0,
    wait(lane, since, ms, signal) {
      if ((counts.get(lane) ?? 0) !== since) return Promise.resolve();
      return new Promise((resolve) => {
        const waiter = { lane, wake: () => done() };
        const timer = setTimeout(() => done(), ms);
        const done = () => {
          clearTimeout(timer);
          waiters.delete(waiter);
          signal?.removeEventListener('abort', done);
          resolve();
        };
        if (signal?.aborted) return done();
        waiters.add(waiter);
        signal?.addEventListener('abort', done, { once: true });
      });
    },
    async close() {
      closed = true;
      clearTimeout(reconnect);
      ring(null);
      const current = client;
      client = null;
      await current?.end().catch(() => {});
    },
  };
}

/** How long an announcement waits for more fundings of its lane to go with it (ms). */
const ANNOUNCE_AFTER_MS = 5;

/**
 * Announces fundings that joined a lane, after their storing transaction committed: at most one
 * notification per lane every ANNOUNCE_AFTER_MS, however many fundings came, each in a transaction
 * of its own that does not wait for its commit to reach the disk (a NOTIFY serialises the commits
 * of the transactions that send one; a lost one costs a waiting lane a second, never a funding).
 */
export function createLaneAnnouncer(database: Database, logger: Logger) {
  const due = new Set<number>();
  return {
    announce(lane: number): void {
      if (due.has(lane)) return;
      due.add(lane);
      setTimeout(() => {
        due.delete(lane);
        database.$executeRaw`SELECT set_config('synchronous_commit', 'off', true), pg_notify(${LANE_CHANNEL}, ${String(lane)})`.catch(
          (error: Error) =>
            logger.warn({ lane, err: error.message }, 'lane not told of its funding; it reads its table'),
        );
      }, ANNOUNCE_AFTER_MS).unref();
    },
  };
}

export type LaneAnnouncer = ReturnType<typeof createLaneAnnouncer>;
