// The `walletflow` command. Every command's module is loaded only when that command runs, so
// start-up reads commander and package.json only. Usage errors (an unknown command or flag, a
// missing argument, a value outside the choices) exit 64 (EX_USAGE); --help and --version 0.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Command, Option, type CommanderError } from 'commander';
import { projectRoot } from '../lib/project-root.ts';
import type { BenchOptions } from '../harness/bench.ts';
import type { SoakOptions } from '../harness/soak.ts';
import { registerOpsCommands } from './ops-commands.ts';
import { runInOwnSession } from '../stack/own-session.ts';

// From the project root, so the compiled command (dist/cli/main.js) finds it too.
const { version } = JSON.parse(readFileSync(path.join(projectRoot, 'package.json'), 'utf8')) as { version: string };

const usageExit = (error: CommanderError) => process.exit(error.exitCode === 0 ? 0 : 64);

const program = new Command()
  .name('walletflow')
  .description('Partner side of the wallet operator interface: fundings, embedded-app sessions, merchant payments')
  .version(version, '-V, --version', 'print the version')
  // Inherited by every command created below.
  .exitOverride(usageExit)
  .showHelpAfterError('(add --help for usage)')
  .hook('preAction', (_program, command) => {
    if (command.opts().key === undefined) return;
    const names: string[] = [];
    for (let at: Command | null = command; at?.parent; at = at.parent) names.unshift(at.name());
    // Never echo the value: it is a secret someone just typed.
    process.stderr.write(
      `walletflow ${names.join(' ')}: --key is no longer accepted (a key on the command line lands in shell history and ps). ` +
        'Set WALLETFLOW_OPS_KEY, or WALLETFLOW_OPS_KEY_FILE to a file holding the key (mode 0600).\n',
    );
    process.exit(64);
  });

program
  .command('dev')
  .description('run the whole stack on embedded defaults (PostgreSQL, Temporal dev server, sandbox, worker, API)')
  .action(async () => {
    await runInOwnSession();
    await (await import('./dev.ts')).runDev();
  });

program
  .command('migrate')
  .description('apply database migrations (offline) to DATABASE_URL or the embedded PostgreSQL')
  .action(async () => (await import('./migrate.ts')).runMigrate());

program
  .command('config')
  .description('the configuration, as the API and the worker read it')
  .command('check')
  .description(
    'checks the configuration as the API and the worker do at start (in production, the production checks), changing nothing; exit 78 with every problem',
  )
  .action(async () => (await import('./config-check.ts')).runConfigCheck());

program
  .command('rotate-keys')
  .description(
    're-encrypt stored tokens and cash-in codes under the first key of TOKEN_ENCRYPTION_KEY (put the new key first, keep the old ones after it until this is done)',
  )
  .action(async () => {
    process.exitCode = await (await import('./rotate-keys.ts')).runRotateKeys();
  });

program
  .command('sweep')
  // Its name before the words were fixed (docs/architecture.md, Words): "reconcile" is a funding's retrieve loop.
  .alias('reconcile')
  .description(
    'run one sweep now (the periodic repair of fundings and payments whose workflow is gone or stuck) and print what it found (the schedule runs it every few minutes)',
  )
  .option(
    '--older-than <seconds>',
    'look at fundings not final whose owner has shown nothing for this many seconds, and payments this old (default: RECONCILE_AFTER_SECONDS)',
  )
  .addOption(new Option('--output <format>', 'what to print').choices(['json', 'text']).default('text'))
  .option('--json', 'the same as --output json')
  .action(async (options: { olderThan?: string; json?: boolean; output: string }) => {
    if (process.argv.slice(2).includes('reconcile'))
      process.stderr.write('walletflow reconcile is now walletflow sweep; the old name will go\n');
    process.exitCode = await (
      await import('./sweep.ts')
    ).runSweep({ ...options, json: options.json === true || options.output === 'json' });
  });

const deploy = program
  .command('deploy')
  .description('the worker deployment: its builds, and which one new workflows go to (docs/changing-workflows.md)');
deploy
  .command('status')
  .description("the deployment's builds: current, ramping, draining, drained")
  .option('--json', 'as JSON')
  .action(async (options: { json?: boolean }) => {
    process.exitCode = await (
      await import('./deploy.ts')
    ).runDeploy({ kind: 'status', ...(options.json ? { json: true } : {}) });
  });
deploy
  .command('promote <build>')
  .description('make a build current: new workflows go to it; running pinned workflows stay on theirs')
  .action(async (buildId: string) => {
    process.exitCode = await (await import('./deploy.ts')).runDeploy({ kind: 'promote', buildId });
  });
deploy
  .command('ramp <build> <percent>')
  .description('send a share of new workflows to a build, the rest to the current one')
  .action(async (buildId: string, percent: string) => {
    process.exitCode = await (await import('./deploy.ts')).runDeploy({ kind: 'ramp', buildId, percent });
  });
deploy
  .command('rollback')
  .description('make the build that was current before current again (its workers must still run)')
  .action(async () => {
    process.exitCode = await (await import('./deploy.ts')).runDeploy({ kind: 'rollback' });
  });

program
  .command('soak')
  .description(
    'chaos soak: fundings and payments under sandbox faults and process kills, then the ledger checked against walletflow',
  )
  .option('--fundings <n>', 'fundings to request', '60')
  .option('--payments <n>', 'payments to request', '20')
  .option('--concurrency <n>', 'requests in flight at once', '10')
  .option('--seed <n>', 'seed of the plan, the faults and the chaos', '1')
  .option('--timeout <seconds>', 'how long to wait for final states (default: 600, or 3 s per request if more)')
  .option('--no-chaos', 'no faults and no process kills (a baseline)')
  .option(
    '--batches <n>',
    'funding batches sent during the run (every third paused and resumed, every third cancelled midway)',
    '0',
  )
  .option('--batch-items <min-max>', 'items per batch', '500-2000')
  .option('--json <file>', 'also write the report as JSON to this file')
  .option('--log-dir <dir>', 'keep the API, worker, Temporal and PostgreSQL logs in this folder')
  .addHelpText(
    'after',
    '\nExit codes: 0 every invariant holds; 1 violations (listed) or the run failed; 64 bad options; 130 interrupted.',
  )
  .action(async (options: SoakOptions) => {
    await runInOwnSession();
    process.exitCode = await (await import('../harness/soak.ts')).runSoak(options);
  });

program
  .command('bench')
  .description(
    'benchmark: fundings through the ops API at several concurrency levels against a wallet-client baseline, and the session URL',
  )
  .option('--levels <list>', 'concurrency levels, comma-separated', '1,8,32,128')
  .option('--seconds <n>', 'timed seconds per level (walletflow and baseline each)', '10')
  .option('--session-seconds <n>', 'seconds of autocannon on the session URL (0: skip)', '10')
  .option('--session-connections <n>', 'autocannon connections on the session URL', '10')
  .option('--quiet-seconds <n>', "seconds of quiet after a load before the workers' resident memory is read", '10')
  .option(
    '--lanes <mode>',
    'FUNDING_LANES of the stack measured: auto, always or off (single fundings on their own workflows)',
    'auto',
  )
  .option(
    '--temporal <kind>',
    'dev (the CLI dev server) or server (a real Temporal server on the PostgreSQL at 127.0.0.1:5432, built on first use)',
    'dev',
  )
  .option('--workers <n>', 'worker processes (default: 1 on the dev server, 2 on the server)')
  .option('--out <dir>', 'where the JSON report and the SVG chart go', 'bench/results')
  .option('--name <name>', 'file name of the report and chart (default: <temporal>-latest)')
  .option('--compare <report.json>', 'an earlier report to draw in the chart too')
  .option(
    '--from-source',
    'run the API and workers from the TypeScript sources (tsx) rather than compiled, as production runs them',
  )
  .option(
    '--preload',
    'flat with data: after the levels, POST and GET /ops/fundings measured, history preloaded, measured again',
  )
  .option('--preload-fundings <n>', 'historical fundings --preload writes', '1000000')
  .option('--preload-payments <n>', 'historical payments --preload writes', '200000')
  .option('--no-burst', 'skip the burst: 1000 POST /ops/fundings at once across 100 recipients')
  .option('--burst-requests <n>', 'requests in the burst', '1000')
  .option(
    '--batch <n>',
    'instead of the levels: single fundings at 32 in flight for --seconds, then one funding batch of n items (1 to 100000)',
  )
  .option(
    '--token-batch <n>',
    'instead of the levels: a batch of n CODE items, then one of n TOKEN items whose access tokens all expired, a single funding every second beside each (1 to 20000)',
  )
  .option(
    '--batch-store <n>',
    "instead of the levels: one funding batch of n items stored and cancelled (not run), single fundings alongside; the store's and cancel's time, the API's memory",
  )
  .option(
    '--settlement <n>',
    'instead of the levels: a past day of n approved fundings planted against the sandbox, settled (GET /ops/settlements/{day}) beside single fundings, against the wallet client retrieving them alone; its CSV downloaded (10 to 200000)',
  )
  .option(
    '--console',
    "instead of the levels: each ops console page's server time (p50, p95) on a small database and with the preload (--preload-fundings, --preload-payments)",
  )
  .option('--console-requests <n>', 'timed requests per console page on each side', '100')
  .option(
    '--console-batch-items <n>',
    'items of the batch whose items pages --console measures (10 to 100000)',
    '100000',
  )
  .option(
    '--figures-only',
    'run nothing: write docs/generated/bench-figures.md again from the reports in bench/results/ (each run that reports there does)',
  )
  .addHelpText('after', '\nExit codes: 0 done; 1 the run failed; 64 bad options; 130 interrupted.')
  .action(async (options: BenchOptions) => {
    await runInOwnSession();
    process.exitCode = await (await import('../harness/bench.ts')).runBench(options);
  });

program
  .command('codec-server')
  .description(
    'serve the codec endpoint so the Temporal UI and CLI show payloads encrypted under PAYLOAD_ENCRYPTION_KEYS',
  )
  .option('--port <port>', 'port to listen on', '8081')
  .option('--host <host>', 'address to listen on (keep it loopback unless it is behind authentication)', '127.0.0.1')
  .option('--origin <origin...>', 'browser origins allowed to call it (the Temporal UI)', [
    'http://localhost:8233',
    'http://127.0.0.1:8233',
  ])
  .action(async (options: { port: string; host: string; origin: string[] }) => {
    process.exitCode = await (await import('./codec-server.ts')).runCodecServer(options);
  });

registerOpsCommands(program);

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
