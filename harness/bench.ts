// `walletflow bench`: fundings through the ops API (CODE recipients, no faults) at several
// concurrency levels for a fixed time each, against a baseline in the same run (the same create
// and execute calls made straight to the sandbox with the wallet client: no API, Temporal or
// database), CPU and memory of the API, worker(s) and Temporal per level, and the session URL
// alone under autocannon. Writes a JSON report and an SVG chart; a report written to the
// repository's bench/results/ also updates docs/generated/bench-figures.md, the newest figures of
// each measure (harness/bench-figures.ts). Exit 0: done; 1: the run failed; 64: bad options.
import { fundingLanesModes, type FundingLanesMode } from '../domain/funding.ts';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createWalletClient } from '../wallet/index.ts';
import {
  startTemporalServer,
  resolveTemporalServer,
  dropTemporalDatabases,
  type RunningTemporalServer,
} from './temporal-server.ts';
import {
  createCodeSupply,
  runBaselineLevel,
  runWalletflowLevel,
  round1,
  type CodeSupply,
  type LevelRun,
} from './bench-load.ts';
import {
  benchReportSchema,
  formatBenchTable,
  renderChart,
  seriesOf,
  type BenchReport,
  type ChartSeries,
} from './bench-report.ts';
import { runLanders, runSessionLoad, waitForOnboardings } from './bench-session.ts';
import { runBurst, waitForFundingsFinal } from './bench-burst.ts';
import { runBatch, storeBatch, type BatchBenchRun, type BatchStoreRun } from './bench-batch.ts';
import { runSettlementBench, type SettlementBenchRun } from './bench-settlement.ts';
import {
  checkTokenBatchLinks,
  formatTokenBatchBench,
  startSinglesBeside,
  type TokenBatchBenchReport,
} from './bench-token-batch.ts';
import { createExpiredLinks } from './expired-links.ts';
import { historyShape, runLeanLevel } from './bench-lean.ts';
import { historyPerFunding } from './bench-history.ts';
import { Client, Connection } from '@temporalio/client';
import { rssMiBOf } from './process-usage.ts';
import { compileProductionCode } from './compiled-code.ts';
import { projectRoot, runsCompiled } from '../lib/project-root.ts';
import { benchFiguresFile, benchResultsDir, writeBenchFigures } from './bench-figures.ts';
import { flatCodesWanted, runFlatWithData } from './bench-flat.ts';
import { formatConsoleTable, runConsoleBench, type ConsoleBenchReport } from './bench-console.ts';
import { createCleanup, exitOnStopSignals, type Cleanup } from './cleanup.ts';
import { startLocalStack, type LocalStack } from './local-stack.ts';
import { sampleUsage, type ProcessUsage } from './process-usage.ts';
import { opsClient, sandboxAdmin, type DriverStats } from './soak-driver.ts';
import { sandboxWalletConfig } from '../stack/sandbox-wallet.ts';

export interface BenchOptions {
  levels: string;
  seconds: string;
  sessionSeconds: string;
  sessionConnections: string;
  /** Seconds of quiet before each resident-memory reading (default 10). */
  quietSeconds?: string;
  /** FUNDING_LANES of the stack measured (default: the product's default, auto). */
  lanes?: string;
  temporal: string;
  workers?: string;
  out: string;
  name?: string;
  /** An earlier report drawn as a third series (e.g. before a change). */
  compare?: string;
  logDir?: string;
  /** Run the API and workers through tsx from the sources instead of compiled JavaScript. */
  fromSource?: boolean;
  /** The flat-with-data part: measure, preload history, measure again (harness/bench-flat.ts). */
  preload?: boolean;
  preloadFundings?: string;
  preloadPayments?: string;
  /** The burst: 1000 POST /ops/fundings at once across 100 recipients (on by default; --no-burst skips it). */
  burst?: boolean;
  burstRequests?: string;
  /** The batch run instead of the levels: one batch of this many items against single fundings at 32 in flight. */
  batch?: string;
  /**
   * Token refresh at volume instead of the levels: a CODE batch and a TOKEN batch (every token expired) of this many
   * items, single fundings beside each.
   */
  tokenBatch?: string;
  /** The store of a batch alone: one batch of this many items stored and cancelled, single fundings alongside. */
  batchStore?: string;
  /**
   * A day's settlement instead of the levels: a day of this many approved fundings settled
   * (harness/bench-settlement.ts).
   */
  settlement?: string;
  /**
   * The console's pages instead of the levels: each page's server time on a small database and with the preload
   * (harness/bench-console.ts).
   */
  console?: boolean;
  /** Timed requests per console page on each side (default 100). */
  consoleRequests?: string;
  /** Items of the batch whose items pages --console measures (default 100000). */
  consoleBatchItems?: string;
  /** Run nothing: write docs/generated/bench-figures.md again from the reports in bench/results/. */
  figuresOnly?: boolean;
}

class UsageError extends Error {}

function wholeNumber(value: string, name: string, min: number, max: number): number {
  const parsed = Number(value);
  if (!/^\d+$/.test(value.trim()) || parsed < min || parsed > max)
    throw new UsageError(`--${name} must be a whole number from ${min} to ${max}`);
  return parsed;
}

interface Settings {
  levels: number[];
  seconds: number;
  sessionSeconds: number;
  sessionConnections: number;
  /** How long the bench waits, after a load, before it reads the workers' resident memory. */
  quietSeconds: number;
  fundingLanes: FundingLanesMode;
  temporal: 'dev-server' | 'server';
  workers: number;
  out: string;
  name: string;
  compare?: string;
  fromSource: boolean;
  preload?: { fundings: number; payments: number };
  /** Requests in the burst; 0: no burst. */
  burst: number;
  /** Items in the batch run; 0: the usual run (levels, burst, session URL). */
  batch: number;
  /** Items in each batch of the token refresh run; 0: not that run. */
  tokenBatch: number;
  /** Items in the store-only run; 0: none. */
  batchStore: number;
  /** Fundings of the settled day; 0: not that run. */
  settlement: number;
  /** The console run: requests per page and the big batch's items; absent: not that run. */
  console?: { requests: number; batchItems: number; fundings: number; payments: number };
}

function lanesMode(value: string): FundingLanesMode {
  const mode = fundingLanesModes.find((known) => known === value);
  if (!mode) throw new UsageError(`--lanes must be one of ${fundingLanesModes.join(', ')}`);
  return mode;
}

function parse(options: BenchOptions): Settings {
  const levels = options.levels.split(',').map((level) => wholeNumber(level, 'levels', 1, 1024));
  if (levels.length === 0) throw new UsageError('--levels needs at least one level');
  if (options.temporal !== 'dev' && options.temporal !== 'server')
    throw new UsageError('--temporal must be dev or server');
  const temporal = options.temporal === 'dev' ? 'dev-server' : 'server';
  const workers = wholeNumber(options.workers ?? (temporal === 'server' ? '2' : '1'), 'workers', 1, 8);
  return {
    levels,
    seconds: wholeNumber(options.seconds, 'seconds', 1, 600),
    sessionSeconds: wholeNumber(options.sessionSeconds, 'session-seconds', 0, 600),
    sessionConnections: wholeNumber(options.sessionConnections, 'session-connections', 1, 1024),
    quietSeconds: wholeNumber(options.quietSeconds ?? '10', 'quiet-seconds', 0, 600),
    fundingLanes: lanesMode(options.lanes ?? 'auto'),
    temporal,
    workers,
    out: path.resolve(options.out),
    batch: options.batch === undefined ? 0 : wholeNumber(options.batch, 'batch', 1, 100_000),
    tokenBatch: options.tokenBatch === undefined ? 0 : wholeNumber(options.tokenBatch, 'token-batch', 1, 20_000),
    batchStore: options.batchStore === undefined ? 0 : wholeNumber(options.batchStore, 'batch-store', 1, 100_000),
    settlement: options.settlement === undefined ? 0 : wholeNumber(options.settlement, 'settlement', 10, 200_000),
    ...(options.console
      ? {
          console: {
            requests: wholeNumber(options.consoleRequests ?? '100', 'console-requests', 1, 10_000),
            batchItems: wholeNumber(options.consoleBatchItems ?? '100000', 'console-batch-items', 10, 100_000),
            fundings: wholeNumber(options.preloadFundings ?? '1000000', 'preload-fundings', 100, 20_000_000),
            payments: wholeNumber(options.preloadPayments ?? '200000', 'preload-payments', 100, 5_000_000),
          },
        }
      : {}),
    name:
      options.name ??
      `${options.console ? 'console-' : ''}${options.batch === undefined ? '' : `batch-${options.batch}-`}${options.tokenBatch === undefined ? '' : `token-batch-${options.tokenBatch}-`}${options.batchStore === undefined ? '' : `batch-store-${options.batchStore}-`}${options.settlement === undefined ? '' : `settlement-${options.settlement}-`}${temporal}${workers > 1 ? `-${workers}-workers` : ''}-latest`,
    ...(options.compare ? { compare: path.resolve(options.compare) } : {}),
    fromSource: options.fromSource === true,
    burst: options.burst === false ? 0 : wholeNumber(options.burstRequests ?? '1000', 'burst-requests', 1, 100_000),
    ...(options.preload
      ? {
          preload: {
            fundings: wholeNumber(options.preloadFundings ?? '1000000', 'preload-fundings', 0, 20_000_000),
            payments: wholeNumber(options.preloadPayments ?? '200000', 'preload-payments', 0, 5_000_000),
          },
        }
      : {}),
  };
}

export async function runBench(options: BenchOptions): Promise<number> {
  if (options.figuresOnly) {
    process.stdout.write(`wrote ${path.relative(process.cwd(), await writeBenchFigures(projectRoot))}\n`);
    return 0;
  }
  let settings: Settings;
  try {
    settings = parse(options);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    console.error(`walletflow bench: ${error.message}`);
    return 64;
  }
  const started = Date.now();
  const log = (line: string) =>
    process.stdout.write(`${`${((Date.now() - started) / 1000).toFixed(0)}s`.padStart(5)}  ${line}\n`);
  const cleanup = createCleanup(log);
  const signals = exitOnStopSignals(cleanup, log, 'bench');
  try {
    if (
      [settings.batch, settings.tokenBatch, settings.batchStore, settings.settlement, settings.console ? 1 : 0].filter(
        (items) => items > 0,
      ).length > 1
    ) {
      throw new UsageError(
        '--batch, --token-batch, --batch-store, --settlement and --console are separate runs: give one of them',
      );
    }
    if (settings.settlement > 0) {
      return writeReport(settings, await benchSettlement(settings, log, cleanup), formatSettlementBench);
    }
    if (settings.console) {
      return writeReport(settings, await benchConsole(settings, settings.console, log, cleanup), formatConsoleTable);
    }
    if (settings.tokenBatch > 0) {
      return writeReport(settings, await benchTokenBatch(settings, log, cleanup), formatTokenBatchBench);
    }
    if (settings.batchStore > 0) {
      return writeReport(settings, await benchBatchStore(settings, log, cleanup), formatBatchStore);
    }
    if (settings.batch > 0) {
      return writeReport(settings, await benchBatch(settings, log, cleanup), formatBatchBench);
    }
    const report = await bench(settings, log, cleanup);
    await mkdir(settings.out, { recursive: true });
    const jsonPath = path.join(settings.out, `${settings.name}.json`);
    const svgPath = path.join(settings.out, `${settings.name}.svg`);
    await writeFile(jsonPath, `${JSON.stringify(report, null, 2)}\n`);
    const series: ChartSeries[] = seriesOf(report);
    if (settings.compare) {
      const earlier = benchReportSchema.parse(JSON.parse(await readFile(settings.compare, 'utf8')));
      series.push({ ...seriesOf(earlier, `earlier: ${earlier.name}`, '#d29922')[0]!, dashed: true });
    }
    await writeFile(
      svgPath,
      renderChart(
        `walletflow bench, ${report.temporal === 'server' ? 'Temporal server' : 'Temporal dev server'}, ${report.workers} worker(s), ${report.date.slice(0, 10)}`,
        series,
      ),
    );
    process.stdout.write(
      `\n${formatBenchTable(report)}\n\nreport: ${path.relative(process.cwd(), jsonPath)}, chart: ${path.relative(process.cwd(), svgPath)}\n`,
    );
    await updateFigures(settings);
    return 0;
  } catch (error) {
    if (signals.interrupted()) return 130;
    console.error(`walletflow bench: ${(error as Error).message}`);
    return error instanceof UsageError ? 64 : 1;
  } finally {
    if (!signals.interrupted()) await cleanup.run();
    signals.off();
  }
}

/**
 * The machine's PostgreSQL for the real Temporal server (trust auth; WALLETFLOW_BENCH_TEMPORAL_POSTGRES overrides it).
 */
/** A separate run's end: its report as JSON in `--out`, its table printed with where the report went. */
async function writeReport<Report>(
  settings: Settings,
  report: Report,
  format: (report: Report) => string,
): Promise<number> {
  await mkdir(settings.out, { recursive: true });
  const jsonPath = path.join(settings.out, `${settings.name}.json`);
  await writeFile(jsonPath, `${JSON.stringify(report, null, 2)}\n`);
  process.stdout.write(`\n${format(report)}\n\nreport: ${path.relative(process.cwd(), jsonPath)}\n`);
  await updateFigures(settings);
  return 0;
}

/**
 * A report written to the repository's bench/results/: the figures table the docs link to
 * (docs/generated/bench-figures.md) written again from every report there, so its measure shows
 * this run. A report written elsewhere (`--out`, a test's folder) leaves it as it is.
 */
async function updateFigures(settings: Settings): Promise<void> {
  if (settings.out !== path.join(projectRoot, benchResultsDir)) return;
  await writeBenchFigures(projectRoot);
  process.stdout.write(`figures: ${benchFiguresFile}\n`);
}

function temporalPostgres() {
  const url = new URL(process.env.WALLETFLOW_BENCH_TEMPORAL_POSTGRES ?? 'postgres://postgres@127.0.0.1:5432');
  return {
    host: url.hostname,
    port: Number(url.port || 5432),
    user: decodeURIComponent(url.username || 'postgres'),
    password: decodeURIComponent(url.password),
  };
}

async function startRealTemporal(log: (line: string) => void, cleanup: Cleanup): Promise<RunningTemporalServer> {
  const tools = resolveTemporalServer();
  const dir = await mkdtemp(path.join(os.tmpdir(), 'walletflow-temporal-server-'));
  cleanup.add(() => rm(dir, { recursive: true, force: true }));
  const postgres = temporalPostgres();
  const databasePrefix = `walletflow_bench_temporal_${process.pid}_${Date.now().toString(36)}`;
  const databases = [databasePrefix, `${databasePrefix}_visibility`];
  cleanup.add(async () => dropTemporalDatabases({ sqlTool: tools.sqlTool, postgres }, databases));
  const logLines: string[] = [];
  const server = await startTemporalServer({
    ...tools,
    dir,
    postgres,
    databasePrefix,
    historyShards: 4,
    namespace: 'default',
    onLog: (line) => {
      logLines.push(line);
      if (logLines.length > 200) logLines.shift();
    },
  });
  cleanup.add(() => server.stop());
  log(
    `Temporal: server ${path.basename(tools.server)} on ${server.address}, 4 history shards, PostgreSQL ${postgres.host}:${postgres.port} (databases ${databases.join(', ')})`,
  );
  return server;
}

/** The stack under measurement: Temporal (the dev server or a real one), API, worker(s), sandbox, clients. */
async function startBenchStack(
  settings: Settings,
  log: (line: string) => void,
  cleanup: Cleanup,
  env: NodeJS.ProcessEnv = {},
) {
  const realTemporal = settings.temporal === 'server' ? await startRealTemporal(log, cleanup) : undefined;
  // Compiled, as production runs them, unless this code itself runs compiled already (dist/).
  let compiledCodeDir: string | undefined;
  if (!settings.fromSource && !runsCompiled) {
    compiledCodeDir = await compileProductionCode();
    log(
      `API and workers compiled to ${path.relative(process.cwd(), compiledCodeDir)} (production build; --from-source to run them through tsx)`,
    );
  }
  const stack: LocalStack = await startLocalStack({
    ...(compiledCodeDir ? { compiledCodeDir } : {}),
    purpose: 'bench',
    log,
    cleanup,
    workers: settings.workers,
    ...(realTemporal ? { temporal: { address: realTemporal.address, namespace: 'default' } } : {}),
    env: {
      // The session URL's per-sender limit would cap the autocannon run at 100 requests/s.
      SESSION_RATE_LIMIT_PER_MINUTE: '1000000',
      FUNDING_LANES: settings.fundingLanes,
      ...env,
    },
  });
  const admin = sandboxAdmin(stack.sandbox.url);
  const stats: DriverStats = { retries: 0, relaunches: 0 };
  const ops = opsClient(stack.apiBase, stack.opsKey, stats);
  const temporalConnection = await Connection.connect({ address: stack.temporalAddress });
  cleanup.add(() => temporalConnection.close());
  const temporalClient = new Client({ connection: temporalConnection, namespace: 'default' });
  const pids = () => {
    const named: Record<string, number | undefined> = {
      api: stack.api.pid(),
      temporal: realTemporal?.process.pid ?? stack.temporalPid(),
      bench: process.pid,
    };
    for (const worker of stack.workers) named[worker.name] = worker.pid();
    return named;
  };
  return { realTemporal, stack, admin, stats, ops, temporalClient, pids };
}

async function bench(settings: Settings, log: (line: string) => void, cleanup: Cleanup): Promise<BenchReport> {
  const started = Date.now();
  const loadBefore = round1(os.loadavg()[0]!);
  log(
    `bench: levels ${settings.levels.join(', ')}, ${settings.seconds} s each, walletflow and baseline; session URL ${settings.sessionSeconds} s; ${settings.temporal}, ${settings.workers} worker(s)`,
  );
  const { realTemporal, stack, admin, stats, ops, temporalClient, pids } = await startBenchStack(
    settings,
    log,
    cleanup,
  );
  const wallet = createWalletClient({ ...sandboxWalletConfig(stack.sandbox), timeoutMs: 5000 });
  cleanup.add(() => wallet.close());

  const walletflowCodes = await createCodeSupply(admin, { users: 32, mobilePrefix: '+6391' });
  const baselineCodes = await createCodeSupply(admin, { users: 32, mobilePrefix: '+6392' });
  const leanCodes = await createCodeSupply(admin, { users: 32, mobilePrefix: '+6393' });
  // The lean floor: its own worker process on the same Temporal, PostgreSQL and sandbox.
  const leanWorker = await stack.startProcess(
    'lean-worker',
    'harness/lean-floor/lean-worker.ts',
    /lean floor worker polling/,
  );
  log('lean floor worker polling (harness/lean-floor/)');
  /** Codes for a level, from the rate so far: short of them, the level ends early (and says so). */
  const prepare = async (codes: CodeSupply, ratePerSecond: number, concurrency: number) => {
    const wanted = Math.min(200_000, Math.ceil(ratePerSecond * settings.seconds * 1.5) + 4 * concurrency);
    if (codes.left < wanted) await codes.fill(wanted - codes.left);
  };

  // Warm-up (not recorded): connections, JIT, the worker's workflow cache, the sandbox's routes.
  await prepare(walletflowCodes, 10, 4);
  await runWalletflowLevel(
    { ops, database: stack.database, codes: walletflowCodes, retries: () => stats.retries },
    { concurrency: 4, seconds: Math.min(3, settings.seconds) },
  );
  await prepare(leanCodes, 10, 4);
  await runLeanLevel(
    { client: temporalClient, database: stack.database, codes: leanCodes },
    { concurrency: 4, seconds: Math.min(3, settings.seconds) },
  );
  await prepare(baselineCodes, 200, 4);
  const warmBaseline = await runBaselineLevel({ wallet, codes: baselineCodes }, { concurrency: 4, seconds: 1 });
  log('warm-up done');

  let walletflowRate = 20;
  let leanRate = 20;
  // The baseline's rate so far is the warm-up's (at 4 in flight), not a guess of 1000/s: a guess
  // that high made thousands of codes a tiny bench never used.
  let baselineRate = Math.max(warmBaseline.perSecond, 50);
  let previousLevel = 1;
  const levels: BenchReport['levels'] = [];
  for (const concurrency of settings.levels) {
    // A closed loop's rate grows at most as its concurrency does: codes for that much (a cap of 4×
    // left a level of 32 after one of 1 short of codes once accepts stopped taking turns).
    const growth = Math.max(concurrency / previousLevel, 1);
    await prepare(walletflowCodes, walletflowRate * growth, concurrency);
    const walletflowUsage = sampleUsage(pids);
    const walletflow = await runWalletflowLevel(
      { ops, database: stack.database, codes: walletflowCodes, retries: () => stats.retries },
      { concurrency, seconds: settings.seconds },
    );
    const walletflowProcesses = walletflowUsage.stop();
    log(
      `c=${concurrency}: walletflow ${walletflow.perSecond} fundings/s, p50 ${walletflow.latencyMs.p50} ms, p99 ${walletflow.latencyMs.p99} ms${walletflow.failed ? `, ${walletflow.failed} failed` : ''}${walletflow.ranOutOfCodes ? ' (ran out of prepared codes)' : ''}`,
    );

    await prepare(leanCodes, leanRate * growth, concurrency);
    const leanUsage = sampleUsage(() => ({
      lean: leanWorker.pid(),
      temporal: realTemporal?.process.pid ?? stack.temporalPid(),
    }));
    const lean = await runLeanLevel(
      { client: temporalClient, database: stack.database, codes: leanCodes },
      { concurrency, seconds: settings.seconds },
    );
    const leanProcesses = leanUsage.stop();
    log(
      `c=${concurrency}: lean floor ${lean.perSecond} items/s, p50 ${lean.latencyMs.p50} ms, p99 ${lean.latencyMs.p99} ms${lean.failed ? `, ${lean.failed} failed` : ''}`,
    );

    await prepare(baselineCodes, baselineRate * growth, concurrency);
    const baselineUsage = sampleUsage(() => ({ bench: process.pid }));
    const baseline: LevelRun = await runBaselineLevel(
      { wallet, codes: baselineCodes },
      { concurrency, seconds: settings.seconds },
    );
    const baselineProcesses = baselineUsage.stop();
    log(
      `c=${concurrency}: baseline ${baseline.perSecond} create+execute/s, p50 ${baseline.latencyMs.p50} ms, p99 ${baseline.latencyMs.p99} ms${baseline.failed ? `, ${baseline.failed} failed` : ''}${baseline.ranOutOfCodes ? ' (ran out of prepared codes)' : ''}`,
    );

    const cpuMsPer = (processes: Record<string, ProcessUsage>, names: string[], completed: number) =>
      completed === 0
        ? 0
        : round1((names.reduce((sum, name) => sum + (processes[name]?.cpuSeconds ?? 0), 0) * 1000) / completed);
    const { sampleWorkflowIds, approvedIds, window, ...walletflowRun } = walletflow;
    const walletflowSplit = {
      apiAndWorkers: cpuMsPer(
        walletflowProcesses,
        ['api', ...stack.workers.map((worker) => worker.name)],
        walletflow.completed,
      ),
      temporal: cpuMsPer(walletflowProcesses, ['temporal'], walletflow.completed),
      byProcess: Object.fromEntries(
        ['api', ...stack.workers.map((worker) => worker.name), 'temporal'].map((name) => [
          name,
          cpuMsPer(walletflowProcesses, [name], walletflow.completed),
        ]),
      ),
    };
    const leanSplit = {
      apiAndWorkers: cpuMsPer(leanProcesses, ['lean'], lean.completed),
      temporal: cpuMsPer(leanProcesses, ['temporal'], lean.completed),
    };
    levels.push({
      concurrency,
      walletflow: {
        ...walletflowRun,
        processes: walletflowProcesses,
        cpuMsPerItem: cpuMsPer(
          walletflowProcesses,
          ['api', 'temporal', ...stack.workers.map((worker) => worker.name)],
          walletflow.completed,
        ),
        history: await historyShape(temporalClient, sampleWorkflowIds),
        historyPerFunding: await historyPerFunding(temporalClient, stack.database, approvedIds, window),
        cpuSplit: walletflowSplit,
      },
      lean: {
        ...lean,
        processes: leanProcesses,
        cpuMsPerItem: cpuMsPer(leanProcesses, ['lean', 'temporal'], lean.completed),
        cpuSplit: leanSplit,
      },
      overheadRatio:
        leanSplit.apiAndWorkers > 0
          ? Math.round((walletflowSplit.apiAndWorkers / leanSplit.apiAndWorkers) * 100) / 100
          : 0,
      baseline: {
        ...baseline,
        processes: baselineProcesses,
        cpuMsPerItem: cpuMsPer(baselineProcesses, ['bench'], baseline.completed),
      },
      ratio: baseline.perSecond > 0 ? Math.round((walletflow.perSecond / baseline.perSecond) * 10_000) / 10_000 : 0,
    });
    const measured = levels.at(-1)!.walletflow;
    log(
      `c=${concurrency}: walletflow ${measured.cpuMsPerItem} ms CPU per funding (${Object.entries(
        walletflowSplit.byProcess,
      )
        .map(([name, ms]) => `${name} ${ms}`)
        .join(
          ', ',
        )}), ${measured.historyPerFunding?.events} history events per funding, ${measured.historyPerFunding?.laneCarried} of ${walletflow.completed} carried by lanes; lean floor ${levels.at(-1)!.lean?.cpuMsPerItem} ms CPU per item`,
    );
    leanRate = Math.max(lean.perSecond, 5);
    walletflowRate = Math.max(walletflow.perSecond, 5);
    baselineRate = Math.max(baseline.perSecond, 50);
    previousLevel = concurrency;
  }

  let flat: BenchReport['flat'];
  if (settings.preload) {
    await prepare(walletflowCodes, flatCodesWanted(settings.seconds) / settings.seconds, 1);
    flat = await runFlatWithData(
      { ops, database: stack.database, databaseUrl: stack.databaseUrl, codes: walletflowCodes, log },
      { seconds: settings.seconds, preload: settings.preload },
    );
  }

  /**
   * Resident memory once a load is over: a quiet moment lets V8 give back the heap it grew under
   * load (the peak during each level is in that level's figures).
   */
  const workerMemoryAfterQuiet = async () => {
    await new Promise((resolve) => setTimeout(resolve, settings.quietSeconds * 1000));
    const rssByWorker: Record<string, number> = {};
    for (const worker of stack.workers) {
      const pid = worker.pid();
      const rss = pid === undefined ? null : rssMiBOf(pid);
      if (rss !== null) rssByWorker[worker.name] = Math.round(rss);
    }
    return rssByWorker;
  };
  // After the fundings (the levels, and the preload's measurement): the worker's own memory. The
  // session URL's run comes after: it leaves thousands of onboardings for the worker to run.
  const workerRssMiBAfter = await workerMemoryAfterQuiet();

  // The burst (harness/bench-burst.ts): after the levels' memory reading, before the session URL's
  // run; the fundings it stores are run to their end first, so the storm's figures are the storm's
  // alone.
  let burst: BenchReport['burst'];
  if (settings.burst > 0) {
    burst = await runBurst({ apiBase: stack.apiBase, opsKey: stack.opsKey, admin, requests: settings.burst });
    log(
      `burst: ${burst.requests} POST /ops/fundings at once across ${burst.recipients} recipients: first wave ${JSON.stringify(burst.firstWave)}, ` +
        `p50 ${burst.latencyMs.p50} ms, p99 ${burst.latencyMs.p99} ms, ${burst.serverErrors} 5xx other than a load refusal; ` +
        `all ${burst.accepted} accepted in ${burst.seconds} s (${burst.acceptedPerSecond}/s, ${burst.retryRounds} retry round(s))`,
    );
    const left = await waitForFundingsFinal(stack.database, 180_000);
    log(`the burst's fundings: ${left === 0 ? 'all final' : `${left} not final after 180 s`}`);
  }
  let session: BenchReport['session'] = null;
  if (settings.sessionSeconds > 0) {
    const user = await admin.createUser({ mobile: '+639300000001', kycLevel: 'KYC1', balance: '0.00' });
    const tokens = await admin.embeddedTokens(user.userId);
    const usage = sampleUsage(pids);
    const load = runSessionLoad({
      sessionUrl: `${stack.apiBase}/embedded/session`,
      tokens,
      connections: settings.sessionConnections,
      seconds: settings.sessionSeconds,
    });
    // Users who open the page during the storm: 4 a second, from the session URL call to the money
    // page.
    const landers = runLanders({ apiBase: stack.apiBase, tokens, everyMs: 250, stop: load });
    const run = await load;
    const landed = await landers;
    session = { ...run, processes: usage.stop(), landers: landed };
    log(
      `session URL: ${run.requestsPerSecond} requests/s, p50 ${run.latencyMs.p50} ms, p99 ${run.latencyMs.p99} ms${run.non2xx ? `, ${run.non2xx} non-2xx` : ''}`,
    );
    log(
      `users who opened the page during it: ${landed.users}, session URL to money page p50 ${landed.toMoneyPageMs.p50} ms, p99 ${landed.toMoneyPageMs.p99} ms, max ${landed.toMoneyPageMs.max} ms${landed.notReached ? `, ${landed.notReached} not reached` : ''}`,
    );
  }

  const workerRssMiBAfterSession = settings.sessionSeconds > 0 ? await workerMemoryAfterQuiet() : undefined;
  // At rest: once the worker has onboarded every session the run stored (none PENDING), the quiet once more;
  // thousands take it minutes, so the wait is bounded and its onboarding rate reported either way.
  let atRest: Pick<BenchReport, 'workerRssMiBAtRest' | 'onboarding'> = {};
  if (session) {
    const onboarding = await waitForOnboardings(stack.database);
    log(
      `onboarding after the session URL's run: ${onboarding.onboardedPerSecond}/s over ${onboarding.seconds} s, ${onboarding.pending} still pending`,
    );
    atRest = {
      onboarding,
      ...(onboarding.pending === 0 ? { workerRssMiBAtRest: await workerMemoryAfterQuiet() } : {}),
    };
  }
  const cpus = os.cpus();
  return benchReportSchema.parse({
    ...(burst ? { burst } : {}),
    workerRssMiBAfter,
    ...(workerRssMiBAfterSession ? { workerRssMiBAfterSession } : {}),
    ...atRest,
    loadAverage: { before: loadBefore, after: round1(os.loadavg()[0]!) },
    name: settings.name,
    date: new Date(started).toISOString(),
    machine: {
      cpus: cpus.length,
      cpuModel: cpus[0]?.model.trim() ?? 'unknown',
      memoryGiB: round1(os.totalmem() / 2 ** 30),
      node: process.version,
      platform: `${os.platform()} ${os.release()}`,
    },
    temporal: settings.temporal,
    workers: settings.workers,
    options: {
      levels: settings.levels,
      seconds: settings.seconds,
      sessionSeconds: settings.sessionSeconds,
      sessionConnections: settings.sessionConnections,
      quietSeconds: settings.quietSeconds,
      fundingLanes: settings.fundingLanes,
    },
    code: settings.fromSource ? 'source (tsx)' : 'compiled',
    levels,
    session,
    durationSeconds: Math.round((Date.now() - started) / 1000),
    ...(flat ? { flat } : {}),
  });
}

export interface BatchBenchReport {
  name: string;
  date: string;
  machine: { cpus: number; cpuModel: string; memoryGiB: number; node: string };
  temporal: Settings['temporal'];
  workers: number;
  maxInFlight: number;
  /** Single fundings through POST /ops/fundings at 32 in flight, measured in the same run. */
  single: { concurrency: number; perSecond: number; cpuMsPerItem: number; failed: number; workerPeakRssMiB: number };
  batch: BatchBenchRun;
  /** The batch's items per second over the single fundings' rate. */
  ratio: number;
  durationSeconds: number;
}

/** Single fundings in flight the batch is compared with: the batch's own BATCH_MAX_IN_FLIGHT default. */
const SINGLE_CONCURRENCY = 32;

/**
 * `--batch N`: single fundings at 32 in flight for --seconds, then one batch of N items
 * (harness/bench-batch.ts), both after a warm-up, on the same stack.
 */
async function benchBatch(
  settings: Settings,
  log: (line: string) => void,
  cleanup: Cleanup,
): Promise<BatchBenchReport> {
  const started = Date.now();
  log(
    `bench --batch ${settings.batch}: single fundings at ${SINGLE_CONCURRENCY} in flight for ${settings.seconds} s, then one batch of ${settings.batch}; ${settings.temporal}, ${settings.workers} worker(s)`,
  );
  // The bench's batches wait for the second key (harness/local-stack.ts approverKey) like a real one.
  const { stack, admin, stats, ops, temporalClient, pids } = await startBenchStack(settings, log, cleanup, {
    BATCH_APPROVAL_THRESHOLD: '100.00',
  });
  const singleCodes = await createCodeSupply(admin, { users: 32, mobilePrefix: '+6391' });
  const batchCodes = await createCodeSupply(admin, { users: 100, mobilePrefix: '+6395' });
  const walletflow = { ops, database: stack.database, codes: singleCodes, retries: () => stats.retries };
  const batchDeps = {
    apiBase: stack.apiBase,
    opsKey: stack.opsKey,
    approverKey: stack.approverKey,
    codes: batchCodes,
    temporal: temporalClient,
    pids: () => {
      const { bench: _bench, ...measured } = pids();
      return measured;
    },
    workerPids: () => stack.workers.map((worker) => worker.pid()).filter((pid): pid is number => pid !== undefined),
    executedTwice: async () => (await admin.ledger()).transfers.filter((transfer) => transfer.executions > 1).length,
    log,
  };

  // Warm-up (not recorded): single fundings, then a small batch (the runner's code paths, JIT).
  await singleCodes.fill(200);
  await runWalletflowLevel(walletflow, { concurrency: 4, seconds: 3 });
  await runBatch({ ...batchDeps, log: () => undefined }, 200);
  log('warm-up done (single fundings, a batch of 200)');

  await singleCodes.fill(Math.ceil(80 * settings.seconds) + 4 * SINGLE_CONCURRENCY);
  const singleUsage = sampleUsage(pids);
  const single = await runWalletflowLevel(walletflow, { concurrency: SINGLE_CONCURRENCY, seconds: settings.seconds });
  const singleProcesses = singleUsage.stop();
  const measured = ['api', 'temporal', ...stack.workers.map((worker) => worker.name)];
  const singleCpuMs =
    single.completed === 0
      ? 0
      : round1(
          (measured.reduce((sum, name) => sum + (singleProcesses[name]?.cpuSeconds ?? 0), 0) * 1000) / single.completed,
        );
  log(
    `single fundings at ${SINGLE_CONCURRENCY} in flight: ${single.perSecond}/s, p99 ${single.latencyMs.p99} ms, ${singleCpuMs} ms CPU each${single.failed ? `, ${single.failed} failed` : ''}`,
  );

  log(`making ${settings.batch} cash-in codes for the batch...`);
  await batchCodes.fill(settings.batch);
  const batch = await runBatch(batchDeps, settings.batch);
  log(
    `batch: ${batch.items} items in ${batch.seconds} s, ${batch.itemsPerSecond}/s, ${batch.cpuMsPerItem} ms CPU each, worker RSS peak ${batch.workerRssMiB.peak} MiB, largest run ${batch.history.largestRunEvents} events over ${batch.history.runs} runs`,
  );
  const cpus = os.cpus();
  return {
    name: settings.name,
    date: new Date(started).toISOString(),
    machine: {
      cpus: cpus.length,
      cpuModel: cpus[0]?.model.trim() ?? 'unknown',
      memoryGiB: round1(os.totalmem() / 2 ** 30),
      node: process.version,
    },
    temporal: settings.temporal,
    workers: settings.workers,
    maxInFlight: 32,
    single: {
      concurrency: SINGLE_CONCURRENCY,
      perSecond: single.perSecond,
      cpuMsPerItem: singleCpuMs,
      failed: single.failed,
      workerPeakRssMiB: Math.max(0, ...stack.workers.map((worker) => singleProcesses[worker.name]?.peakRssMiB ?? 0)),
    },
    batch,
    ratio: single.perSecond > 0 ? round1(batch.itemsPerSecond / single.perSecond) : 0,
    durationSeconds: Math.round((Date.now() - started) / 1000),
  };
}

/**
 * `--token-batch N` (docs/benchmarks.md, token refresh at volume): a batch of N CODE items (the
 * baseline) and then a batch of N TOKEN items to N links whose access tokens walletflow believes
 * expired (every item's pass refreshes its link), each with a single CODE funding started every
 * second beside it; after a warm-up of both kinds. The TOKEN batch's links are checked afterwards:
 * each refreshed once at the wallet, none refused, all ACTIVE.
 */
async function benchTokenBatch(
  settings: Settings,
  log: (line: string) => void,
  cleanup: Cleanup,
): Promise<TokenBatchBenchReport> {
  const started = Date.now();
  const items = settings.tokenBatch;
  log(
    `bench --token-batch ${items}: a CODE batch and a TOKEN batch (every access token expired) of ${items} each, a single funding every second beside each; ${settings.temporal}, ${settings.workers} worker(s)`,
  );
  const { stack, admin, stats, ops, temporalClient, pids } = await startBenchStack(settings, log, cleanup, {
    BATCH_APPROVAL_THRESHOLD: '100.00',
  });
  const singleCodes = await createCodeSupply(admin, { users: 8, mobilePrefix: '+6391' });
  const batchCodes = await createCodeSupply(admin, { users: 100, mobilePrefix: '+6395' });
  const batchDeps = {
    apiBase: stack.apiBase,
    opsKey: stack.opsKey,
    approverKey: stack.approverKey,
    codes: batchCodes,
    temporal: temporalClient,
    pids: () => {
      const { bench: _bench, ...measured } = pids();
      return measured;
    },
    workerPids: () => stack.workers.map((worker) => worker.pid()).filter((pid): pid is number => pid !== undefined),
    executedTwice: async () => (await admin.ledger()).transfers.filter((transfer) => transfer.executions > 1).length,
    log,
  };
  const linkDeps = { admin, database: stack.database, tokenEncryptionKey: stack.tokenEncryptionKey };
  log(`linking ${items + 50} wallets whose access tokens walletflow believes expired...`);
  const warmLinks = await createExpiredLinks(linkDeps, { count: 50, mobilePrefix: '+6396' });
  const links = await createExpiredLinks(linkDeps, { count: items, mobilePrefix: '+6397' });
  await batchCodes.fill(items + 50);
  await singleCodes.fill(Math.ceil(items / 10) + 64);

  // Warm-up (not recorded): a small batch of each kind (the runner's code paths, JIT, the vault's pools).
  await runBatch({ ...batchDeps, log: () => undefined }, 50);
  await runBatch(
    { ...batchDeps, log: () => undefined },
    50,
    warmLinks.map((link) => ({ type: 'TOKEN', value: link.linkId })),
  );
  log('warm-up done (a CODE batch and a TOKEN batch of 50)');

  const besideCode = startSinglesBeside({ ops, database: stack.database, codes: singleCodes });
  const codeBatch = await runBatch(batchDeps, items);
  const codeSingles = await besideCode.stop();
  log(
    `CODE batch: ${codeBatch.itemsPerSecond} items/s; single fundings beside it: ${codeSingles.started}, p99 ${codeSingles.latencyMs.p99} ms`,
  );

  const besideToken = startSinglesBeside({ ops, database: stack.database, codes: singleCodes });
  const tokenBatch = await runBatch(
    batchDeps,
    items,
    links.map((link) => ({ type: 'TOKEN', value: link.linkId })),
  );
  const tokenSingles = await besideToken.stop();
  log(
    `TOKEN batch: ${tokenBatch.itemsPerSecond} items/s; single fundings beside it: ${tokenSingles.started}, p99 ${tokenSingles.latencyMs.p99} ms`,
  );
  const tokenLinks = await checkTokenBatchLinks({ admin, database: stack.database }, links);
  if (stats.retries > 0) log(`the ops client repeated ${stats.retries} request(s) (503/429 or no answer)`);

  const cpus = os.cpus();
  return {
    name: settings.name,
    date: new Date(started).toISOString(),
    machine: {
      cpus: cpus.length,
      cpuModel: cpus[0]?.model.trim() ?? 'unknown',
      memoryGiB: round1(os.totalmem() / 2 ** 30),
      node: process.version,
    },
    temporal: settings.temporal,
    workers: settings.workers,
    items,
    code: { batch: codeBatch, singles: codeSingles },
    token: { batch: tokenBatch, singles: tokenSingles, links: tokenLinks },
    ratio:
      codeBatch.itemsPerSecond > 0 ? Math.round((tokenBatch.itemsPerSecond / codeBatch.itemsPerSecond) * 100) / 100 : 0,
    durationSeconds: Math.round((Date.now() - started) / 1000),
  };
}

function formatBatchBench(report: BatchBenchReport): string {
  const { batch, single } = report;
  return [
    `                         items/s   CPU ms/item (api + workers + temporal)   worker RSS peak`,
    `single fundings at ${String(single.concurrency).padEnd(3)}  ${String(single.perSecond).padStart(7)}   ${String(single.cpuMsPerItem).padStart(6)}                                   ${single.workerPeakRssMiB} MiB`,
    `batch of ${String(batch.items).padEnd(13)}  ${String(batch.itemsPerSecond).padStart(7)}   ${String(batch.cpuMsPerItem).padStart(6)} (${batch.cpuSplit.api} + ${batch.cpuSplit.workers} + ${batch.cpuSplit.temporal})             ${batch.workerRssMiB.peak} MiB`,
    `ratio ${report.ratio}x; batch created in ${batch.createMs} ms, ran ${batch.seconds} s; history: ${batch.history.runs} runs, largest ${batch.history.largestRunEvents} events, ${batch.history.totalEvents} in all; executed twice: ${batch.executedTwice}`,
    `counts: ${JSON.stringify(batch.counts)}`,
  ].join('\n');
}

export interface BatchStoreReport {
  name: string;
  date: string;
  machine: { cpus: number; cpuModel: string; memoryGiB: number; node: string };
  /** A warm-up store of 1,000 items first (not recorded), then the measured ones. */
  store: BatchStoreRun;
  durationSeconds: number;
}

/**
 * `--batch-store N`: the store of one batch of N items alone (harness/bench-batch.ts storeBatch),
 * then its cancel, with single treasury fundings sent alongside; nothing runs (the batch waits for
 * approval, the bench's threshold is under its total).
 */
async function benchBatchStore(
  settings: Settings,
  log: (line: string) => void,
  cleanup: Cleanup,
): Promise<BatchStoreReport> {
  const started = Date.now();
  log(
    `bench --batch-store ${settings.batchStore}: one batch stored and cancelled, single fundings alongside; ${settings.temporal}`,
  );
  const { stack, admin } = await startBenchStack(settings, log, cleanup, { BATCH_APPROVAL_THRESHOLD: '1.00' });
  const batchCodes = await createCodeSupply(admin, { users: 100, mobilePrefix: '+6395' });
  const singleCodes = await createCodeSupply(admin, { users: 32, mobilePrefix: '+6391' });
  const deps = {
    apiBase: stack.apiBase,
    opsKey: stack.opsKey,
    codes: batchCodes,
    singleCodes,
    apiPid: () => stack.api.pid(),
    log,
  };
  await singleCodes.fill(2000);
  await storeBatch({ ...deps, log: () => undefined }, 1000);
  log('warm-up done (batches of 1,000 stored and cancelled)');
  log(`making ${settings.batchStore} cash-in codes for the batch...`);
  await batchCodes.fill(settings.batchStore);
  await singleCodes.fill(Math.max(0, 6000 - singleCodes.left));
  const store = await storeBatch(deps, settings.batchStore);
  const cpus = os.cpus();
  return {
    name: settings.name,
    date: new Date(started).toISOString(),
    machine: {
      cpus: cpus.length,
      cpuModel: cpus[0]?.model.trim() ?? 'unknown',
      memoryGiB: round1(os.totalmem() / 2 ** 30),
      node: process.version,
    },
    store,
    durationSeconds: Math.round((Date.now() - started) / 1000),
  };
}

function formatBatchStore(report: BatchStoreReport): string {
  const { store } = report;
  const phases = (name: string, figures: BatchStoreRun['alone']) =>
    `${name}: stored in ${figures.createMs} ms, cancelled in ${figures.cancelMs} ms; API resident memory ${figures.apiRssMiB.before} MiB before, peak ${figures.apiRssMiB.createPeak} MiB during the store, ${figures.apiRssMiB.cancelPeak} MiB during the cancel`;
  return [
    `batch of ${store.items} items (${(store.csvBytes / 2 ** 20).toFixed(1)} MiB of CSV)`,
    phases('alone', store.alone),
    phases('beside single fundings', store.alongside),
    ...(['create', 'cancel'] as const).map((phase) => {
      const singles = store.alongside.singles[phase];
      return `single fundings sent during the ${phase === 'create' ? 'store' : 'cancel'}: ${singles.sent}, ${JSON.stringify(singles.statuses)}, longest ${singles.maxMs} ms, p99 ${singles.p99Ms} ms`;
    }),
  ].join('\n');
}

/**
 * `--console`: the console's pages (harness/bench-console.ts) on a small database, then with the
 * preload (--preload-fundings, --preload-payments), signed in with the stack's ops key.
 */
async function benchConsole(
  settings: Settings,
  run: NonNullable<Settings['console']>,
  log: (line: string) => void,
  cleanup: Cleanup,
): Promise<ConsoleBenchReport> {
  log(
    `bench --console: ${run.requests} requests a page; ${run.fundings} fundings and ${run.payments} payments preloaded; a batch of ${run.batchItems} items`,
  );
  const { stack } = await startBenchStack(settings, log, cleanup);
  return runConsoleBench(
    { apiBase: stack.apiBase, opsKey: stack.opsKey, databaseUrl: stack.databaseUrl, log },
    {
      preload: { fundings: run.fundings, payments: run.payments },
      batchItems: run.batchItems,
      requests: run.requests,
      name: settings.name,
    },
  );
}

export interface SettlementBenchReport {
  name: string;
  date: string;
  machine: { cpus: number; cpuModel: string; memoryGiB: number; node: string };
  temporal: Settings['temporal'];
  workers: number;
  /** SETTLEMENT_MAX_IN_FLIGHT: the run's retrieves at once, and the baseline's. */
  maxInFlight: number;
  loadAverage: { before: number; after: number };
  run: SettlementBenchRun;
  /** The aims of docs/benchmarks.md, and whether the run met them. */
  targets: Array<{ what: string; target: string; measured: string; met: boolean }>;
  durationSeconds: number;
}

/** The settlement's retrieves at once, as the API starts runs by default. */
const SETTLEMENT_MAX_IN_FLIGHT = 32;

/**
 * `--settlement N`: a past day (the day before yesterday in SETTLEMENT_TZ, a whole day) of N
 * approved fundings settled by walletflow beside single fundings, against the wallet client alone
 * retrieving the same transfers, on the bench's stack (harness/bench-settlement.ts).
 */
async function benchSettlement(
  settings: Settings,
  log: (line: string) => void,
  cleanup: Cleanup,
): Promise<SettlementBenchReport> {
  const started = Date.now();
  const loadBefore = round1(os.loadavg()[0]!);
  log(
    `bench --settlement ${settings.settlement}: a day of ${settings.settlement} approved fundings settled beside single fundings, against the wallet client alone; ${settings.temporal}, ${settings.workers} worker(s)`,
  );
  const { stack, admin, temporalClient, pids } = await startBenchStack(settings, log, cleanup, {
    SETTLEMENT_MAX_IN_FLIGHT: String(SETTLEMENT_MAX_IN_FLIGHT),
  });
  const wallet = createWalletClient({ ...sandboxWalletConfig(stack.sandbox), timeoutMs: 5000 });
  cleanup.add(() => wallet.close());
  const codes = await createCodeSupply(admin, { users: 8, mobilePrefix: '+6391' });
  await codes.fill(200);
  const timeZone = 'Asia/Manila';
  const day = new Intl.DateTimeFormat('en-CA', { timeZone }).format(new Date(Date.now() - 2 * 86_400_000));
  const run = await runSettlementBench(
    {
      apiBase: stack.apiBase,
      opsKey: stack.opsKey,
      databaseUrl: stack.databaseUrl,
      database: stack.database,
      admin,
      wallet,
      temporal: temporalClient,
      codes,
      pids: () => {
        const { bench: _bench, ...measured } = pids();
        return measured;
      },
      apiPid: () => stack.api.pid(),
      workerPids: () => stack.workers.map((worker) => worker.pid()).filter((pid): pid is number => pid !== undefined),
      log,
    },
    { items: settings.settlement, date: day, timeZone, maxInFlight: SETTLEMENT_MAX_IN_FLIGHT },
  );
  const cpus = os.cpus();
  const { settlement, singles } = run;
  const accepted = singles.statuses['202'] ?? 0;
  return {
    name: settings.name,
    date: new Date(started).toISOString(),
    machine: {
      cpus: cpus.length,
      cpuModel: cpus[0]?.model.trim() ?? 'unknown',
      memoryGiB: round1(os.totalmem() / 2 ** 30),
      node: process.version,
    },
    temporal: settings.temporal,
    workers: settings.workers,
    maxInFlight: SETTLEMENT_MAX_IN_FLIGHT,
    loadAverage: { before: loadBefore, after: round1(os.loadavg()[0]!) },
    run,
    targets: [
      {
        what: 'the day settled',
        target: '< 600 s',
        measured: `${settlement.seconds} s`,
        met: settlement.seconds < 600,
      },
      {
        what: 'every line matched',
        target: `${run.items}`,
        measured: String(settlement.counts.matched),
        met: settlement.counts.matched === run.items && settlement.counts.count === run.items,
      },
      {
        what: 'each transfer retrieved once',
        target: `${run.items}`,
        measured: String(settlement.retrieves),
        met: settlement.retrieves === run.items,
      },
      {
        what: 'API resident memory, peak (the run and the CSV)',
        target: '< 300 MiB',
        measured: `${Math.max(settlement.apiPeakRssMiB, run.csv.apiPeakRssMiB)} MiB`,
        met: Math.max(settlement.apiPeakRssMiB, run.csv.apiPeakRssMiB) < 300,
      },
      {
        what: 'worker resident memory, peak',
        target: '< 300 MiB',
        measured: `${settlement.workerPeakRssMiB} MiB`,
        met: settlement.workerPeakRssMiB < 300,
      },
      {
        what: 'single fundings beside it accepted (202)',
        target: `${singles.sent}`,
        measured: String(accepted),
        met: accepted === singles.sent && singles.notFinal === 0,
      },
    ],
    durationSeconds: Math.round((Date.now() - started) / 1000),
  };
}

function formatSettlementBench(report: SettlementBenchReport): string {
  const { run } = report;
  const { settlement, baseline, singles, csv } = run;
  return [
    `a day of ${run.items} approved fundings (${run.date}), ${report.maxInFlight} retrieves at once`,
    `                                     seconds   per second   CPU ms/item   API RSS peak   worker RSS peak`,
    `walletflow: GET /ops/settlements     ${String(settlement.seconds).padStart(7)}   ${String(settlement.itemsPerSecond).padStart(10)}   ${String(settlement.cpuMsPerItem).padStart(11)}   ${String(settlement.apiPeakRssMiB).padStart(8)} MiB   ${String(settlement.workerPeakRssMiB).padStart(11)} MiB`,
    `baseline: the wallet client alone    ${String(baseline.seconds).padStart(7)}   ${String(baseline.perSecond).padStart(10)}`,
    `ratio ${run.ratio}; first GET answered in ${settlement.firstAnswerMs} ms, ${settlement.progressAnswers} progress answers (202); ${settlement.retrieves} retrieves; history ${settlement.history.runs} runs, largest ${settlement.history.largestRunEvents} events`,
    `the CSV: ${csv.lines} lines, ${round1(csv.bytes / 2 ** 20)} MiB in ${csv.seconds} s, API RSS peak ${csv.apiPeakRssMiB} MiB`,
    `single fundings beside it: ${singles.sent} sent, ${JSON.stringify(singles.statuses)}, slowest answer ${singles.maxMs} ms (p99 ${singles.p99Ms} ms); ${singles.approved} APPROVED, ${singles.notFinal} not final`,
    `load average ${report.loadAverage.before} → ${report.loadAverage.after}; planted in ${run.plantSeconds} s`,
    '',
    ...report.targets.map(
      (target) => `${target.met ? 'met ' : 'MISS'}  ${target.what}: ${target.measured} (target ${target.target})`,
    ),
  ].join('\n');
}
