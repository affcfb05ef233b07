// The `walletflow` command.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Command, type CommanderError } from 'commander';
import { projectRoot } from '../lib/project-root.ts';
import type { BenchOptions } from '../harness/bench.ts';
import type { FundOptions } from './fund.ts';
import type { PayOptions } from './pay.ts';
import type { SoakOptions } from '../harness/soak.ts';
import type { StatusOptions } from './status.ts';

const program = new Command()
  .name('walletflow')
  .description('Partner side of the wallet operator interface: fundings, embedded-app sessions, merchant payments')
  .version(packageVersion(), '-V, --version', 'print the version of walletflow');

function packageVersion(): string {
  const { version } = JSON.parse(readFileSync(path.join(projectRoot, 'package.json'), 'utf8')) as { version?: unknown };
  return typeof version === 'string' ? version : '0.0.0';
}

program
  .command('dev')
  .description('run the whole stack on embedded defaults (PostgreSQL, Temporal dev server, sandbox, worker, API)')
  .action(async () => (await import('./dev.ts')).runDev());

program
  .command('migrate')
  .description('apply database migrations (offline) to DATABASE_URL or the embedded PostgreSQL')
  .action(async () => (await import('./migrate.ts')).runMigrate());

program
  .command('reconcile')
  .description('run one reconciliation sweep now and print what it found (the schedule runs it every few minutes)')
  .option('--older-than <seconds>', 'look at fundings not final after this many seconds (default: RECONCILE_AFTER_SECONDS)')
  .option('--json', 'print the report as JSON')
  .action(async (options: { olderThan?: string; json?: boolean }) => {
    process.exitCode = await (await import('./reconcile.ts')).runReconcile(options);
  });

program
  .command('soak')
  .description('chaos soak: fundings and payments under sandbox faults and process kills, then the ledger checked against walletflow')
  .option('--fundings <n>', 'fundings to request', '60')
  .option('--payments <n>', 'payments to request', '20')
  .option('--concurrency <n>', 'requests in flight at once', '10')
  .option('--seed <n>', 'seed of the plan, the faults and the chaos', '1')
  .option('--timeout <seconds>', 'how long to wait for final states (default: 600, or 3 s per request if more)')
  .option('--no-chaos', 'no faults and no process kills (a baseline)')
  .option('--json <file>', 'also write the report as JSON to this file')
  .option('--log-dir <dir>', 'keep the API, worker, Temporal and PostgreSQL logs in this folder')
  .addHelpText('after', '\nExit codes: 0 every invariant holds; 1 violations (listed) or the run failed; 64 bad options; 130 interrupted.')
  .action(async (options: SoakOptions) => {
    process.exitCode = await (await import('../harness/soak.ts')).runSoak(options);
  });

program
  .command('bench')
  .description('benchmark: fundings through the ops API at several concurrency levels against a wallet-client baseline, and the session URL')
  .option('--levels <list>', 'concurrency levels, comma-separated', '1,8,32,128')
  .option('--seconds <n>', 'timed seconds per level (walletflow and baseline each)', '10')
  .option('--session-seconds <n>', 'seconds of autocannon on the session URL (0: skip)', '10')
  .option('--session-connections <n>', 'autocannon connections on the session URL', '10')
  .option('--temporal <kind>', 'dev (the CLI dev server) or server (a real Temporal server on the PostgreSQL at 127.0.0.1:5432, built on first use)', 'dev')
  .option('--workers <n>', 'worker processes (default: 1 on the dev server, 2 on the server)')
  .option('--out <dir>', 'where the JSON report and the SVG chart go', 'bench/results')
  .option('--name <name>', 'file name of the report and chart (default: <temporal>-latest)')
  .option('--compare <report.json>', 'an earlier report to draw in the chart too')
  .addHelpText('after', '\nExit codes: 0 done; 1 the run failed; 64 bad options; 130 interrupted.')
  .action(async (options: BenchOptions) => {
    process.exitCode = await (await import('../harness/bench.ts')).runBench(options);
  });

program
  .command('codec-server')
  .description('serve the codec endpoint so the Temporal UI and CLI show payloads encrypted under PAYLOAD_ENCRYPTION_KEYS')
  .option('--port <port>', 'port to listen on', '8081')
  .option('--host <host>', 'address to listen on (keep it loopback unless it is behind authentication)', '127.0.0.1')
  .option('--origin <origin...>', 'browser origins allowed to call it (the Temporal UI)', ['http://localhost:8233', 'http://127.0.0.1:8233'])
  .action(async (options: { port: string; host: string; origin: string[] }) => {
    process.exitCode = await (await import('./codec-server.ts')).runCodecServer(options);
  });

/** Usage errors of the ops commands exit 64 (EX_USAGE), like their own input checks. */
const usageExit = (error: CommanderError) => process.exit(error.exitCode === 0 ? 0 : 64);

const opsOptions = (command: Command) =>
  command
    .option('--api <url>', 'ops API base URL (default: $WALLETFLOW_API_URL, else http://127.0.0.1:${PORT:-3000})')
    .option('--key <key>', 'ops API key (default: $WALLETFLOW_OPS_KEY, else the first of $OPS_API_KEYS, else the key `walletflow dev` saved)')
    .showHelpAfterError('(add --help for usage)')
    .exitOverride(usageExit);

opsOptions(
  program
    .command('fund')
    .description('fund a wallet through the ops API and follow the funding until it is final')
    .option('--code <code>', "the recipient's 7-digit cash-in code (never printed whole)")
    .option('--link <linkId>', 'the recipient by linked wallet account (link id)')
    .requiredOption('--amount <value>', 'the amount as a decimal string, e.g. 100.50')
    .option('--currency <currency>', 'ISO 4217 currency', 'PHP')
    .option('--idempotency-key <key>', 'reuse the key a previous attempt printed to retry it safely (default: a fresh UUID)')
    .option('--no-wait', 'return once the API has accepted the funding')
    .option('--timeout <seconds>', 'how long to follow the funding', '120')
    .option('--plain', 'plain lines, one per event, even on a terminal'),
)
  .addHelpText(
    'after',
    `
Give exactly one of --code and --link.

Exit codes: 0 APPROVED (or accepted, with --no-wait); 1 DECLINED, REJECTED or FAILED;
2 not final within --timeout (the funding goes on); 3 the API refused the request or is
not reachable; 64 bad input (nothing was sent); 78 no ops API key found.`,
  )
  .action(async (options: FundOptions) => {
    process.exitCode = await (await import('./fund.ts')).runFund(options);
  });

opsOptions(
  program
    .command('pay')
    .description("take a merchant payment (to MERCHANT_P2M_ID) from a linked wallet and follow it until it is final")
    .requiredOption('--link <linkId>', "the payer's linked wallet account (link id)")
    .requiredOption('--amount <value>', 'the amount as a decimal string, e.g. 25.00')
    .option('--currency <currency>', 'ISO 4217 currency', 'PHP')
    .option('--idempotency-key <key>', 'reuse the key a previous attempt printed to retry it safely (default: a fresh UUID)')
    .option('--no-wait', 'return once the API has accepted the payment')
    .option('--timeout <seconds>', 'how long to follow the payment', '120'),
)
  .addHelpText(
    'after',
    `
Exit codes: 0 SUCCEEDED (or accepted, with --no-wait); 1 FAILED; 2 not final within --timeout
(the payment goes on); 3 the API refused the request or is not reachable; 4 NEEDS_REVIEW (an
execute whose outcome is unknown: settle it with POST /ops/payments/{id}/resolve); 64 bad input;
78 no ops API key found.`,
  )
  .action(async (options: PayOptions) => {
    process.exitCode = await (await import('./pay.ts')).runPay(options);
  });

opsOptions(
  program
    .command('status')
    .description('show a funding and its timeline')
    .argument('<fundingId>', 'the funding id `walletflow fund` printed')
    .option('--json', 'print the funding as the API returns it'),
)
  .addHelpText('after', '\nExit codes: 0 found; 1 no such funding; 3 the API refused the request or is not reachable; 78 no ops API key found.')
  .action(async (fundingId: string, options: StatusOptions) => {
    process.exitCode = await (await import('./status.ts')).runStatus(fundingId, options);
  });

try {
  await program.parseAsync(process.argv);
} catch (error) {
  // Loaded only here: lib/config.ts (zod and every schema) is not worth its start-up time to --help.
  const { ConfigError } = await import('../lib/config.ts');
  if (error instanceof ConfigError) {
    console.error(`walletflow: ${error.message}`);
    process.exit(78);
  }
  console.error(`walletflow: ${(error as Error).message}`);
  process.exit(1);
}
