// The `walletflow` command.
import { Command } from 'commander';
import { ConfigError } from '../lib/config.ts';

const program = new Command()
  .name('walletflow')
  .description('Partner side of the wallet operator interface: fundings, embedded-app sessions, merchant payments');

program
  .command('dev')
  .description('run the whole stack on embedded defaults (PostgreSQL, Temporal dev server, sandbox, worker, API)')
  .action(async () => (await import('./dev.ts')).runDev());

program
  .command('migrate')
  .description('apply database migrations (offline) to DATABASE_URL or the embedded PostgreSQL')
  .action(async () => (await import('./migrate.ts')).runMigrate());

try {
  await program.parseAsync(process.argv);
} catch (error) {
  if (error instanceof ConfigError) {
    console.error(`walletflow: ${error.message}`);
    process.exit(78);
  }
  console.error(`walletflow: ${(error as Error).message}`);
  process.exit(1);
}
