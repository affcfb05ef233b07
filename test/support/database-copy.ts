// A database made as a copy of a migrated template (CREATE DATABASE … TEMPLATE): the global setup's per-worker
// databases, and each worker's database made again after every file (test/support/test-database.ts). A copy is a
// fraction of a migration's cost (about 0.1 CPU s against 1), and takes the template's schema whole.
import pg from 'pg';
import { configureDatabase, quotedIdentifier as quoted } from '../../lib/database.ts';

/**
 * Makes `name` (absent: it is not dropped first) a copy of `template` on the server of `serverUrl` (its `postgres`
 * database). Nothing should be connected to the template; one found there is ended (a copy waits for none: 55006).
 */
export async function copyDatabase(serverUrl: string, template: string, name: string): Promise<void> {
  const adminUrl = new URL(serverUrl);
  adminUrl.pathname = '/postgres';
  const client = new pg.Client({ connectionString: adminUrl.toString() });
  await client.connect();
  try {
    for (let attempt = 1; ; attempt += 1) {
      try {
        await client.query(`CREATE DATABASE ${quoted(name)} TEMPLATE ${quoted(template)}`);
        // A copy takes the template's tables, not its settings: the same as a database walletflow makes.
        await configureDatabase(client, name);
        return;
      } catch (error) {
        if (attempt >= 5 || (error as { code?: string }).code !== '55006') throw error;
        await client.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1', [template]);
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    }
  } finally {
    await client.end();
  }
}
