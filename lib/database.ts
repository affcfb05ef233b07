// The Prisma client on PostgreSQL through the pg driver adapter (Prisma 7 has no query engine binary).
import { PrismaPg } from '@prisma/adapter-pg';
import pg from 'pg';
import { PrismaClient } from '../generated/prisma/client.ts';

export type Database = PrismaClient;

export function createDatabase(databaseUrl: string, { maxConnections = 10 }: { maxConnections?: number } = {}): Database {
  return new PrismaClient({ adapter: new PrismaPg({ connectionString: databaseUrl, max: maxConnections }) });
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
