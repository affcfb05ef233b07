// A whole walletflow stack in one process for capturing workflow histories, without vitest:
// PostgreSQL (fresh database), Temporal (given or a dev server), and on them the sandbox, the API
// and a worker (partner-api.ts).
import { setMaxListeners } from 'node:events';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, readdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Client } from '@temporalio/client';
import type { History } from '@temporalio/common/lib/proto-utils';
import type { WorkerOptions } from '@temporalio/worker';
import { applyMigrations } from '../../prisma/schema-engine.ts';
import { dropDatabase, ensureDatabaseExists, type Database } from '../../lib/database.ts';
import { startEmbeddedPostgres } from '../../stack/embedded-postgres.ts';
import { createLogger } from '../../lib/logger.ts';
import { findFreePort } from '../../stack/ports.ts';
import { resolveTemporalCli, startTemporalDevServerOnFreePort } from '../../stack/temporal-dev-server.ts';
import { bundleWorkflows } from '../../lib/workflow-bundle.ts';
import type { TokenCipher } from '../../lib/token-cipher.ts';
import type { TokenStore } from '../../links/token-store.ts';
import { sandboxAdminClient, type SandboxAdminClient } from '../../sandbox/admin-client.ts';
import type { RunningSandbox } from '../../sandbox/server.ts';
import type { WalletClient } from '../../wallet/index.ts';
import { startPartnerApi, type InProcessWorker } from './partner-api.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** The settlement runs' sizes the capture's API starts them with. */
export const settlementCaptureTuning = {
  maxInFlight: 4,
  pageSize: 2,
  itemsPerActivity: 2,
  activitiesPerRun: 2,
} as const;

export interface ReplayStackOptions {
  /** A running Temporal (e.g. `npm run dev`'s); absent: an in-memory dev server is started. */
  temporalAddress?: string;
  namespace?: string;
  /** A PostgreSQL server URL: a fresh database is made on it (and dropped); absent: embedded. */
  databaseUrl?: string;
  log?: (line: string) => void;
}

export interface ReplayStack {
  apiBase: string;
  sandbox: RunningSandbox;
  admin: SandboxAdminClient;
  database: Database;
  /** Its URL (a capture plants rows with set-based SQL: harness/settlement-day.ts). */
  databaseUrl: string;
  tokens: TokenStore;
  /** The stack's token cipher: reads what the session URL stored, encrypts rows a capture inserts. */
  cipher: TokenCipher;
  /** The API's wallet client (transfers a capture makes directly, outside any workflow). */
  wallet: WalletClient;
  /** The ops API key opsFetch sends: a secret no history may hold. */
  opsKey: string;
  temporal: Client;
  temporalAddress: string;
  namespace: string;
  taskQueue: string;
  /** Waits for a workflow's result; close() cancels the wait instead of leaving a call retrying. */
  result(workflowId: string): Promise<unknown>;
  /** The workflow's history as events; cancelled by close() like result(). */
  fetchHistory(workflowId: string): Promise<History>;
  /**
   * Starts the worker. `shutdownGraceTime`: how long stopWorker lets an activity in flight finish
   * (default 0: it is cancelled at once).
   */
  startWorker(options?: { shutdownGraceTime?: WorkerOptions['shutdownGraceTime'] }): Promise<void>;
  /** Drains and stops the worker: workflows started meanwhile wait on the task queue. */
  stopWorker(): Promise<void>;
  opsFetch(path: string, init?: RequestInit): Promise<Response>;
  close(): Promise<void>;
}

const dataDirPrefix = 'capture-postgres-';

/**
 * Removes data folders of earlier captures whose PostgreSQL no longer runs: a capture killed
 * outright (tsx SIGKILLs a child slow to take Ctrl-C) cannot remove its own.
 */
async function removeStaleDataDirs(): Promise<void> {
  const parent = path.join(root, '.walletflow');
  for (const entry of await readdir(parent)) {
    if (!entry.startsWith(dataDirPrefix)) continue;
    const pidFile = path.join(parent, entry, 'data/postmaster.pid');
    const pid = existsSync(pidFile) ? Number((await readFile(pidFile, 'utf8')).split('\n')[0]) : NaN;
    if (Number.isInteger(pid) && pid > 0 && isAlive(pid)) continue;
    await rm(path.join(parent, entry), { recursive: true, force: true });
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it exists, as another user (PostgreSQL runs as `postgres` when we are root).
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export async function startReplayStack(options: ReplayStackOptions = {}): Promise<ReplayStack> {
  const log = options.log ?? (() => {});
  const namespace = options.namespace ?? 'default';
  // Undone in reverse order by close(), or right away when starting fails half-way.
  const stops: Array<() => Promise<unknown>> = [];
  // Client calls in flight when close() runs (Ctrl-C mid-capture) are cancelled first: a long
  // poll would otherwise retry on the closed channel and throw from a timer.
  const inFlight = new AbortController();
  // Each wrapped call (and each retry of a long poll) listens on it: a capture makes dozens.
  setMaxListeners(1000, inFlight.signal);
  const stopAll = async () => {
    inFlight.abort();
    for (const stop of stops.splice(0).reverse())
      await stop().catch((error: Error) => console.error(`cleanup: ${error.message}`));
  };

  try {
    let databaseUrl: string;
    if (options.databaseUrl) {
      const serverUrl = options.databaseUrl;
      const name = `walletflow_capture_${process.pid}_${Date.now().toString(36)}`;
      databaseUrl = await ensureDatabaseExists(serverUrl, name);
      stops.push(() => dropDatabase(serverUrl, name));
      log(`PostgreSQL: database ${name} on DATABASE_URL's server`);
    } else {
      await mkdir(path.join(root, '.walletflow'), { recursive: true });
      await removeStaleDataDirs();
      const dir = await mkdtemp(path.join(root, `.walletflow/${dataDirPrefix}`));
      stops.push(() => rm(dir, { recursive: true, force: true }));
      const postgres = await startEmbeddedPostgres({ dataDir: path.join(dir, 'data'), port: await findFreePort() });
      stops.push(() => postgres.stop());
      databaseUrl = postgres.url;
      log('PostgreSQL: embedded, in a temporary folder');
    }
    await applyMigrations(databaseUrl);

    let temporalAddress = options.temporalAddress;
    if (temporalAddress) {
      log(`Temporal: ${temporalAddress} (namespace ${namespace})`);
    } else {
      const temporal = await startTemporalDevServerOnFreePort({ binary: resolveTemporalCli(), namespace });
      stops.push(() => temporal.stop());
      temporalAddress = temporal.address;
      log(`Temporal: dev server in memory on ${temporalAddress}`);
    }

    // Bundled once: the cancelled path stops and restarts the worker.
    const bundle = await bundleWorkflows();

    const api = await startPartnerApi({
      databaseUrl,
      temporalAddress,
      namespace,
      // On a shared dev server no other worker takes these tasks.
      taskQueuePrefix: 'walletflow-capture',
      logger: createLogger({ level: 'silent' }),
      // Settlement runs in pages of two, two items an activity, two activities a run: a capture of
      // a few items takes every path, continue-as-new included (the histories' commands are those
      // of any size).
      settlements: settlementCaptureTuning,
    });
    stops.push(() => api.close());
    const { connection, temporal } = api;

    let running: InProcessWorker | undefined;
    const stopWorker = async () => {
      if (!running) return;
      const current = running;
      running = undefined;
      // A worker already shutting down (a shutdown signal reached the runtime) only needs awaiting.
      if (current.worker.getState() === 'RUNNING') current.worker.shutdown();
      await current.done.catch(() => undefined);
      await current.connection.close();
      await current.wallet.close();
    };
    stops.push(stopWorker);

    return {
      apiBase: api.apiBase,
      sandbox: api.sandbox,
      admin: sandboxAdminClient(api.sandbox.url),
      database: api.database,
      databaseUrl,
      tokens: api.tokens,
      cipher: api.cipher,
      wallet: api.wallet,
      opsKey: api.opsKey,
      temporal,
      temporalAddress,
      namespace,
      taskQueue: api.taskQueue,
      result: (workflowId) =>
        connection.withAbortSignal(inFlight.signal, () => temporal.workflow.getHandle(workflowId).result()),
      fetchHistory: (workflowId) =>
        connection.withAbortSignal(inFlight.signal, () => temporal.workflow.getHandle(workflowId).fetchHistory()),
      async startWorker(workerOptions = {}) {
        if (running) return;
        running = await api.createWorker({ workflowBundle: { code: bundle }, ...workerOptions });
      },
      stopWorker,
      opsFetch: api.opsFetch,
      close: stopAll,
    };
  } catch (error) {
    await stopAll();
    throw error;
  }
}
