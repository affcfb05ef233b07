// The test database of this worker: the global setup migrates one database per test worker, so files that run at the
// same time never see each other's rows (a test that counts
// ledger transactions or sweeps every stuck funding sees only its own worker's files, one at a time).
import { inject } from 'vitest';

export function testDatabaseUrl(): string {
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
