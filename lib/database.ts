// The Prisma client on PostgreSQL through the pg driver adapter (Prisma 7 has no query engine binary),
// and the lines (lib/admission.ts) and the token vault's pool each process puts in front of PostgreSQL.
import { PrismaPg } from '@prisma/adapter-pg';
import pg from 'pg';
import { PrismaClient, Prisma } from '../generated/prisma/client.ts';
import { createAdmissionGate, currentAdmissionLane, type AdmissionGate, type AdmissionLimits } from './admission.ts';

export type Database = PrismaClient;

/** A process's PostgreSQL connections (the pg pool's `max`). */
export const DEFAULT_POOL_SIZE = 10;

/**
 * How long a statement of the API waits for one of the pool's connections, or for a new one to open, before it fails
 * (lib/admission.ts: 503 OVERLOADED). A statement outside a transaction (a read) waited in the pool's own queue
 * without any bound while a burst held every connection. The worker's pools keep no bound: an activity has its own
 * time-out, and a wallet call's audit row (the settlement's evidence of a payment's execute) or a payment's reads
 * before its execute must not be dropped or counted unknown for a wait.
 */
export const API_CONNECT_TIMEOUT_MS = 10_000;

export function createDatabase(
  databaseUrl: string,
  {
    maxConnections = DEFAULT_POOL_SIZE,
    connectTimeoutMs = 0,
  }: {
    maxConnections?: number;
    /** How long a statement waits for a connection; 0: without bound (pg's default). */
    connectTimeoutMs?: number;
  } = {},
): Database {
  return new PrismaClient({
    adapter: new PrismaPg({
      ...sessionConnection(databaseUrl),
      max: maxConnections,
      connectionTimeoutMillis: connectTimeoutMs,
    }),
  });
}

/**
 * The session settings walletflow's statements are written for, asked for at each connection's start (PostgreSQL's
 * `options`; PgBouncer tracks all three and takes them from 1.20, an older one refuses the connection:
 * docs/running-at-scale.md), whatever the database, its role or its server's host says:
 * - `TimeZone=UTC`: the pg adapter reads every timestamptz as if its offset were +00:00 and sends a Date without one
 *   (prisma/prisma#26786), so in a session at +08:00 each time PostgreSQL stamped (now(), an event's `at`) read eight
 *   hours late: a settlement's page cursor, the last event read, skipped most of a day's items;
 * - `DateStyle=ISO`: the adapter reads a time's text as ISO; another style (`SQL, DMY`) read as no date at all;
 * - `standard_conforming_strings=on`: a backslash in a string literal (the audit's and the approval sum's patterns)
 *   is itself, not an escape.
 */
const SESSION_SETTINGS = '-c TimeZone=UTC -c DateStyle=ISO -c standard_conforming_strings=on';

/**
 * How every pg pool of walletflow connects to `databaseUrl` (its Prisma clients', the migrations' too), with
 * SESSION_SETTINGS: after PGOPTIONS, which pg reads only when no options are given, and after a URL's own `options`,
 * which win over the pool's (and over PGOPTIONS).
 */
export function sessionConnection(databaseUrl: string): { connectionString: string; options: string } {
  return {
    connectionString: withSessionSettings(databaseUrl),
    options: [process.env.PGOPTIONS, SESSION_SETTINGS].filter(Boolean).join(' '),
  };
}

/**
 * `databaseUrl` with SESSION_SETTINGS added to its own `options` (a query parameter, in every form pg reads: a
 * socket's `postgresql://u:p@/db?host=…` too). Only the spaces are escaped: pg-connection-string runs encodeURI over a
 * URL holding a raw space or a stray `%`, which would leave an escaped `=` escaped.
 */
export function withSessionSettings(databaseUrl: string): string {
  return databaseUrl.replace(
    /([?&]options=)([^&#]*)/g,
    (_, key: string, value: string) => `${key}${value}${` ${SESSION_SETTINGS}`.replaceAll(' ', '%20')}`,
  );
}

/**
 * The API's admission in front of its pool (lib/admission.ts, docs/running-at-scale.md): two
 * connections stay free for reads and health checks, the rest run write transactions; up to
 * 2,000 more wait in line, each at most 5 s, before a request is answered 503 with Retry-After.
 */
export function apiAdmissionLimits(maxConnections: number): AdmissionLimits {
  return { maxInFlight: Math.max(1, maxConnections - 2), maxQueued: 2000, maxWaitMs: 5000 };
}

/**
 * The worker's admission in front of its pool: as the API's, two connections stay free for the
 * statements outside a transaction (a wallet call's audit row, reads), the rest run
 * transactions. No client waits on an answer, so more may wait and for longer (10,000, 10 s
 * each); the bound is the shortest activity that writes (a funding's database step, 15 s): a
 * transaction admitted after its activity gave up would only take a slot from a live one.
 */
export function workerAdmissionLimits(maxConnections: number): AdmissionLimits {
  return { maxInFlight: Math.max(1, maxConnections - 2), maxQueued: 10_000, maxWaitMs: 10_000 };
}

/**
 * A database whose every interactive transaction (`$transaction`) is admitted through a gate
 * first, in its caller's lane (lib/admission.ts inAdmissionLane): a burst waits in line holding
 * no connection, and what the line cannot take is refused at once (Overloaded), never left to
 * time out inside the pool.
 */
function createAdmittedDatabase(
  databaseUrl: string,
  maxConnections: number,
  limits: AdmissionLimits,
  connectTimeoutMs = 0,
): { database: Database; admission: AdmissionGate } {
  const client = createDatabase(databaseUrl, { maxConnections, connectTimeoutMs });
  const admission = createAdmissionGate(limits);
  const transaction = client.$transaction.bind(client) as (...args: unknown[]) => Promise<unknown>;
  const admitted = (...args: unknown[]) => admission.run(() => transaction(...args), currentAdmissionLane());
  const database = new Proxy(client, {
    get(target, property) {
      if (property === '$transaction') return admitted;
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
  return { database, admission };
}

/** The API's database: its transactions admitted in line (apiAdmissionLimits); a refusal is answered 503 OVERLOADED. */
export function createApiDatabase(
  databaseUrl: string,
  {
    maxConnections = DEFAULT_POOL_SIZE,
    admission: limits,
  }: { maxConnections?: number; admission?: Partial<AdmissionLimits> } = {},
): { database: Database; admission: AdmissionGate } {
  return createAdmittedDatabase(
    databaseUrl,
    maxConnections,
    { ...apiAdmissionLimits(maxConnections), ...limits },
    API_CONNECT_TIMEOUT_MS,
  );
}

/**
 * The worker's database: its transactions admitted in line (workerAdmissionLimits); a refusal fails the activity, which
 * is tried again.
 */
export function createWorkerDatabase(
  databaseUrl: string,
  {
    maxConnections = DEFAULT_POOL_SIZE,
    admission: limits,
  }: { maxConnections?: number; admission?: Partial<AdmissionLimits> } = {},
): { database: Database; admission: AdmissionGate } {
  return createAdmittedDatabase(databaseUrl, maxConnections, { ...workerAdmissionLimits(maxConnections), ...limits });
}

/**
 * The token vault's own small pool (links/token-vault.ts, docs/token-refresh-lock.md). A refresh
 * holds its link's row lock while the wallet answers, and the wallet client waits for each
 * call's audit row, written on the main pool: on the main pool itself, refreshes could hold every
 * connection while their own audit rows waited for one (invariant 14). Here the lock takes a
 * connection of this pool and everything else stays on the main one. Its line (`admission`)
 * runs all but one connection's worth of refreshes at once, each link's one after the other; the
 * last connection is kept for a rotated pair saved again after its transaction failed, so that
 * save never waits behind the refreshes that fill the line.
 */
export interface RefreshPool {
  database: Database;
  admission: AdmissionGate;
}

/**
 * The refresh pool's connections for a main pool of `mainPoolSize`: a quarter of it, 2 to 4 (3 for production's 10).
 */
export function refreshPoolSize(mainPoolSize: number): number {
  return Math.min(4, Math.max(2, Math.ceil(mainPoolSize / 4)));
}

/**
 * How refreshes wait for the refresh pool: `connections − 1` at once, up to 1,000 more in line,
 * each at most `maxWaitMs` (a refused one is not sent: the caller tries it again later).
 */
export function refreshAdmissionLimits(connections: number, maxWaitMs: number): AdmissionLimits {
  return { maxInFlight: Math.max(1, connections - 1), maxQueued: 1000, maxWaitMs };
}

/**
 * The longest a refresh waits in the refresh pool's line: the API's as long as its requests wait
 * for the database (5 s); the worker's longer, as no client is waiting (an activity that waited
 * that long still has its create's time: the chunk's and the one pass's start-to-close are 150 s
 * and 120 s, and the vault's lock may take 50 s).
 */
export const refreshWaitMs = { api: 5_000, worker: 30_000 } as const;

/**
 * A refresh pool beside a main pool of `mainPoolSize` connections, its line waiting at most `maxWaitMs`
 * (refreshWaitMs).
 */
export function createRefreshPool(
  databaseUrl: string,
  { mainPoolSize = DEFAULT_POOL_SIZE, maxWaitMs }: { mainPoolSize?: number; maxWaitMs: number },
): RefreshPool {
  const connections = refreshPoolSize(mainPoolSize);
  return {
    database: createDatabase(databaseUrl, { maxConnections: connections }),
    admission: createAdmissionGate(refreshAdmissionLimits(connections, maxWaitMs)),
  };
}

/**
 * The database's clock: what every time stored by `now()` is compared with. A process's own clock
 * may run ahead or behind; work that compares times with stored ones (the sweep's "idle for this
 * long") reads this one.
 */
export async function databaseNow(database: Database): Promise<Date> {
  const [row] = await database.$queryRaw<Array<{ now: Date }>>`SELECT now() AS now`;
  return row!.now;
}

/**
 * Tests only: a time for SQL to take as the database's clock (`sqlClock`), so idle time passes
 * without waiting for it. Absent in every process walletflow runs: the database's `now()`.
 */
export type SqlClock = (() => number) | undefined;

/** The database's clock in a statement: `now()`, or a test's time (SqlClock). */
export const sqlClock = (clock: SqlClock): Prisma.Sql =>
  clock ? Prisma.sql`${new Date(clock())}::timestamptz` : Prisma.sql`now()`;

/** `ms` milliseconds as an SQL interval. */
export const sqlInterval = (ms: number): Prisma.Sql => Prisma.sql`make_interval(secs => ${ms / 1000}::float8)`;

/** Readiness probe: a round trip to PostgreSQL. */
export async function pingDatabase(database: Database): Promise<void> {
  await database.$queryRaw`SELECT 1`;
}

/**
 * What walletflow sets on a database it creates (docs/operations.md): PostgreSQL's JIT off. Its statements are short
 * (a funding's steps) or scans of indexed pages (reports, settlement, the sweep) that JIT compiled for longer than it
 * saved: a report and batch files' run used 12 % more of the machine with it (docs/testing.md). Compose's server and
 * the embedded one (`walletflow dev`) run with it off as a whole.
 */
export const databaseSettings = [{ name: 'jit', value: 'off' }] as const;

/** `name` as an SQL identifier, quoted (a database's name in CREATE, ALTER and DROP DATABASE). */
export const quotedIdentifier = (name: string): string => `"${name.replace(/"/g, '""')}"`;

/** Applies databaseSettings to `name` (created by this caller, so owned by it) through `client`, on its server. */
export async function configureDatabase(client: pg.Client, name: string): Promise<void> {
  for (const { name: setting, value } of databaseSettings)
    await client.query(`ALTER DATABASE ${quotedIdentifier(name)} SET ${setting} = ${value}`);
}

/** Creates `name` on the server of `serverUrl` when missing (configured: databaseSettings); returns its URL. */
export async function ensureDatabaseExists(serverUrl: string, name: string): Promise<string> {
  const adminUrl = new URL(serverUrl);
  adminUrl.pathname = '/postgres';
  const client = new pg.Client({ connectionString: adminUrl.toString() });
  await client.connect();
  try {
    const exists = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (exists.rowCount === 0) {
      await client.query(`CREATE DATABASE ${quotedIdentifier(name)}`);
      await configureDatabase(client, name);
    }
  } finally {
    await client.end();
  }
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

/** Drops a database (test teardown); terminates its remaining connections first. */
export async function dropDatabase(serverUrl: string, name: string): Promise<void> {
  const adminUrl = new URL(serverUrl);
  adminUrl.pathname = '/postgres';
  const client = new pg.Client({ connectionString: adminUrl.toString() });
  await client.connect();
  try {
    await client.query(`DROP DATABASE IF EXISTS ${quotedIdentifier(name)} WITH (FORCE)`);
  } finally {
    await client.end();
  }
}

/**
 * A read that sums many index entries for a page (a day's totals on the console's home, a batch's
 * tally on every batch page and every push of its progress), run without parallel workers: on the
 * API's small machine, under concurrent requests, starting and waiting for the workers cost several
 * times the scan itself (docs/benchmarks.md, the console with real volume: the home page's p50 from
 * 370 ms to 71 ms with a 100,000-item batch requested today). In a transaction of its own (SET
 * LOCAL), or in the caller's, for the rest of it.
 */
export async function withoutParallelWorkers<T>(
  db: Database | Prisma.TransactionClient,
  query: (db: Database | Prisma.TransactionClient) => Prisma.PrismaPromise<T>,
): Promise<T> {
  if (db instanceof PrismaClient) {
    const [, result] = await db.$transaction([
      db.$executeRaw`SET LOCAL max_parallel_workers_per_gather = 0`,
      query(db),
    ]);
    return result;
  }
  await db.$executeRaw`SET LOCAL max_parallel_workers_per_gather = 0`;
  return query(db);
}

/**
 * A read whose order is a partial index's (a batch runner's next items, an endpoint's dead letters counted to a
 * limit, the sweep's FAILED fundings with a transfer), run with sorting off (incremental sorting too), in a
 * transaction of its own (SET LOCAL). The planner takes the columns of a condition for independent (a batch and its
 * items' status, an endpoint and its deliveries' status), and reckons an outer row's matches by the average, so it
 * may fetch and sort every matching row, or read the table until the limit, rather than read the index to it. With
 * sorting off, only a scan of an index that gives the statement's order is left unpenalised, and of those the partial
 * index reads only the rows asked for (another that gives the order, such as a primary key of random UUIDs, reads
 * every row between them). An interactive transaction: in the worker it waits its turn in the admission line as any
 * transaction does (the array form broke callers that wrap `$queryRaw`), so under a load of fundings a sweep's read
 * may be refused `Overloaded` and retried.
 */
export function inIndexOrder<T>(database: Database, query: (db: Prisma.TransactionClient) => Promise<T>): Promise<T> {
  return database.$transaction(async (tx) => {
    await tx.$executeRaw`SET LOCAL enable_sort = off`;
    // A sort of rows that an index gives in part of the order (by status, then time) is a sort too.
    await tx.$executeRaw`SET LOCAL enable_incremental_sort = off`;
    return query(tx);
  });
}
