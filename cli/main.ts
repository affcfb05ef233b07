// The `walletflow` command.
import type { LedgerCommandOptions } from './ledger.ts';
import { Command, type CommanderError } from 'commander';
import { ConfigError } from '../lib/config.ts';
import type { BenchOptions } from '../harness/bench.ts';
import type { FundOptions } from './fund.ts';
import type { PayOptions } from './pay.ts';
import type { SoakOptions } from '../harness/soak.ts';
import type { StatusOptions } from './status.ts';

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

program
  .command('rotate-keys')
  .description('re-encrypt stored tokens and cash-in codes under the first key of TOKEN_ENCRYPTION_KEY (put the new key first, keep the old ones after it until this is done)')
  .action(async () => {
    process.exitCode = await (await import('./rotate-keys.ts')).runRotateKeys();
  });

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

const webhooks = program.command('webhooks').description("signed webhooks to the partner's systems (contract-decisions section 13)");
opsOptions(
  webhooks
    .command('listen')
    .description('register a temporary endpoint for every event, print and verify each one, forward it; Ctrl-C deletes the endpoint')
    .option('--forward-to <url>', 'where each verified event is POSTed, with its webhook-* headers')
    .option('--port <port>', 'the local receiver’s port on 127.0.0.1 (default: any free one)'),
)
  .addHelpText('after', '\nExit codes: 0 stopped and the endpoint deleted; 3 the API refused or is not reachable; 64 bad usage; 78 no ops API key found.')
  .action(async (options: { forwardTo?: string; port?: string; api?: string; key?: string }) => {
    process.exitCode = await (await import('./webhooks.ts')).runWebhooksListen(options);
  });

const accounts = program.command('accounts').description("the partner's ledger accounts (docs/ledger.md)");
opsOptions(
  accounts
    .command('get')
    .description('an account: balance, held, available')
    .argument('<account>', 'TREASURY (or IN_FLIGHT, WALLET_CLEARING, MERCHANT_REVENUE, CAPITAL), else a partner user id')
    .option('--output <format>', 'json or text', 'text'),
).action(async (account: string, options: LedgerCommandOptions) => {
  process.exitCode = await (await import('./ledger.ts')).runAccountsGet(account, options);
});
opsOptions(
  accounts
    .command('adjust')
    .description("adjust a partner user's account (other leg: TREASURY) or the treasury (other leg: CAPITAL)")
    .argument('<account>', 'a partner user id, or TREASURY')
    .requiredOption('--amount <value>', 'signed decimal string: -25.00 debits, 25.00 credits')
    .requiredOption('--reason <text>', 'why (stored with the adjustment)')
    .option('--currency <currency>', 'ISO 4217 currency', 'PHP')
    .option('--idempotency-key <key>', 'reuse the key a previous attempt printed to retry it safely (default: a fresh UUID)')
    .option('--output <format>', 'json or text', 'text'),
).action(async (account: string, options: LedgerCommandOptions & { amount: string; reason: string; currency: string; idempotencyKey?: string }) => {
  process.exitCode = await (await import('./ledger.ts')).runAccountsAdjust(account, options);
});
opsOptions(
  program
    .command('ledger')
    .description('ledger entries, newest first')
    .option('--account <account>', 'only this account (TREASURY, USER:{partnerUserId}, …)')
    .option('--limit <n>', 'entries per page (1 to 200)', '50')
    .option('--cursor <cursor>', 'the next page a previous run printed')
    .option('--output <format>', 'json or text', 'text'),
).action(async (options: LedgerCommandOptions & { account?: string; limit: string; cursor?: string }) => {
  process.exitCode = await (await import('./ledger.ts')).runLedger(options);
});
opsOptions(
  program
    .command('settle')
    .description("a day's approved fundings and succeeded payments against the wallet's records and the ledger")
    .requiredOption('--date <YYYY-MM-DD>', 'the day, in SETTLEMENT_TZ (default Asia/Manila)')
    .option('--output <format>', 'json, csv or text', 'text'),
)
  .addHelpText('after', '\nExit codes: 0 every item matched; 1 something missing or mismatched; 3 the API refused the request or is not reachable; 78 no ops API key found.')
  .action(async (options: LedgerCommandOptions & { date: string }) => {
    process.exitCode = await (await import('./ledger.ts')).runSettle(options);
  });

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
