// A whole walletflow stack of its own in a temp state dir, for `walletflow soak` and `walletflow
// bench`: PostgreSQL (embedded, or a fresh database on DATABASE_URL's server), a Temporal dev server
// on a SQLite file (so it survives restarts) or a Temporal server the caller started, the sandbox
// in-process, and the API and worker(s) as supervised child processes that chaos can kill.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createWriteStream, type WriteStream } from 'node:fs';
import { copyFile, mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { environmentSchema, secretVariables } from '../lib/config.ts';
import type { Cleanup } from './cleanup.ts';
import { createWorkerDatabase, dropDatabase, ensureDatabaseExists, type Database } from '../lib/database.ts';
import { startEmbeddedPostgres, type RunningPostgres } from '../stack/embedded-postgres.ts';
import { findFreePort, holdFreePort, type HeldPort } from '../stack/ports.ts';
import { partnerEndpoints, sandboxWalletVariables } from '../stack/sandbox-wallet.ts';
import { workflowBundleFile } from './workflow-bundle-file.ts';
import {
  resolveTemporalCli,
  startTemporalDevServer,
  startTemporalDevServerOnFreePort,
  type RunningTemporal,
} from '../stack/temporal-dev-server.ts';
import { applyMigrations } from '../prisma/schema-engine.ts';
import { startSandbox, type RunningSandbox } from '../sandbox/server.ts';
import { entryArgs, projectRoot } from '../lib/project-root.ts';
import { apiEnvironment, handOverSocket, nativeMemoryEnvironment, serviceEnvironment } from '../stack/child-process.ts';

const root = projectRoot;

/** A child process that is restarted when it dies on its own (counted), and stopped on request. */
export interface SupervisedProcess {
  readonly name: string;
  start(): void;
  /** The running process's id (the node process itself), if it runs. */
  pid(): number | undefined;
  /** Signals the process group and waits for the exit; SIGTERM escalates to SIGKILL after graceMs. */
  stop(signal: NodeJS.Signals, graceMs?: number): Promise<void>;
  /** Exits nobody asked for (each was followed by a restart). */
  readonly unplannedExits: number;
  /** The last lines of its output. */
  tail(): string;
  /** Resolves when its output (since the last start) matches; rejects after timeoutMs. */
  waitForOutput(pattern: RegExp, timeoutMs: number): Promise<void>;
}

export interface LocalStack {
  stateDir: string;
  /** Where the stack's Temporal frontend listens (its own dev server or the caller's server). */
  temporalAddress: string;
  logDir: string;
  databaseUrl: string;
  database: Database;
  apiBase: string;
  opsKey: string;
  /** A second key, named `checker`, with the read and approve scopes: a batch's second pair of eyes. */
  approverKey: string;
  /**
   * TOKEN_ENCRYPTION_KEY of the API and workers: links stored from outside (harness/expired-links.ts) are sealed with
   * it.
   */
  tokenEncryptionKey: Buffer;
  sandbox: RunningSandbox;
  api: SupervisedProcess;
  /** The first of `workers`. */
  worker: SupervisedProcess;
  workers: SupervisedProcess[];
  /** Waits until the API answers HTTP (any status). */
  apiListening(timeoutMs?: number): Promise<void>;
  /** Stops the Temporal dev server and starts it again on the same port and SQLite file (dev server only). */
  restartTemporal(downMs: number): Promise<void>;
  temporalTail(): string;
  /** The Temporal dev server's process id; undefined for a Temporal server the caller runs. */
  temporalPid(): number | undefined;
  /**
   * Starts one more supervised child process (an entry under the project, e.g. the bench's lean
   * floor worker) with the stack's environment, stopped with the stack; resolves once its output
   * matches `ready`.
   */
  startProcess(name: string, entry: string, ready: RegExp): Promise<SupervisedProcess>;
}

/**
 * The stack's database as the soak's and the bench's drivers use it (links stored as onboarding
 * stores them, the evidence read at the end): its transactions wait in line as the worker's do
 * (lib/database.ts createWorkerDatabase). On a bare pool, a driver's burst on a busy machine failed
 * inside Prisma after its 2 s wait for a connection (P2028), and the soak reported a batch it
 * never sent.
 */
export function openStackDatabase(databaseUrl: string): Database {
  return createWorkerDatabase(databaseUrl).database;
}

export interface LocalStackOptions {
  /** Names the temp dir and the fresh database. */
  purpose: 'soak' | 'bench';
  /**
   * A Temporal server the caller started (namespace and search attributes ready); default: a dev server of the stack's
   * own.
   */
  temporal?: { address: string; namespace: string };
  /** Worker processes (default 1). */
  workers?: number;
  /** Settings on top of the stack's own (e.g. LOG_LEVEL, limits). */
  env?: NodeJS.ProcessEnv;
  /** Where the process logs go; default: inside the state dir (removed with it). */
  logDir?: string;
  /**
   * Compiled JavaScript to run the API and workers from (harness/compiled-code.ts), as production
   * runs them; absent: as this code runs (tsx from the sources, or dist/).
   */
  compiledCodeDir?: string;
  log: (line: string) => void;
  /** Everything started is registered here; the caller runs it (also on failure and signals). */
  cleanup: Cleanup;
}

/** The environment without any walletflow setting of the caller's shell: the stack sets them all. */
function cleanEnvironment(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const name of Object.keys(environmentSchema.shape)) delete env[name];
  for (const name of secretVariables) delete env[`${name}_FILE`];
  return env;
}

/**
 * A child process in a process group of its own, started again when it exits unasked. Its stop is
 * registered with `cleanup` (SIGTERM, SIGKILL after 10 s), and so is leaving without it: its group
 * is killed at once, as no signal of the terminal's reaches it (stack/own-session.ts).
 */
export function supervise(
  name: string,
  entry: string | string[],
  options: {
    env: NodeJS.ProcessEnv;
    logFile: WriteStream;
    log: (line: string) => void;
    closing: () => boolean;
    cleanup: Cleanup;
    /**
     * A listening socket for the first start (the API's, api/main.ts LISTEN_FD), closed here once handed over: this
     * process never accepts on it. A start after an exit binds the port itself (PORT in `env`).
     */
    socket?: HeldPort;
  },
): SupervisedProcess {
  const { env, logFile, log, closing, cleanup } = options;
  let socket = options.socket;
  cleanup.onLeave(() => void socket?.close());
  let child: ChildProcess | undefined;
  let wanted = false;
  let unplannedExits = 0;
  let restartTimer: NodeJS.Timeout | undefined;
  let recent = '';
  let sinceStart = '';
  const record = (text: string) => {
    logFile.write(text);
    recent = (recent + text).slice(-8000);
    sinceStart = (sinceStart + text).slice(-64_000);
  };

  const start = () => {
    // Once the stack is shutting down, nothing starts again (a chaos action may still be finishing).
    if (closing()) return;
    wanted = true;
    clearTimeout(restartTimer);
    // WALLETFLOW_PROFILE_DIR: each API and worker process writes a V8 CPU profile there when it
    // exits (open it in Chrome DevTools' Performance panel), to see where a funding's time goes.
    const profileDir = process.env.WALLETFLOW_PROFILE_DIR;
    const profiling = profileDir ? ['--cpu-prof', `--cpu-prof-dir=${path.join(profileDir, name)}`] : [];
    const handedOver = socket ? handOverSocket(socket) : undefined;
    const current = spawn(process.execPath, [...profiling, ...(typeof entry === 'string' ? entryArgs(entry) : entry)], {
      cwd: root,
      env: { ...env, ...handedOver?.env },
      detached: true,
      stdio: handedOver?.stdio ?? ['ignore', 'pipe', 'pipe'],
    });
    // The child holds its own copy: this process's is closed before its event loop could accept on it.
    void socket?.close();
    socket = undefined;
    child = current;
    sinceStart = '';
    record(`\n--- ${new Date().toISOString()} ${name} started (pid ${current.pid}) ---\n`);
    current.stdout?.on('data', (chunk: Buffer) => record(chunk.toString()));
    current.stderr?.on('data', (chunk: Buffer) => record(chunk.toString()));
    current.once('exit', (code, signal) => {
      record(`--- ${new Date().toISOString()} ${name} exited (code ${code}, signal ${signal}) ---\n`);
      if (child !== current || !wanted) return;
      // Nobody asked: count it and start it again (e.g. the worker could not reach Temporal).
      unplannedExits += 1;
      log(`${name} exited on its own (code ${code}, signal ${signal}); restarting`);
      restartTimer = setTimeout(() => {
        if (wanted && child === current) start();
      }, 1000);
    });
  };

  const stop = async (signal: NodeJS.Signals, graceMs = 15_000) => {
    wanted = false;
    clearTimeout(restartTimer);
    const current = child;
    if (!current || current.pid === undefined || current.exitCode !== null || current.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => current.once('exit', () => resolve()));
    const signalGroup = (which: NodeJS.Signals) => {
      try {
        process.kill(-current.pid!, which);
      } catch {
        // already gone
      }
    };
    signalGroup(signal);
    const timer = signal === 'SIGKILL' ? undefined : setTimeout(() => signalGroup('SIGKILL'), graceMs);
    await exited;
    clearTimeout(timer);
  };
  cleanup.add(() => stop('SIGTERM', 10_000));
  cleanup.onLeave(() => {
    wanted = false;
    clearTimeout(restartTimer);
    if (child?.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
    try {
      process.kill(-child.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  });

  return {
    name,
    start,
    pid: () => (child && child.exitCode === null && child.signalCode === null ? child.pid : undefined),
    stop,
    get unplannedExits() {
      return unplannedExits;
    },
    tail: () => recent,
    async waitForOutput(pattern, timeoutMs) {
      const deadline = Date.now() + timeoutMs;
      while (!pattern.test(sinceStart)) {
        if (Date.now() > deadline)
          throw new Error(`${name} did not start within ${timeoutMs} ms; its last output:\n${recent.slice(-3000)}`);
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    },
  };
}

/** The worker's own line (at LOG_LEVEL info), or the SDK's, which it prints whatever the level. */
export const workerReady = /worker polling|state: 'RUNNING'/;

/** Boots everything; what it starts is registered with `options.cleanup` as it goes. */
export async function startLocalStack(options: LocalStackOptions): Promise<LocalStack> {
  const { log, purpose } = options;
  const later = (stop: () => Promise<unknown>) => options.cleanup.add(stop);
  let closing = false;
  const stateDir = await mkdtemp(path.join(tmpdir(), `walletflow-${purpose}-`));
  later(() => rm(stateDir, { recursive: true, force: true }));
  const logDir = path.resolve(options.logDir ?? path.join(stateDir, 'logs'));
  await mkdir(logDir, { recursive: true });
  const openLog = (file: string) => {
    const stream = createWriteStream(path.join(logDir, file), { flags: 'a' });
    later(() => new Promise<void>((resolve) => stream.end(resolve)));
    return stream;
  };

  // PostgreSQL: a fresh database, dropped at the end.
  let databaseUrl: string;
  if (process.env.DATABASE_URL) {
    const serverUrl = process.env.DATABASE_URL;
    const name = `walletflow_${purpose}_${process.pid}_${Date.now().toString(36)}`;
    databaseUrl = await ensureDatabaseExists(serverUrl, name);
    later(() => dropDatabase(serverUrl, name));
    log('PostgreSQL: a fresh database on DATABASE_URL’s server');
  } else {
    const postgresLog = openLog('postgres.log');
    const postgres: RunningPostgres = await startEmbeddedPostgres({
      // Directly under the state dir: the server user (when run as root) may traverse that one.
      dataDir: path.join(stateDir, 'postgres'),
      port: await findFreePort(),
      onLog: (line) => postgresLog.write(`${line}\n`),
    });
    later(() => postgres.stop());
    databaseUrl = postgres.url;
    log('PostgreSQL: embedded, in the state dir');
  }
  await applyMigrations(databaseUrl);
  const database = openStackDatabase(databaseUrl);
  later(() => database.$disconnect());

  // Temporal: the caller's server, or the CLI dev server on a SQLite file, restartable.
  let temporalRecent = '';
  let temporal: RunningTemporal | undefined;
  let startTemporal: (() => Promise<RunningTemporal>) | undefined;
  const temporalTarget = options.temporal;
  if (!temporalTarget) {
    const temporalBinary = resolveTemporalCli();
    const temporalDb = path.join(stateDir, 'temporal.db');
    const temporalLog = openLog('temporal.log');
    const devServer = {
      binary: temporalBinary,
      dbFile: temporalDb,
      namespace: 'default',
      onLog: (line: string) => {
        temporalLog.write(`${line}\n`);
        temporalRecent = (temporalRecent + line + '\n').slice(-4000);
      },
    };
    // The first start finds a port that works; every restart (the soak's chaos) reuses it.
    const first = await startTemporalDevServerOnFreePort(devServer);
    const temporalPort = first.port;
    startTemporal = () => startTemporalDevServer({ ...devServer, port: temporalPort });
    temporal = first;
    later(() => temporal!.stop());
    log(`Temporal: dev server on port ${temporalPort}, history in a SQLite file`);
  }
  const temporalAddress = temporalTarget?.address ?? temporal!.address;
  const temporalNamespace = temporalTarget?.namespace ?? 'default';

  // The workflow bundle, once (and once per version of the code, harness/workflow-bundle-file.ts), copied into the
  // stack's own folder, which outlives any clean-up of the bundles: worker restarts then take a second, not a
  // webpack run.
  const bundlePath = path.join(stateDir, 'workflow-bundle.js');
  await copyFile(await workflowBundleFile(), bundlePath);

  // The sandbox in-process, registered to call this stack's API.
  // The API's socket, held from here to the API's first start and handed to it: no other process can take the port
  // meanwhile (one did under load, and the API exited on EADDRINUSE). A restart binds the same port again (PORT).
  const apiSocket = await holdFreePort();
  const apiPort = apiSocket.port;
  const apiBase = `http://127.0.0.1:${apiPort}`;
  const sandbox = await startSandbox({
    port: 0,
    registration: partnerEndpoints(apiBase),
  });
  later(() => sandbox.close());
  const partner = sandbox.partner;

  const opsKey = randomBytes(32).toString('base64url');
  const approverKey = randomBytes(32).toString('base64url');
  const tokenEncryptionKey = randomBytes(32);
  const env: NodeJS.ProcessEnv = {
    ...cleanEnvironment(),
    NODE_ENV: 'development',
    LOG_LEVEL: 'info',
    HOST: '127.0.0.1',
    PORT: String(apiPort),
    DATABASE_URL: databaseUrl,
    TEMPORAL_ADDRESS: temporalAddress,
    TEMPORAL_NAMESPACE: temporalNamespace,
    TEMPORAL_TASK_QUEUE: `walletflow-${purpose}`,
    WORKFLOW_BUNDLE_PATH: bundlePath,
    // The sweep would repair stragglers: off unless the purpose asks for it (the soak runs it every minute).
    RECONCILE_EVERY_MINUTES: '1440',
    RECONCILE_AFTER_SECONDS: '604800',
    OPS_API_KEYS: `${opsKey},checker:read+approve:${approverKey}`,
    TOKEN_ENCRYPTION_KEY: tokenEncryptionKey.toString('base64'),
    ...sandboxWalletVariables(sandbox),
    SESSION_ALLOWED_IPS: partner.senderIp === '0.0.0.0' || partner.senderIp === '::' ? '127.0.0.1' : partner.senderIp,
    WALLET_TIMEOUT_MS: '5000',
    ...nativeMemoryEnvironment,
    ...options.env,
  };

  const isClosing = () => closing;
  const compiled = options.compiledCodeDir;
  const entryOf = (entry: string) => (compiled ? [path.join(compiled, entry.replace(/\.ts$/, '.js'))] : entry);
  const workers = Array.from({ length: Math.max(1, options.workers ?? 1) }, (_, index) => {
    const name = index === 0 ? 'worker' : `worker-${index + 1}`;
    return supervise(name, entryOf('worker/main.ts'), {
      env: serviceEnvironment(env),
      logFile: openLog(`${name}.log`),
      log,
      closing: isClosing,
      cleanup: options.cleanup,
    });
  });
  const worker = workers[0]!;
  const api = supervise('api', entryOf('api/main.ts'), {
    env: apiEnvironment(env),
    logFile: openLog('api.log'),
    log,
    closing: isClosing,
    cleanup: options.cleanup,
    socket: apiSocket,
  });
  // Runs first at cleanup (last in, first out): from here on chaos starts nothing again.
  later(async () => {
    closing = true;
  });
  for (const each of workers) each.start();
  api.start();
  // The port takes connections from the API's spawn on (its socket is already listening there): the API is up once it
  // answers HTTP, whatever the status.
  const apiListening = async (timeoutMs = 60_000) => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`the API did not answer within ${timeoutMs} ms; its last output:\n${api.tail()}`);
      const answered = await fetch(`${apiBase}/healthz`, { signal: AbortSignal.timeout(Math.min(left, 2000)) })
        .then(async (response) => (await response.arrayBuffer(), true))
        .catch(() => false);
      if (answered) return;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  };
  await Promise.all([apiListening(), ...workers.map((each) => each.waitForOutput(workerReady, 120_000))]);
  log(
    `API on ${apiBase}; ${workers.length === 1 ? 'worker' : `${workers.length} workers`} and API run as child processes (logs in ${logDir})`,
  );

  return {
    stateDir,
    temporalAddress,
    logDir,
    databaseUrl,
    database,
    apiBase,
    opsKey,
    approverKey,
    tokenEncryptionKey,
    sandbox,
    api,
    worker,
    workers,
    apiListening,
    async restartTemporal(downMs: number) {
      if (!temporal || !startTemporal) throw new Error('only the stack’s own Temporal dev server can be restarted');
      await temporal.stop();
      await new Promise((resolve) => setTimeout(resolve, downMs));
      for (let attempt = 1; ; attempt += 1) {
        if (closing) return;
        try {
          temporal = await startTemporal();
          // The cleanup ran while it started: its stop has already been called on the old one.
          if (closing) await temporal.stop();
          return;
        } catch (error) {
          if (attempt >= 3) throw error;
          log(`Temporal did not start again (${(error as Error).message.split('\n')[0]}); trying again`);
        }
      }
    },
    temporalTail: () => temporalRecent,
    temporalPid: () => temporal?.process.pid,
    async startProcess(name, entry, ready) {
      const supervised = supervise(name, entryOf(entry), {
        env,
        logFile: openLog(`${name}.log`),
        log,
        closing: isClosing,
        cleanup: options.cleanup,
      });
      supervised.start();
      await supervised.waitForOutput(ready, 120_000);
      return supervised;
    },
  };
}
