// walletflow's API on real PostgreSQL, wired to a sandbox over HTTP, for integration tests: the
// sandbox's registration points back at this API (redirect URI, session and landing URLs).
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { inject } from 'vitest';
import { NativeConnection, Worker } from '@temporalio/worker';
import { Client, Connection } from '@temporalio/client';
import { createActivities } from '../../activities/index.ts';
import { createTokenVault, type TokenVault } from '../../links/token-vault.ts';
import { createApp, type HardeningOptions } from '../../api/app.ts';
import { createDatabase, type Database } from '../../lib/database.ts';
import { createLogger } from '../../lib/logger.ts';
import { createMetrics, type Metrics } from '../../lib/metrics.ts';
import { createTokenCipher, deriveSubkey } from '../../links/token-cipher.ts';
import { dataConverterFor, type PayloadKey } from '../../lib/payload-codec.ts';
import { createTokenStore, type TokenStore } from '../../links/token-store.ts';
import { createWalletCallLog } from '../../audit/wallet-call-log.ts';
import { startSandbox, type RunningSandbox } from '../../sandbox/server.ts';
import { createWalletClient, type WalletClient } from '../../wallet/index.ts';
import { sandboxAdmin, type SandboxAdmin } from './wallet-sandbox.ts';
import type { FundingLimits } from '../../ledger/limits.ts';

export interface PartnerStack {
  apiBase: string;
  /** The Express app the server runs (its routes can be listed). */
  app: ReturnType<typeof createApp>;
  opsKey: string;
  /** TOKEN_ENCRYPTION_KEY of this stack, for a worker run as a separate process. */
  encryptionKey: Buffer;
  /** The environment a separate worker process needs to join this stack. */
  workerEnv(): NodeJS.ProcessEnv;
  sandbox: RunningSandbox;
  admin: SandboxAdmin;
  database: Database;
  wallet: WalletClient;
  tokens: TokenStore;
  temporal: Client;
  taskQueue: string;
  /** The API's registry (also served at GET /metrics) and the in-process worker's. */
  apiMetrics: Metrics;
  workerMetrics: Metrics;
  /** Starts an in-process worker on this stack's task queue (once). */
  startWorker(): Promise<void>;
  /** Stops the in-process worker (drains it). */
  stopWorker(): Promise<void>;
  /** A vault as a worker builds it (its own wallet client and clock). */
  createVault(options?: { now?: () => number }): TokenVault;
  opsFetch(path: string, init?: RequestInit): Promise<Response>;
  close(): Promise<void>;
}

export async function startPartnerStack(
  options: {
    connectReturnUrl?: string;
    sessionAllowedIps?: string[];
    trustedProxies?: string[];
    embeddedSessionTtlSeconds?: number;
    /** Security headers and rate limits (default: the API's defaults). */
    hardening?: HardeningOptions;
    /** Every log line of the API and the in-process worker, at trace level (default: silent). */
    logTo?: NodeJS.WritableStream;
    /** Temporal payload encryption for the API's client and the in-process worker. */
    payloadKeys?: PayloadKey[];
    /** Section 10's funding limits (default: none). */
    fundingLimits?: FundingLimits;
  } = {},
): Promise<PartnerStack> {
  const server: Server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const apiBase = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const sandbox = await startSandbox({
    port: 0,
    registration: { redirectUri: `${apiBase}/connect/callback`, sessionUrl: `${apiBase}/embedded/session`, landingUrl: `${apiBase}/app` },
  });
  const logger = options.logTo ? createLogger({ level: 'trace', destination: options.logTo }) : createLogger({ level: 'silent' });
  const database = createDatabase(inject('databaseUrl'));
  const apiMetrics = createMetrics();
  const workerMetrics = createMetrics();
  const partner = sandbox.partner;
  const walletConfig = {
    connectUrl: sandbox.connectUrl,
    opUrl: sandbox.opUrl,
    transferUrl: sandbox.transferUrl,
    clientId: partner.clientId,
    clientSecret: partner.clientSecret,
    redirectUri: partner.redirectUri,
    transferApiKey: partner.transferApiKey,
    p2mId: partner.p2mId,
    profileDecryptionJwk: partner.profileDecryptionJwk as never,
    profileVerificationJwk: partner.profileVerificationJwk as never,
    timeoutMs: 5000,
    ...createWalletCallLog(database, logger),
  };
  const wallet = createWalletClient({ ...walletConfig, ...createWalletCallLog(database, logger, apiMetrics) });
  const encryptionKey = randomBytes(32);
  const cipher = createTokenCipher(encryptionKey);
  const tokens = createTokenStore(cipher);
  const opsKey = randomBytes(32).toString('base64url');
  const connection = await Connection.connect({ address: inject('temporalAddress') });
  const dataConverter = dataConverterFor(options.payloadKeys);
  const temporal = new Client({ connection, namespace: inject('temporalNamespace'), ...(dataConverter ? { dataConverter } : {}) });
  // A task queue per stack: test files share one Temporal server and must not take each other's tasks.
  const taskQueue = `walletflow-test-${randomBytes(6).toString('hex')}`;
  const app = createApp({
    logger,
    metrics: apiMetrics,
    ...(options.hardening ? { hardening: options.hardening } : {}),
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
      connectReturnUrl: options.connectReturnUrl,
      // The sandbox calls the session URL from 127.0.0.1 (its registration's senderIp).
      sessionAllowedIps: options.sessionAllowedIps ?? [sandbox.partner.senderIp],
      ...(options.trustedProxies ? { trustedProxies: options.trustedProxies } : {}),
      ...(options.embeddedSessionTtlSeconds === undefined ? {} : { embeddedSessionTtlSeconds: options.embeddedSessionTtlSeconds }),
      ...(options.fundingLimits ? { fundingLimits: options.fundingLimits } : {}),
    },
  });
  let running: { worker: Worker; done: Promise<void>; connection: NativeConnection; wallet: WalletClient } | undefined;
  server.on('request', app);
  const vaultWallets: WalletClient[] = [];
  return {
    apiBase,
    app,
    opsKey,
    encryptionKey,
    workerEnv: () => ({
      ...process.env,
      NODE_ENV: 'test',
      LOG_LEVEL: 'warn',
      DATABASE_URL: inject('databaseUrl'),
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      TEMPORAL_NAMESPACE: inject('temporalNamespace'),
      TEMPORAL_TASK_QUEUE: taskQueue,
      WORKFLOW_BUNDLE_PATH: inject('workflowBundlePath'),
      TOKEN_ENCRYPTION_KEY: encryptionKey.toString('base64'),
      CONNECT_URL: sandbox.connectUrl,
      OP_URL: sandbox.opUrl,
      TRANSFER_URL: sandbox.transferUrl,
      CONNECT_CLIENT_ID: partner.clientId,
      CONNECT_CLIENT_SECRET: partner.clientSecret,
      CONNECT_REDIRECT_URI: partner.redirectUri,
      TRANSFER_API_KEY: partner.transferApiKey,
      PROFILE_DECRYPTION_JWK: JSON.stringify(partner.profileDecryptionJwk),
      PROFILE_VERIFICATION_JWK: JSON.stringify(partner.profileVerificationJwk),
      MERCHANT_P2M_ID: partner.p2mId,
      WALLET_TIMEOUT_MS: '5000',
      WORKER_METRICS_PORT: '0',
    }),
    sandbox,
    admin: sandboxAdmin(sandbox),
    database,
    wallet,
    tokens,
    temporal,
    taskQueue,
    apiMetrics,
    workerMetrics,
    async startWorker() {
      if (running) return;
      const workerConnection = await NativeConnection.connect({ address: inject('temporalAddress') });
      const workerWallet = createWalletClient({ ...walletConfig, ...createWalletCallLog(database, logger, workerMetrics) });
      const worker = await Worker.create({
        connection: workerConnection,
        namespace: inject('temporalNamespace'),
        taskQueue,
        workflowBundle: { codePath: inject('workflowBundlePath') },
        ...(dataConverter ? { dataConverter } : {}),
        activities: createActivities({ database, wallet: workerWallet, cipher, logger, temporal, taskQueue, metrics: workerMetrics }),
      });
      running = { worker, done: worker.run(), connection: workerConnection, wallet: workerWallet };
    },
    async stopWorker() {
      if (!running) return;
      const current = running;
      running = undefined;
      current.worker.shutdown();
      await current.done;
      await current.connection.close();
      await current.wallet.close();
    },
    createVault: (vaultOptions = {}) => {
      const vaultWallet = createWalletClient({ ...walletConfig, ...(vaultOptions.now ? { now: vaultOptions.now } : {}) });
      vaultWallets.push(vaultWallet);
      return createTokenVault({ database, tokens, wallet: vaultWallet, logger, ...(vaultOptions.now ? { now: vaultOptions.now } : {}) });
    },
    opsFetch: (path, init = {}) =>
      fetch(`${apiBase}${path}`, { ...init, headers: { authorization: `Bearer ${opsKey}`, ...(init.headers ?? {}) } }),
    close: async () => {
      if (running) {
        running.worker.shutdown();
        await running.done.catch(() => undefined);
        await running.connection.close();
        await running.wallet.close();
      }
      await connection.close();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await Promise.allSettled([sandbox.close(), wallet.close(), ...vaultWallets.map((w) => w.close()), database.$disconnect()]);
    },
  };
}
