// Admission in front of the database pool (docs/architecture.md, admission and back-pressure).
// A write transaction holds a pool connection from its first statement to its
// commit; when more of them start than the pool has connections, the rest wait inside Prisma
// for a connection and fail after its `maxWait` (P2028), which a route used to answer 500. Here
// they wait instead in a bounded FIFO queue of this process, holding nothing: at most
// `maxInFlight` transactions run, the next `maxQueued` wait at most `maxWaitMs` each, and a
// request the queue cannot take (full, or its wait would run out) is refused at once with
// `Overloaded`: the route answers 503 OVERLOADED with Retry-After, and nothing was stored, so the
// same request with the same Idempotency-Key can come back.
//
// Transactions of one key (a partner user drawing on their balance) also wait for each other here,
// one after the other, before they take a slot: the per-user advisory lock inside the transaction
// (ledger/limits.ts) then never waits in this process while holding a connection.

import { AsyncLocalStorage } from 'node:async_hooks';
import { Prisma } from '../generated/prisma/client.ts';

/** A request the database could not take now: answered 503 OVERLOADED with Retry-After. */
export class Overloaded extends Error {
  override readonly name = 'Overloaded';
  readonly code = 'OVERLOADED';
  constructor(
    /** When to come back (Retry-After, seconds). */
    readonly retryAfterSeconds: number,
    detail: string,
    /**
     * What was full: `admission` (the database's slots; the detail is for the log) or a bound of walletflow's own whose
     * detail is told to the client (`settlement-runs`: SETTLEMENT_MAX_RUNS; `batch-busy`: another move of the batch
     * holds its row).
     */
    readonly reason: 'admission' | 'settlement-runs' | 'batch-busy' = 'admission',
  ) {
    super(detail);
  }
}

export interface AdmissionLimits {
  /** Transactions run at once: at most the pool's connections. */
  maxInFlight: number;
  /** Transactions that may wait for a slot; the next is refused at once. */
  maxQueued: number;
  /** The longest a transaction waits for a slot before it is refused. */
  maxWaitMs: number;
}

export interface AdmissionGate {
  /** Runs `work` in a slot, after the transactions of `key` before it (if any) and the queue. */
  run<T>(work: () => Promise<T>, key?: string | null): Promise<T>;
  /** Running and waiting now (for metrics and tests). */
  state(): { inFlight: number; queued: number; refused: number };
}

interface Waiter {
  admit: () => void;
  timer: NodeJS.Timeout;
}

export function createAdmissionGate(limits: AdmissionLimits): AdmissionGate {
  let inFlight = 0;
  let refused = 0;
  const queue: Waiter[] = [];
  /** Requests waiting in a key's lane behind the one before them: they count toward maxQueued too. */
  let inLanes = 0;
  /**
   * The tail of each key's lane: settles once every request of that key admitted so far has ended
   * (run, or been refused). A request waits for the tail before it, never for one refused before it.
   */
  const chains = new Map<string, Promise<void>>();
  const retryAfterSeconds = Math.max(1, Math.ceil(limits.maxWaitMs / 1000));
  const waiting = () => queue.length + inLanes;

  const refuse = (why: string): Overloaded => {
    refused += 1;
    return new Overloaded(retryAfterSeconds, why);
  };

  function release(): void {
    const next = queue.shift();
    if (next) {
      clearTimeout(next.timer);
      next.admit();
      return;
    }
    inFlight -= 1;
  }

  /**
   * A slot, or a place in the queue for at most `waitMs`. `counted`: the request already has its
   * place in the line (it waited in a lane), so it moves to the queue without being counted again.
   */
  function acquire(waitMs: number, counted: boolean): Promise<void> {
    if (inFlight < limits.maxInFlight) {
      inFlight += 1;
      return Promise.resolve();
    }
    if (!counted && waiting() >= limits.maxQueued)
      return Promise.reject(refuse(`${waiting()} requests are already waiting for the database`));
    if (waitMs <= 0) return Promise.reject(refuse(`waited ${limits.maxWaitMs} ms for the database`));
    return new Promise<void>((resolve, reject) => {
      const waiter: Waiter = {
        // The slot passes from the releasing transaction to this one: inFlight stays as it is.
        admit: resolve,
        timer: setTimeout(() => {
          const at = queue.indexOf(waiter);
          if (at >= 0) queue.splice(at, 1);
          reject(refuse(`waited ${limits.maxWaitMs} ms for the database`));
        }, waitMs),
      };
      queue.push(waiter);
    });
  }

  async function inSlot<T>(work: () => Promise<T>, waitMs = limits.maxWaitMs, counted = false): Promise<T> {
    await acquire(waitMs, counted);
    try {
      return await work();
    } finally {
      release();
    }
  }

  /**
   * `work` after every earlier request of `key`, then in a slot. Its place in the lane counts
   * toward maxQueued, and its wait in the lane is bounded by maxWaitMs, as the queue's is (then
   * the queue's own maxWaitMs, as before the lane had a bound): a request behind a long one (a
   * batch of 100,000 items stored from one user's balance) is refused when its wait runs out, not
   * when its turn comes. A refused request leaves the lane at once; the one behind it still waits
   * for the one before it.
   */
  function inLane<T>(work: () => Promise<T>, key: string): Promise<T> {
    const before = chains.get(key);
    if (!before) {
      // First of its key: straight to the queue, as any request.
      return chained(key, Promise.resolve(), () => inSlot(work));
    }
    if (waiting() >= limits.maxQueued)
      return Promise.reject(refuse(`${waiting()} requests are already waiting for the database`));
    inLanes += 1;
    return chained(
      key,
      before,
      (turn) =>
        new Promise<T>((resolve, reject) => {
          let inLine = true;
          const leave = () => {
            inLine = false;
            inLanes -= 1;
          };
          const timer = setTimeout(() => {
            leave();
            reject(refuse(`waited ${limits.maxWaitMs} ms behind the same account's requests`));
          }, limits.maxWaitMs);
          void turn.then(() => {
            if (!inLine) return;
            clearTimeout(timer);
            leave();
            inSlot(work, limits.maxWaitMs, true).then(resolve, reject);
          });
        }),
    );
  }

  /**
   * Runs `start` as the new tail of `key`'s lane, handing it the turn (the previous tail). The lane
   * moves on when this request's work has ended, or, if it was refused before its turn, when the
   * one before it has; the map forgets a key once its last request ended.
   */
  function chained<T>(key: string, previous: Promise<void>, start: (turn: Promise<void>) => Promise<T>): Promise<T> {
    let ran = false;
    const mine = start(previous.then(() => void (ran = true)));
    const tail: Promise<void> = mine.then(
      () => undefined,
      () => (ran ? undefined : previous),
    );
    chains.set(key, tail);
    void tail.then(() => {
      if (chains.get(key) === tail) chains.delete(key);
    });
    return mine;
  }

  return {
    run<T>(work: () => Promise<T>, key?: string | null): Promise<T> {
      return key ? inLane(work, key) : inSlot(work);
    },
    state: () => ({ inFlight, queued: waiting(), refused }),
  };
}

const lanes = new AsyncLocalStorage<string>();

/**
 * Runs `work` with its transactions in `key`'s lane: the gate runs them one after the other with
 * every other transaction of that key (a partner user's fundings, whose limits and balance a
 * per-user lock serialises inside the transaction anyway).
 */
export function inAdmissionLane<T>(key: string | null, work: () => Promise<T>): Promise<T> {
  return key ? lanes.run(key, work) : work();
}

/** The lane of the transaction being started, if its caller named one. */
export const currentAdmissionLane = (): string | undefined => lanes.getStore();

/**
 * Prisma's own time-outs under load: a transaction that could not start or ran out of time (P2028), no pool connection
 * in time (P2024); and a transaction PostgreSQL rolled back for a write conflict or a deadlock (P2034: 40001, 40P01),
 * which stored nothing and may be sent again. A raw statement's rollback comes as P2010 (P2039 for other statements)
 * with the adapter's error inside, of kind TransactionWriteConflict.
 */
const loadErrorCodes = new Set(['P2028', 'P2024', 'P2034']);
const loadErrorKinds = new Set(['TransactionWriteConflict']);

/** The pg adapter's error inside a raw statement's failure (P2010) or another unmapped one (P2039); else undefined. */
function adapterCauseOf(error: Prisma.PrismaClientKnownRequestError): Record<string, unknown> | undefined {
  if (error.code !== 'P2010' && error.code !== 'P2039') return undefined;
  return (error.meta?.driverAdapterError as { cause?: Record<string, unknown> } | undefined)?.cause;
}

/**
 * PostgreSQL (or a pooler in front of it) refusing a connection, before any statement of the request ran: too many
 * connections (53300, P2037 through the pg adapter), not accepting them now (57P03: starting, shutting down, in
 * recovery), unreachable (P1001), or a pooler's wait for a server connection run out. A raw query's refusal comes as
 * P2010 (P2039 for other statements) with the adapter's error inside.
 */
const refusedConnectionCodes = new Set(['P2037', 'P1001']);
const refusedConnectionKinds = new Set(['TooManyConnections', 'DatabaseNotReachable']);
const refusedConnectionStates = new Set(['53300', '57P03']);
const poolerRefusals = /no more connections allowed|query_wait_timeout|server login has been failing/;

/** pg's pool giving up after API_CONNECT_TIMEOUT_MS (lib/database.ts): waiting for a connection, or opening one. */
const connectionWaitTimeouts = new Set([
  'timeout exceeded when trying to connect',
  'Connection terminated due to connection timeout',
]);

/**
 * A connection lost while a statement ran (a failover, a restart, a pooler's restart, the server ending it): Prisma's
 * P1017 (closed) and P1008 (timed out), or the adapter's error with PostgreSQL's shutdown and connection-failure states
 * (57P01, 57P02, 08xxx) or with the socket's own (a reset, ConnectionClosed; a time-out, SocketTimeout: no PostgreSQL
 * state at all), or pg's own words.
 */
const lostConnectionCodes = new Set(['P1017', 'P1008']);
const lostConnectionKinds = new Set(['ConnectionClosed', 'SocketTimeout']);
const lostConnectionStates = /^(57P01|57P02|08\d\d\d)$/;
const lostConnectionMessages =
  /^(Connection terminated unexpectedly|Connection terminated|read ECONNRESET|write EPIPE)$/;

/** When a read that lost its connection is asked again: a failover takes seconds. */
export const LOST_CONNECTION_RETRY_AFTER_SECONDS = 2;

/**
 * Whether a read lost its database connection: what the statement did is not known, so a write's answer cannot say
 * (a 500 there, as before); a read changed nothing, and is answered 503 with Retry-After (api/app.ts, the console's
 * pages). Its reason, or null.
 */
export function lostConnectionOf(error: unknown): string | null {
  if (error instanceof Prisma.PrismaClientKnownRequestError) {
    if (lostConnectionCodes.has(error.code)) return error.code;
    const cause = adapterCauseOf(error);
    if (!cause) return null;
    if (lostConnectionKinds.has(String(cause.kind))) return `${error.code}:${String(cause.kind)}`;
    const state = String(cause.originalCode ?? '');
    return lostConnectionStates.test(state) ? `${error.code}:${state}` : null;
  }
  if (error instanceof Error && lostConnectionMessages.test(error.message)) return 'connection-lost';
  return null;
}

/** PostgreSQL's lock_not_available (55P03): a row a statement asked for was locked past lock_timeout (or NOWAIT). */
export function lockNotAvailable(error: unknown): boolean {
  return (
    error instanceof Prisma.PrismaClientKnownRequestError &&
    String(adapterCauseOf(error)?.originalCode ?? '') === '55P03'
  );
}

/** Whether the database refused a statement's connection: that statement never ran (an earlier one may have). */
function refusedConnection(error: Prisma.PrismaClientKnownRequestError): boolean {
  if (refusedConnectionCodes.has(error.code)) return true;
  const cause = adapterCauseOf(error);
  if (!cause) return false;
  return (
    refusedConnectionKinds.has(String(cause.kind)) ||
    refusedConnectionStates.has(String(cause.originalCode)) ||
    poolerRefusals.test(String(cause.originalMessage ?? ''))
  );
}

/**
 * A request's act committed, and reading back what it left was then refused for load, or lost its connection (a read:
 * it changed nothing): it is known to be done, and the answer says so (never "not known, send it again", which a
 * repeat of a cancel or a resolve answers 409).
 */
export class DoneButUnread extends Error {
  override readonly name = 'DoneButUnread';
  constructor(
    /** What was done, in words for the client: `the funding was cancelled`. */
    readonly done: string,
    override readonly cause: unknown,
  ) {
    super(`${done}; reading it back failed`);
  }
}

/**
 * Reads back what a committed act left (`done`, in words); a refusal for load or a lost connection then says the act
 * was done.
 */
export async function readBackDone<T>(done: string, read: () => Promise<T>): Promise<T> {
  try {
    return await read();
  } catch (error) {
    if (overloadOf(error) || lostConnectionOf(error)) throw new DoneButUnread(done, error);
    throw error;
  }
}

/** A request the database could not take now: when to come back, why, and words for the client when they differ. */
export interface Overload {
  retryAfterSeconds: number;
  reason: string;
  detail?: string;
  /** What the request did before the refusal (DoneButUnread), in words: done, only not read back. */
  done?: string;
  /**
   * PostgreSQL (or its pooler, or the pool's wait) refused a connection: that statement never ran, but one before it in
   * the same request may have committed; and it may be an outage rather than a burst (a worker keeps its own backoff).
   */
  connectionRefused?: true;
  /** PostgreSQL rolled the transaction back for a write conflict or a deadlock: sent again, it most likely passes. */
  writeConflict?: true;
}

/**
 * Whether an error means "the database could not take this request now": the gate's refusal, and, as a safety net
 * behind it, Prisma's own time-outs and PostgreSQL (or its pooler) refusing a connection under a burst. Each is
 * answered 503 OVERLOADED with Retry-After, never 500. The gate's refusal and the time-outs come before the request's
 * transaction commits: nothing was stored. A refused connection is a statement that never ran, but an earlier one of
 * the request may have committed, so its `detail` says to send the same request again, not that nothing was stored.
 * (A connection lost in the middle of a statement is not here: what that statement did is not known.)
 */
export function overloadOf(error: unknown): Overload | null {
  if (error instanceof DoneButUnread) {
    const busy = overloadOf(error.cause);
    if (busy)
      return {
        retryAfterSeconds: busy.retryAfterSeconds,
        reason: `done-unread:${busy.reason}`,
        done: error.done,
        detail: `${error.done}, but it could not be read back under load: read it after Retry-After; do not send this request again`,
      };
    const lost = lostConnectionOf(error.cause);
    return lost
      ? {
          retryAfterSeconds: LOST_CONNECTION_RETRY_AFTER_SECONDS,
          reason: `done-unread:${lost}`,
          done: error.done,
          detail: `${error.done}, but reading it back lost its database connection: read it after Retry-After; do not send this request again`,
        }
      : null;
  }
  if (error instanceof Overloaded)
    return {
      retryAfterSeconds: error.retryAfterSeconds,
      reason: error.reason,
      ...(error.reason === 'admission' ? {} : { detail: error.message }),
    };
  if (error instanceof Prisma.PrismaClientKnownRequestError && loadErrorCodes.has(error.code))
    return { retryAfterSeconds: 1, reason: error.code, ...(error.code === 'P2034' ? { writeConflict: true } : {}) };
  if (error instanceof Prisma.PrismaClientKnownRequestError) {
    const kind = String(adapterCauseOf(error)?.kind ?? '');
    if (loadErrorKinds.has(kind)) return { retryAfterSeconds: 1, reason: `${error.code}:${kind}`, writeConflict: true };
  }
  // A refused connection may come after the request's own write committed (the answer's read, say): its words say
  // only what is known.
  if (
    (error instanceof Prisma.PrismaClientKnownRequestError && refusedConnection(error)) ||
    (error instanceof Error && connectionWaitTimeouts.has(error.message))
  )
    return {
      retryAfterSeconds: 2,
      connectionRefused: true,
      reason: `connection-refused:${error instanceof Prisma.PrismaClientKnownRequestError ? error.code : 'pool-wait'}`,
      detail:
        'the database refused a connection under load: what this request stored, if anything, is not known here; send the same request (same Idempotency-Key) again after Retry-After: it is applied at most once',
    };
  return null;
}
