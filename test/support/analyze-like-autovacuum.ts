// ANALYZE as autovacuum would run it: every table of the database with more rows changed since its
// last ANALYZE than autovacuum's threshold (50 rows and a tenth of the table). The machine's
// PostgreSQL runs with autovacuum off (/etc/postgresql/15/main/conf.d/90-ci.conf), and the files of
// one test worker share its database (test-database.ts): without statistics, a file that followed
// one that stored 100,000 fundings got a plan that read the whole ledger once per hold (a nested
// loop over 100,000 holds), ran past its tests' time-outs and kept the CPU busy for the rest of the
// run. test/analyze-after-each-file.ts runs it after every file.
import pg from 'pg';

/** Analyzes the tables past the threshold; answers their names. */
export async function analyzeLikeAutovacuum(databaseUrl: string): Promise<string[]> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const { rows } = await client.query<{ name: string }>(
      `SELECT format('%I.%I', s.schemaname, s.relname) AS name
         FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid
        WHERE s.n_mod_since_analyze > 50 + 0.1 * GREATEST(c.reltuples, 0)
        ORDER BY 1`,
    );
    const names = rows.map((row) => row.name);
    if (names.length > 0) await client.query(`ANALYZE ${names.join(', ')}`);
    return names;
  } finally {
    await client.end();
  }
}
