// walletflow's API in this process on a given database and Temporal namespace, wired to a fresh
// sandbox over HTTP (the sandbox's registration points back at this API), and the in-process
// workers that join it: what the integration tests' partner stack and the history capture's
// replay stack share. Each stack adds its own (vitest's shared servers, metrics, vaults; or a
// database and Temporal of its own, cancellable waits) and stops its workers its own way.
// Without vitest, so the capture script can use it too.
import type { KeyOwners } from '../../domain/actor.ts';
import { createLaneBell, LANE_CHANNEL } from '../../lib/lane-bell.ts';
import type { FundingLanesMode } from '../../domain/funding.ts';
import { createSessionOnboarding } from '../../links/embedded-onboarding.ts';
import { randomBytes } from 'node:crypto';
import type { ConsoleConfig } from '../../lib/config.ts';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client, Connection } from '@temporalio/client';
import type { DataConverter } from '@temporalio/common';
import { NativeConnection, Worker, type WorkerOptions } from '@temporalio/worker';
import { createActivities } from '../../activities/index.ts';
import { createApp, type HardeningOptions } from '../../api/app.ts';
import type { SettlementOptions } from '../../api/ops/settlement-service.ts';
import { createOnboardingDispatcher, type OnboardingDispatcher } from '../../api/embedded/onboarding-dispatcher.ts';
import { createWalletCallLog } from '../../audit/wallet-call-log.ts';
import { partnerEndpoints, sandboxWalletConfig } from '../../stack/sandbox-wallet.ts';
import {
  createApiDatabase,
  createRefreshPool,
  refreshWaitMs,
  type Database,
  type RefreshPool,
} from '../../lib/database.ts';
import type { FundingLimits } from '../../ledger/limits.ts';
import type { Logger } from '../../lib/logger.ts';
import type { Metrics } from '../../lib/metrics.ts';
import { createTokenCipher, deriveSubkey, type TokenCipher } from '../../lib/token-cipher.ts';
import { createTokenStore, type TokenStore } from '../../links/token-store.ts';
import { startSandbox, type RunningSandbox } from '../../sandbox/server.ts';
import { createWalletClient, type WalletClient, type WalletClientConfig } from '../../wallet/index.ts';
import { WORKER_HEARTBEAT_THROTTLE_MS } from '../../workflows/fund-batch.contract.ts';
import { answerParserRefusals } from '../../api/http/parser-refusals.ts';
import {
  bundleVersion,
  promoteOnStart,
  versionedWorkerOptions,
  type PromotionPolicy,
} from '../../lib/worker-deployment.ts';

export interface PartnerApiOptions {
  databaseUrl: string;
  temporalAddress: string;
  namespace: string;
  /** The task queue's name before a random suffix: stacks on one Temporal server must not take each other's tasks. */
  taskQueuePrefix: string;
  logger: Logger;
  /** Temporal payload encryption for the API's client (and the workers'). */
  dataConverter?: DataConverter;
  /** The API's registry (served at GET /metrics); also counts the API wallet client's calls. Absent: the API's own. */
  metrics?: Metrics;
  hardening?: HardeningOptions;
  connectReturnUrl?: string | undefined;
  /** Default: the sandbox's sender address (its launch calls the session URL from there). */
  sessionAllowedIps?: string[];
  trustedProxies?: string[];
  embeddedSessionTtlSeconds?: number;
  /** Section 10's funding limits; absent: none. */
  fundingLimits?: FundingLimits;
  /** Funding batches' approval threshold (thousandths) and items at once; absent: none waits, 32. */
  batches?: {
    approvalThreshold: bigint | null;
    maxInFlight: number;
    uploadBudgetBytes?: number;
    keyOwners?: KeyOwners;
  };
  /** FUNDING_LANES of the API and its workers (fundings/funding-paths.ts); absent: `off`. */
  fundingLanes?: FundingLanesMode;
  /**
   * The ops console's sign-in and sessions, or a function giving them once the API's address is
   * known (an identity provider registers the console's redirect URI); absent: sign-in with an ops key.
   */
  console?: ConsoleConfig | ((apiBase: string) => Promise<ConsoleConfig>);
  /** PUBLIC_URL; absent: none. */
  publicUrl?: string;
  /** OPS_API_KEYS entries besides the stack's own `opsKey` (a bare key: `default`, every scope). */
  extraOpsKeys?: string[];
  /** LOGIN_SIGNING_KEY: partner-signed login tokens. */
  loginSigningKey?: Buffer;
  /** The API's PostgreSQL pool size; absent: the production default (lib/database.ts). */
  databaseMaxConnections?: number;
  /**
   * TOKEN_ENCRYPTION_KEY (and the fingerprint key derived from it); absent: a random one. Two APIs
   * given the same one act as two processes of one deployment.
   */
  encryptionKey?: Buffer;
  /** A day's settlement runs: retrieves at once, and small pages and activities; absent: the API's defaults. */
  settlements?: SettlementOptions;
  /** The console's live regions: a push interval and a stall bound of the test's; absent: the API's. */
  consoleLive?: { pushEveryMs?: number; stallMs?: number };
  /** How often a streamed CSV asks again whether its actor may go on; absent: the API's. */
  reportRecheckMs?: number;
}

export interface InProcessWorker {
  worker: Worker;
  done: Promise<void>;
  connection: NativeConnection;
  wallet: WalletClient;
}

export interface PartnerApi {
  apiBase: string;
  app: ReturnType<typeof createApp>;
  sandbox: RunningSandbox;
  database: Database;
  /**
   * The token vault's own pool (lib/database.ts), the API's; its in-process workers' vaults share it as they share
   * `database`.
   */
  refreshPool: RefreshPool;
  /** The wallet client settings of this stack (audited to the database, 5 s time-out). */
  walletConfig: WalletClientConfig;
  /** The API's wallet client. */
  wallet: WalletClient;
  encryptionKey: Buffer;
  cipher: TokenCipher;
  tokens: TokenStore;
  opsKey: string;
  connection: Connection;
  temporal: Client;
  taskQueue: string;
  /** The API's onboarding dispatcher (started; stopped by close()). */
  onboarding: OnboardingDispatcher;
  /** A worker on this stack's task queue, with a wallet client of its own; the caller runs and stops it. */
  createWorker(options: {
    workflowBundle: { codePath: string } | { code: string };
    metrics?: Metrics;
    shutdownGraceTime?: WorkerOptions['shutdownGraceTime'];
    /**
     * Whether it makes its build the deployment's current version once registered (default: always, as the dev stack
     * does).
     */
    promote?: PromotionPolicy;
    /** The time its settlement activities take for the database's clock (absent: the database's). */
    settlementNow?: () => number;
  }): Promise<InProcessWorker & { buildId: string }>;
  opsFetch(path: string, init?: RequestInit): Promise<Response>;
  /**
   * Stops the Temporal client, the server, the sandbox and the API's wallet client, and disconnects; not the workers.
   */
  close(): Promise<void>;
}

export async function startPartnerApi(options: PartnerApiOptions): Promise<PartnerApi> {
  // Undone in reverse order by close(), or right away when starting fails half-way; every stop
  // runs, and what failed is thrown together at the end.
  const stops: Array<() => Promise<unknown>> = [];
  const stopAll = async () => {
    const failures: unknown[] = [];
    for (const stop of stops.splice(0).reverse()) await stop().catch((error: unknown) => failures.push(error));
    if (failures.length > 0)
      throw new AggregateError(failures, `closing the partner API: ${failures.map(String).join('; ')}`);
  };
  try {
    const server: Server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    stops.push(async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    });
    const apiBase = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const sandbox = await startSandbox({ port: 0, registration: partnerEndpoints(apiBase) });
    stops.push(() => sandbox.close());
    const { logger } = options;
    // The API's database as api/main.ts makes it: write transactions admitted in front of the pool.
    const { database } = createApiDatabase(
      options.databaseUrl,
      options.databaseMaxConnections === undefined ? {} : { maxConnections: options.databaseMaxConnections },
    );
    stops.push(() => database.$disconnect());
    const refreshPool = createRefreshPool(options.databaseUrl, {
      ...(options.databaseMaxConnections === undefined ? {} : { mainPoolSize: options.databaseMaxConnections }),
      maxWaitMs: refreshWaitMs.api,
    });
    stops.push(() => refreshPool.database.$disconnect());
    const walletConfig: WalletClientConfig = {
      ...sandboxWalletConfig(sandbox),
      timeoutMs: 5000,
      ...createWalletCallLog(database, logger),
    };
    const wallet = createWalletClient({ ...walletConfig, ...createWalletCallLog(database, logger, options.metrics) });
    stops.push(() => wallet.close());
    const encryptionKey = options.encryptionKey ?? randomBytes(32);
    const cipher = createTokenCipher(encryptionKey);
    const tokens = createTokenStore(cipher);
    const opsKey = randomBytes(32).toString('base64url');
    const connection = await Connection.connect({ address: options.temporalAddress });
    stops.push(() => connection.close());
    const temporal = new Client({
      connection,
      namespace: options.namespace,
      ...(options.dataConverter ? { dataConverter: options.dataConverter } : {}),
    });
    const taskQueue = `${options.taskQueuePrefix}-${randomBytes(6).toString('hex')}`;
    // As api/main.ts runs it: started before the first request, stopped before the connections close.
    const onboarding = createOnboardingDispatcher({
      database,
      temporal,
      taskQueue,
      logger,
      ...(options.metrics ? { metrics: options.metrics } : {}),
      onboardNow: createSessionOnboarding({ database, wallet, tokens, cipher, logger, refreshPool }),
    });
    onboarding.start();
    stops.push(() => onboarding.stop());
    const app = createApp({
      logger,
      ...(options.metrics ? { metrics: options.metrics } : {}),
      // Each test API counts sign-in attempts and wrong keys apart from the others on the shared
      // database (test files' requests all come from 127.0.0.1), unless it is told to share.
      hardening: { attemptCountScope: `test-${randomBytes(6).toString('hex')}`, ...options.hardening },
      readiness: { postgres: async () => {}, temporal: async () => {}, walletService: async () => {} },
      services: {
        database,
        refreshPool,
        tokens,
        cipher,
        fingerprintKey: deriveSubkey(encryptionKey, 'funding-fingerprint'),
        wallet,
        temporal,
        taskQueue,
        onboarding,
        opsApiKeys: [opsKey, ...(options.extraOpsKeys ?? [])],
        ...(options.loginSigningKey ? { loginSigningKey: options.loginSigningKey } : {}),
        connectReturnUrl: options.connectReturnUrl,
        sessionAllowedIps: options.sessionAllowedIps ?? [sandbox.partner.senderIp],
        ...(options.trustedProxies ? { trustedProxies: options.trustedProxies } : {}),
        ...(options.embeddedSessionTtlSeconds === undefined
          ? {}
          : { embeddedSessionTtlSeconds: options.embeddedSessionTtlSeconds }),
        ...(options.fundingLimits ? { fundingLimits: options.fundingLimits } : {}),
        ...(options.batches ? { batches: options.batches } : {}),
        fundingLanes: options.fundingLanes ?? 'off',
        ...(options.console
          ? { console: typeof options.console === 'function' ? await options.console(apiBase) : options.console }
          : {}),
        ...(options.publicUrl ? { publicUrl: options.publicUrl } : {}),
        ...(options.settlements ? { settlements: options.settlements } : {}),
        ...(options.consoleLive ? { consoleLive: options.consoleLive } : {}),
        ...(options.reportRecheckMs === undefined ? {} : { reportRecheckMs: options.reportRecheckMs }),
      },
    });
    server.on('request', app);
    answerParserRefusals(server, { publicUrl: options.publicUrl });
    return {
      apiBase,
      app,
      sandbox,
      database,
      refreshPool,
      walletConfig,
      wallet,
      encryptionKey,
      cipher,
      tokens,
      opsKey,
      connection,
      temporal,
      taskQueue,
      onboarding,
      async createWorker({ workflowBundle, metrics, shutdownGraceTime, promote, settlementNow }) {
        const workerConnection = await NativeConnection.connect({ address: options.temporalAddress });
        const workerWallet = createWalletClient({ ...walletConfig, ...createWalletCallLog(database, logger, metrics) });
        // As the worker process runs it: a version of the stack's own deployment (its task queue),
        // made current once registered (docs/changing-workflows.md).
        const version = bundleVersion(taskQueue, workflowBundle);
        const laneBell = createLaneBell({ databaseUrl: options.databaseUrl, channel: LANE_CHANNEL, logger });
        const worker = await Worker.create({
          connection: workerConnection,
          namespace: options.namespace,
          taskQueue,
          workflowBundle,
          workerDeploymentOptions: versionedWorkerOptions(version),
          maxHeartbeatThrottleInterval: WORKER_HEARTBEAT_THROTTLE_MS,
          ...(shutdownGraceTime === undefined ? {} : { shutdownGraceTime }),
          ...(options.dataConverter ? { dataConverter: options.dataConverter } : {}),
          activities: createActivities({
            database,
            refreshPool,
            wallet: workerWallet,
            cipher,
            logger,
            temporal,
            taskQueue,
            ...(metrics ? { metrics } : {}),
            laneBell,
            lanes: (options.fundingLanes ?? 'off') !== 'off',
            ...(settlementNow ? { settlementNow } : {}),
          }),
        });
        const done = worker.run().finally(() => laneBell.close());
        await promoteOnStart(temporal, version, promote ?? 'always', logger);
        return { worker, done, connection: workerConnection, wallet: workerWallet, buildId: version.buildId };
      },
      opsFetch: (path, init = {}) =>
        fetch(`${apiBase}${path}`, {
          ...init,
          headers: { authorization: `Bearer ${opsKey}`, ...(init.headers ?? {}) },
        }),
      close: stopAll,
    };
  } catch (error) {
    await stopAll().catch(() => undefined);
    throw error;
  }
}
