// The test database of this worker: the global setup migrates one database per test worker, so files that run at the
// same time never see each other's rows, and after every file it is made again, migrated and empty, from a template
// (resetTestDatabase), so a file never sees another's either: a test that counts ledger transactions or sweeps every
// stuck funding sees only its own file's, and no file inherits another's 100,000 rows, webhook endpoints or stale
// statistics (the machine's PostgreSQL runs with autovacuum off: /etc/postgresql/15/main/conf.d/90-ci.conf).
import pg from 'pg';
import { inject } from 'vitest';
import { dropDatabase, quotedIdentifier } from '../../lib/database.ts';
import { copyDatabase } from './database-copy.ts';

export function testDatabaseUrl(): string {
  // The unit project's files share their workers' databases with the suite's but never make them again
  // (vitest.config.ts): a file that needs one is an integration file.
  if (process.env.WALLETFLOW_TEST_WITHOUT_DATABASE === '1')
    throw new Error('a unit file uses no database: a file that needs one belongs in test/integration/');
  const urls = inject('databaseUrls');
  const poolId = Number(process.env.VITEST_POOL_ID ?? '1');
  const url = urls[(poolId - 1) % urls.length];
  if (!url) throw new Error('the global setup provided no test database');
  return url;
}

/**
 * The suite's PostgreSQL server (its `postgres` database): for a child process that makes a fresh
 * database of its own there (the soak and the bench take DATABASE_URL's server) instead of starting
 * an embedded server of its own.
 */
export function testDatabaseServerUrl(): string {
  const url = new URL(inject('databaseUrl'));
  url.pathname = '/postgres';
  return url.toString();
}

/**
 * Makes this worker's database again from the migrated template: a copy made beside it first, then
 * the old one dropped (its connections ended) and the copy renamed into its place, so a copy that
 * fails leaves the worker its old database rather than none.
 */
export async function resetTestDatabase(): Promise<void> {
  const name = new URL(testDatabaseUrl()).pathname.slice(1);
  const next = `${name}_next`;
  await dropDatabase(testDatabaseServerUrl(), next);
  await copyDatabase(testDatabaseServerUrl(), inject('templateDatabaseName'), next);
  const client = new pg.Client({ connectionString: testDatabaseServerUrl() });
  await client.connect();
  try {
    await client.query(`DROP DATABASE IF EXISTS ${quotedIdentifier(name)} WITH (FORCE)`);
    await client.query(`ALTER DATABASE ${quotedIdentifier(next)} RENAME TO ${quotedIdentifier(name)}`);
  } finally {
    await client.end();
  }
}
