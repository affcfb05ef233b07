// The Prisma client on PostgreSQL through the pg driver adapter (Prisma 7 has no query engine binary).
import { PrismaPg } from '@prisma/adapter-pg';
import pg from 'pg';
import { PrismaClient } from '../generated/prisma/client.ts';
import { createAdmissionGate, currentAdmissionLane, type AdmissionGate, type AdmissionLimits } from './admission.ts';

export type Database = PrismaClient;

/** A process's PostgreSQL connections (the pg pool's `max`). */
export const DEFAULT_POOL_SIZE = 10;

export function createDatabase(databaseUrl: string, { maxConnections = DEFAULT_POOL_SIZE }: { maxConnections?: number } = {}): Database {
  return new PrismaClient({ adapter: new PrismaPg({ connectionString: databaseUrl, max: maxConnections }) });
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
 * The API's database: every interactive transaction (`$transaction`) is admitted through the
 * gate first, in its caller's lane (lib/admission.ts inAdmissionLane), so a burst waits in line
 * holding no connection, and what the line cannot take is refused at once (Overloaded), never
 * left to time out inside the pool.
 */
export function createApiDatabase(
  databaseUrl: string,
  { maxConnections = DEFAULT_POOL_SIZE, admission: limits }: { maxConnections?: number; admission?: Partial<AdmissionLimits> } = {},
): { database: Database; admission: AdmissionGate } {
  const client = createDatabase(databaseUrl, { maxConnections });
  const admission = createAdmissionGate({ ...apiAdmissionLimits(maxConnections), ...limits });
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

/** Readiness probe: a round trip to PostgreSQL. */
export async function pingDatabase(database: Database): Promise<void> {
  await database.$queryRaw`SELECT 1`;
}

/** Creates `name` on the server of `serverUrl` when missing; returns the URL of that database. */
export async function ensureDatabaseExists(serverUrl: string, name: string): Promise<string> {
  const adminUrl = new URL(serverUrl);
  adminUrl.pathname = '/postgres';
  const client = new pg.Client({ connectionString: adminUrl.toString() });
  await client.connect();
  try {
    const exists = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (exists.rowCount === 0) await client.query(`CREATE DATABASE "${name.replace(/"/g, '""')}"`);
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
    await client.query(`DROP DATABASE IF EXISTS "${name.replace(/"/g, '""')}" WITH (FORCE)`);
  } finally {
    await client.end();
  }
}
