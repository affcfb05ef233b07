// The suite's stand-in for autovacuum (test/support/analyze-like-autovacuum.ts), on the worker's
// database: a table loaded past the threshold is analyzed, and its plans follow; one changed by
// fewer rows is left alone, as autovacuum would leave it.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { analyzeLikeAutovacuum } from '../support/analyze-like-autovacuum.ts';
import { testDatabaseUrl } from '../support/test-database.ts';

const client = new pg.Client({ connectionString: testDatabaseUrl() });
const table = `analyze_check_${process.pid}`;

beforeAll(async () => {
  await client.connect();
  await client.query(`CREATE TABLE ${table} (id bigint PRIMARY KEY, kind text NOT NULL)`);
});
afterAll(async () => {
  await client.query(`DROP TABLE IF EXISTS ${table}`);
  await client.end();
});

const analyzedAt = async () =>
  (
    await client.query<{ at: Date | null }>(
      `SELECT COALESCE(last_analyze, last_autoanalyze) AS at FROM pg_stat_user_tables WHERE relname = $1`,
      [table],
    )
  ).rows[0]?.at ?? null;

describe('ANALYZE as autovacuum would run it', () => {
  it('analyzes a table loaded past the threshold, so the planner knows its size; a few changes after are left', async () => {
    await client.query(
      `INSERT INTO ${table} SELECT n, CASE WHEN n % 2 = 0 THEN 'HOLD' ELSE 'POST' END FROM generate_series(1, 20000) n`,
    );
    // This session's counts reach the statistics now, not when it has been idle for 10 s.
    await client.query('SELECT pg_stat_force_next_flush()');
    await client.query('SELECT 1');
    expect(await analyzeLikeAutovacuum(testDatabaseUrl())).toContain(`public.${table}`);
    expect(await analyzedAt()).not.toBeNull();
    const plan = (await client.query<{ 'QUERY PLAN': string }>(`EXPLAIN SELECT * FROM ${table} WHERE kind = 'HOLD'`))
      .rows[0]!['QUERY PLAN'];
    // About half the rows, from the statistics (without them the planner guesses a small fraction).
    expect(Number(/rows=(\d+)/.exec(plan)?.[1])).toBeGreaterThan(5000);

    await client.query(`UPDATE ${table} SET kind = 'POST' WHERE id <= 40`);
    await client.query('SELECT pg_stat_force_next_flush()');
    await client.query('SELECT 1');
    expect(await analyzeLikeAutovacuum(testDatabaseUrl())).not.toContain(`public.${table}`);
  });
});
