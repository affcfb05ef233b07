// Each test file starts on an empty, migrated database of its worker (test/support/test-database.ts):
// whatever a file stored is gone after its reset, its statistics with it, and the migrations stay.
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { resetTestDatabase, testDatabaseUrl } from '../support/test-database.ts';

async function query<T extends pg.QueryResultRow>(text: string): Promise<T[]> {
  const client = new pg.Client({ connectionString: testDatabaseUrl() });
  await client.connect();
  try {
    return (await client.query<T>(text)).rows;
  } finally {
    await client.end();
  }
}

describe('the worker’s database, made again after a file', () => {
  it('holds none of the rows a file left, and every migration', async () => {
    const migrations = (await query<{ n: string }>('SELECT count(*) AS n FROM _prisma_migrations'))[0]!.n;
    expect(Number(migrations)).toBeGreaterThan(0);
    await query(`CREATE TABLE left_behind (id int PRIMARY KEY)`);
    await query(`INSERT INTO left_behind SELECT generate_series(1, 1000)`);

    await resetTestDatabase();

    expect(await query(`SELECT 1 FROM pg_tables WHERE tablename = 'left_behind'`)).toEqual([]);
    expect((await query<{ n: string }>('SELECT count(*) AS n FROM _prisma_migrations'))[0]!.n).toBe(migrations);
  });
});
