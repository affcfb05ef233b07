// `walletflow migrate` (npm run db:migrate): applies prisma/migrations with no network access, to
// DATABASE_URL or, when it is absent, to the embedded PostgreSQL under .walletflow/.
import path from 'node:path';
import { applyMigrations } from '../prisma/schema-engine.ts';
import { loadConfig } from '../lib/config.ts';
import { startEmbeddedPostgres } from '../stack/embedded-postgres.ts';
import { projectRoot } from '../lib/project-root.ts';

const root = projectRoot;

export async function runMigrate(): Promise<void> {
  const config = loadConfig();
  const embedded = config.databaseUrl
    ? undefined
    : await startEmbeddedPostgres({
        dataDir: path.join(root, '.walletflow/postgres'),
        port: Number(process.env.WALLETFLOW_POSTGRES_PORT ?? 54329),
      });
  try {
    const applied = await applyMigrations(config.databaseUrl ?? embedded!.url);
    console.log(applied.length === 0 ? 'migrations: up to date' : `migrations applied: ${applied.join(', ')}`);
  } finally {
    await embedded?.stop();
  }
}
