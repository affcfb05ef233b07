// Times PostgreSQL stamps read back as the instants they are, whatever time zone the database's sessions are set to:
// the pg adapter reads a timestamptz's offset as +00:00 (prisma/prisma#26786), so a database set to Asia/Manila read
// every now() eight hours late, and a settlement that pages a day's events by the last one read skipped or repeated
// them. Every connection walletflow opens (lib/database.ts createDatabase) runs its session in UTC, with ISO dates and
// standard string literals.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDatabase, quotedIdentifier, withSessionSettings, type Database } from '../../lib/database.ts';
import { applyMigrations } from '../../prisma/schema-engine.ts';
import { testDatabaseUrl } from '../support/test-database.ts';

const url = testDatabaseUrl();
const opened: Database[] = [];
const open = (databaseUrl: string) => {
  const database = createDatabase(databaseUrl);
  opened.push(database);
  return database;
};

beforeAll(async () => {
  // This worker's database, made again after the file: its new sessions start in Manila's time (UTC+8, no DST).
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  try {
    const name = quotedIdentifier(new URL(url).pathname.slice(1));
    await admin.query(`ALTER DATABASE ${name} SET timezone = 'Asia/Manila'`);
    // And a date style and string literals a DBA may set too.
    await admin.query(`ALTER DATABASE ${name} SET datestyle = 'SQL, DMY'`);
    await admin.query(`ALTER DATABASE ${name} SET standard_conforming_strings = off`);
    const plain = await admin.query<{ zone: string }>(`SELECT current_setting('TimeZone') AS zone`);
    expect(plain.rows[0]?.zone).not.toBe('Asia/Manila'); // set for sessions that start from now on
  } finally {
    await admin.end();
  }
});
afterAll(async () => {
  await Promise.all(opened.map((database) => database.$disconnect()));
});

describe('a database whose sessions are set to another time zone, date style and string literals', () => {
  it('reads the time PostgreSQL stamps as the instant it is, in a session in UTC', async () => {
    const database = open(url);
    const [row] = await database.$queryRaw<Array<{ now: Date; zone: string }>>`
      SELECT now() AS now, current_setting('TimeZone') AS zone`;
    expect(Math.abs(row!.now.getTime() - Date.now())).toBeLessThan(60_000);
    expect(row!.zone).toBe('UTC');
    // The audit's pattern, a backslash in a string literal, is read as written.
    const [literal] = await database.$queryRaw<Array<{ identity: string }>>`
      SELECT substring('Maria (oidc:ma)' from '\\(([^()]*)\\)$') AS identity`;
    expect(literal!.identity).toBe('oidc:ma');
    // A time the client sends is the instant the database's clock says: within seconds of now(), not eight hours off.
    const [apart] = await database.$queryRaw<Array<{ seconds: number }>>`
      SELECT abs(extract(epoch FROM now() - ${new Date()}::timestamptz))::float8 AS seconds`;
    expect(apart!.seconds).toBeLessThan(60);
  });

  it('applies migrations on it: the migrations’ own record reads as written', async () => {
    // Before: the schema engine's pool took no settings, and read _prisma_migrations' times in the date style set.
    expect(await applyMigrations(url)).toEqual([]);
  });

  it('keeps a URL’s own startup options and PGOPTIONS, and still runs the session in UTC', async () => {
    const withOptions = new URL(url);
    withOptions.searchParams.set('options', '-c statement_timeout=4321 -c TimeZone=America/New_York');
    // A socket's form, which no URL parser takes, gets it too.
    expect(withSessionSettings('postgresql://u:p@/db?host=/run/postgresql&options=-c%20x%3Dy&sslmode=disable')).toBe(
      'postgresql://u:p@/db?host=/run/postgresql&options=-c%20x%3Dy%20-c%20TimeZone=UTC%20-c%20DateStyle=ISO%20-c%20standard_conforming_strings=on&sslmode=disable',
    );
    const database = open(withOptions.toString());
    const [row] = await database.$queryRaw<Array<{ now: Date; zone: string; timeout: string }>>`
      SELECT now() AS now, current_setting('TimeZone') AS zone, current_setting('statement_timeout') AS timeout`;
    expect(Math.abs(row!.now.getTime() - Date.now())).toBeLessThan(60_000);
    expect(row).toMatchObject({ zone: 'UTC', timeout: '4321ms' });
    // Options written with raw spaces, as an operator types them: pg-connection-string escapes the URL again, and ours
    // still reach PostgreSQL as settings.
    const typed = open(`${url}${url.includes('?') ? '&' : '?'}options=-c statement_timeout=4321`);
    const [raw] = await typed.$queryRaw<Array<{ zone: string; timeout: string }>>`
      SELECT current_setting('TimeZone') AS zone, current_setting('statement_timeout') AS timeout`;
    expect(raw).toEqual({ zone: 'UTC', timeout: '4321ms' });
    // PGOPTIONS, read by pg when the pool is given none, is kept beside ours.
    const before = process.env.PGOPTIONS;
    process.env.PGOPTIONS = '-c lock_timeout=1234';
    try {
      const [settings] = await open(url).$queryRaw<Array<{ zone: string; lock: string }>>`
        SELECT current_setting('TimeZone') AS zone, current_setting('lock_timeout') AS lock`;
      expect(settings).toEqual({ zone: 'UTC', lock: '1234ms' });
    } finally {
      if (before === undefined) delete process.env.PGOPTIONS;
      else process.env.PGOPTIONS = before;
    }
  });
});
