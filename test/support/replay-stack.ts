// A whole walletflow stack in one process for capturing workflow histories, without vitest:
// PostgreSQL (fresh database), Temporal (given or a dev server), the sandbox, the API, a worker.
import { randomBytes } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, readdir, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, Connection } from '@temporalio/client';
import type { History } from '@temporalio/common/lib/proto-utils';
import { NativeConnection, Worker } from '@temporalio/worker';
import { createActivities } from '../../activities/index.ts';
import { createApp } from '../../api/app.ts';
import { applyMigrations } from '../../prisma/schema-engine.ts';
import { createDatabase, dropDatabase, ensureDatabaseExists, type Database } from '../../lib/database.ts';
import { startEmbeddedPostgres } from '../../cli/stack/embedded-postgres.ts';
import { createLogger } from '../../lib/logger.ts';
import { findFreePort } from '../../cli/stack/ports.ts';
import { resolveTemporalCli, startTemporalDevServer } from '../../cli/stack/temporal-dev-server.ts';
import { bundleWorkflows } from '../../cli/stack/workflow-bundle.ts';
import { createTokenCipher, deriveSubkey, type TokenCipher } from '../../links/token-cipher.ts';
import { createTokenStore, type TokenStore } from '../../links/token-store.ts';
import { createWalletCallLog } from '../../audit/wallet-call-log.ts';
import { partnerEndpoints, sandboxWalletConfig } from '../../cli/stack/sandbox-wallet.ts';
import { startSandbox, type RunningSandbox } from '../../sandbox/server.ts';
import { createWalletClient, type WalletClient } from '../../wallet/index.ts';
import { sandboxAdmin, type SandboxAdmin } from './sandbox-admin.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

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
  admin: SandboxAdmin;
  database: Database;
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
  startWorker(): Promise<void>;
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
    for (const stop of stops.splice(0).reverse()) await stop().catch((error: Error) => console.error(`cleanup: ${error.message}`));
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
      const temporal = await startTemporalDevServer({ binary: resolveTemporalCli(), port: await findFreePort(), namespace });
      stops.push(() => temporal.stop());
      temporalAddress = temporal.address;
      log(`Temporal: dev server in memory on ${temporalAddress}`);
    }

    // Bundled once: the cancelled path stops and restarts the worker.
    const bundle = await bundleWorkflows();

    const server: Server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    stops.push(async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    });
    const apiBase = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const sandbox = await startSandbox({
      port: 0,
      registration: partnerEndpoints(apiBase),
    });
    stops.push(() => sandbox.close());
    const logger = createLogger({ level: 'silent' });
    const database = createDatabase(databaseUrl);
    stops.push(() => database.$disconnect());
    const walletConfig = {
      ...sandboxWalletConfig(sandbox),
      timeoutMs: 5000,
      ...createWalletCallLog(database, logger),
    };
    const wallet: WalletClient = createWalletClient(walletConfig);
    stops.push(() => wallet.close());
    const encryptionKey = randomBytes(32);
    const cipher = createTokenCipher(encryptionKey);
    const tokens = createTokenStore(cipher);
    const opsKey = randomBytes(32).toString('base64url');
    const connection = await Connection.connect({ address: temporalAddress });
    stops.push(() => connection.close());
    const temporal = new Client({ connection, namespace });
    // A task queue of its own: on a shared dev server no other worker takes these tasks.
    const taskQueue = `walletflow-capture-${randomBytes(6).toString('hex')}`;
    server.on(
      'request',
      createApp({
        logger,
        readiness: { postgres: async () => {}, temporal: async () => {}, walletService: async () => {} },
        services: {
          database,
          tokens,
          cipher,
          fingerprintKey: deriveSubkey(encryptionKey, 'funding-fingerprint'),
          wallet,
          temporal,
          taskQueue,
          opsApiKeys: [opsKey],
          // The sandbox's launch calls the session URL from its registration's sender address.
          sessionAllowedIps: [sandbox.partner.senderIp],
        },
      }),
    );

    let running: { worker: Worker; done: Promise<void>; connection: NativeConnection; wallet: WalletClient } | undefined;
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
      apiBase,
      sandbox,
      admin: sandboxAdmin(sandbox),
      database,
      tokens,
      cipher,
      wallet,
      opsKey,
      temporal,
      temporalAddress,
      namespace,
      taskQueue,
      result: (workflowId) => connection.withAbortSignal(inFlight.signal, () => temporal.workflow.getHandle(workflowId).result()),
      fetchHistory: (workflowId) => connection.withAbortSignal(inFlight.signal, () => temporal.workflow.getHandle(workflowId).fetchHistory()),
      async startWorker() {
        if (running) return;
        const workerConnection = await NativeConnection.connect({ address: temporalAddress });
        const workerWallet = createWalletClient(walletConfig);
        const worker = await Worker.create({
          connection: workerConnection,
          namespace,
          taskQueue,
          workflowBundle: { code: bundle },
          activities: createActivities({ database, wallet: workerWallet, cipher, logger, temporal, taskQueue }),
        });
        running = { worker, done: worker.run(), connection: workerConnection, wallet: workerWallet };
      },
      stopWorker,
      opsFetch: (route, init = {}) => fetch(`${apiBase}${route}`, { ...init, headers: { authorization: `Bearer ${opsKey}`, ...(init.headers ?? {}) } }),
      close: stopAll,
    };
  } catch (error) {
    await stopAll();
    throw error;
  }
}
