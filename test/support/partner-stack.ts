// The integration tests' stack: walletflow's API wired to a sandbox over HTTP (partner-api.ts) on
// the suite's PostgreSQL database and Temporal server (vitest's inject), with metrics registries,
// a worker in-process or, through workerEnv, as a process of its own, and vaults as a worker
// builds them.
import type { KeyOwners } from '../../domain/actor.ts';
import { fundingLanesModes, type FundingLanesMode } from '../../domain/funding.ts';
import { inject } from 'vitest';
import type { Client } from '@temporalio/client';
import { createTokenVault, type TokenVault } from '../../links/token-vault.ts';
import type { createApp, HardeningOptions } from '../../api/app.ts';
import type { Database, RefreshPool } from '../../lib/database.ts';
import { createLogger } from '../../lib/logger.ts';
import { createMetrics, type Metrics } from '../../lib/metrics.ts';
import { dataConverterFor, type PayloadKey } from '../../lib/payload-codec.ts';
import type { TokenStore } from '../../links/token-store.ts';
import { sandboxWalletVariables } from '../../stack/sandbox-wallet.ts';
import { sandboxAdminClient, type SandboxAdminClient } from '../../sandbox/admin-client.ts';
import type { RunningSandbox } from '../../sandbox/server.ts';
import { createWalletClient, type WalletClient, type WalletClientConfig } from '../../wallet/index.ts';
import { startPartnerApi, type InProcessWorker, type PartnerApi } from './partner-api.ts';
import type { OnboardingDispatcher } from '../../api/embedded/onboarding-dispatcher.ts';
import type { FundingLimits } from '../../ledger/limits.ts';
import { testDatabaseUrl } from './test-database.ts';
import type { ConsoleConfig } from '../../lib/config.ts';
import type { SettlementOptions } from '../../api/ops/settlement-service.ts';

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
  admin: SandboxAdminClient;
  database: Database;
  /** The token vault's own pool (the API's; the in-process worker's and createVault's vaults share it). */
  refreshPool: RefreshPool;
  wallet: WalletClient;
  /** What the stack's wallet clients are made from: a test's own client (a cold client-token cache, say). */
  walletConfig: WalletClientConfig;
  tokens: TokenStore;
  temporal: Client;
  taskQueue: string;
  /** The API's onboarding dispatcher (started with the stack). */
  onboarding: OnboardingDispatcher;
  /** The API's registry (also served at GET /metrics) and the in-process worker's. */
  apiMetrics: Metrics;
  workerMetrics: Metrics;
  /** Starts an in-process worker on this stack's task queue (once). */
  startWorker(): Promise<void>;
  /** Stops the in-process worker (drains it). */
  stopWorker(): Promise<void>;
  /** Another worker on this stack's task queue, of any bundle (a build of its own); the caller runs and stops it. */
  createWorker: PartnerApi['createWorker'];
  /** A vault as a worker builds it (its own wallet client and clock; the stack's pools unless given others). */
  createVault(options?: {
    now?: () => number;
    wallet?: Partial<WalletClientConfig>;
    lockTimeoutMs?: number;
    database?: Database;
    refreshPool?: RefreshPool;
  }): TokenVault;
  opsFetch(path: string, init?: RequestInit): Promise<Response>;
  /** A login URL for `partnerUserId` from POST /ops/links/login-urls. */
  mintLoginUrl(partnerUserId: string, mobile?: string): Promise<string>;
  /** Opens a fresh login URL: the wallet's login page, its state, and the login cookie the start set. */
  startLogin(partnerUserId: string, mobile?: string): Promise<{ location: URL; state: string; cookie: string }>;
  close(): Promise<void>;
  /** The Temporal this stack uses: its address and namespace. */
  temporalAddress: string;
  temporalNamespace: string;
}

/** FUNDING_LANES as the suite was started with (`off` when unset). */
export function suiteFundingLanes(): FundingLanesMode {
  const mode = process.env.FUNDING_LANES;
  if (mode === undefined || mode === '') return 'off';
  const known = fundingLanesModes.find((value) => value === mode);
  if (!known) throw new Error(`FUNDING_LANES=${mode}: not one of ${fundingLanesModes.join(', ')}`);
  return known;
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
    /** LOGIN_SIGNING_KEY: partner-signed login tokens. */
    loginSigningKey?: Buffer;
    /** OPS_API_KEYS entries besides the stack's own `opsKey` (a bare key: `default`, every scope). */
    extraOpsKeys?: string[];
    /** Section 10's funding limits (default: none). */
    fundingLimits?: FundingLimits;
    /** Funding batches' approval threshold (thousandths) and items at once (default: none waits, 32). */
    batches?: {
      approvalThreshold: bigint | null;
      maxInFlight: number;
      uploadBudgetBytes?: number;
      keyOwners?: KeyOwners;
    };
    /**
     * The ops console's sign-in and sessions, or a function of the API's address giving them (default: sign-in with an
     * ops key).
     */
    console?: ConsoleConfig | ((apiBase: string) => Promise<ConsoleConfig>);
    /** The API's PostgreSQL pool size (default: production's). */
    databaseMaxConnections?: number;
    /** The API's DATABASE_URL (default: the worker's test database as the suite's user): another role on it, say. */
    databaseUrl?: string;
    /** TOKEN_ENCRYPTION_KEY (and the fingerprint key from it); absent: a random one. */
    encryptionKey?: Buffer;
    /** Another Temporal than the suite's (a real server started by the test). */
    temporal?: { address: string; namespace: string };
    /** A day's settlement runs: retrieves at once, and small pages and activities (default: the API's). */
    settlements?: SettlementOptions;
    /** The console's live regions: a push interval and a stall bound of the test's (default: the API's). */
    consoleLive?: { pushEveryMs?: number; stallMs?: number };
    /** How often a streamed CSV asks again whether its actor may go on (default: the API's). */
    reportRecheckMs?: number;
    /**
     * FUNDING_LANES of the API and the in-process worker (default: the suite's FUNDING_LANES, else
     * `off`: a lane project runs the single-funding files again with `always`, docs/testing.md).
     */
    fundingLanes?: FundingLanesMode;
    /** The time the in-process worker's settlement activities take for the database's clock (absent: its own). */
    settlementNow?: () => number;
  } = {},
): Promise<PartnerStack> {
  const logger = options.logTo
    ? createLogger({ level: 'trace', destination: options.logTo })
    : createLogger({ level: 'silent' });
  const apiMetrics = createMetrics();
  const workerMetrics = createMetrics();
  const dataConverter = dataConverterFor(options.payloadKeys);
  const temporal = options.temporal ?? { address: inject('temporalAddress'), namespace: inject('temporalNamespace') };
  const api = await startPartnerApi({
    databaseUrl: options.databaseUrl ?? testDatabaseUrl(),
    temporalAddress: temporal.address,
    namespace: temporal.namespace,
    // Test files share one Temporal server: a task queue per stack.
    taskQueuePrefix: 'walletflow-test',
    logger,
    metrics: apiMetrics,
    ...(dataConverter ? { dataConverter } : {}),
    ...(options.hardening ? { hardening: options.hardening } : {}),
    connectReturnUrl: options.connectReturnUrl,
    ...(options.extraOpsKeys ? { extraOpsKeys: options.extraOpsKeys } : {}),
    ...(options.loginSigningKey ? { loginSigningKey: options.loginSigningKey } : {}),
    ...(options.sessionAllowedIps ? { sessionAllowedIps: options.sessionAllowedIps } : {}),
    ...(options.trustedProxies ? { trustedProxies: options.trustedProxies } : {}),
    ...(options.embeddedSessionTtlSeconds === undefined
      ? {}
      : { embeddedSessionTtlSeconds: options.embeddedSessionTtlSeconds }),
    ...(options.fundingLimits ? { fundingLimits: options.fundingLimits } : {}),
    ...(options.batches ? { batches: options.batches } : {}),
    ...(options.console ? { console: options.console } : {}),
    ...(options.databaseMaxConnections === undefined ? {} : { databaseMaxConnections: options.databaseMaxConnections }),
    ...(options.encryptionKey ? { encryptionKey: options.encryptionKey } : {}),
    ...(options.settlements ? { settlements: options.settlements } : {}),
    ...(options.consoleLive ? { consoleLive: options.consoleLive } : {}),
    ...(options.reportRecheckMs === undefined ? {} : { reportRecheckMs: options.reportRecheckMs }),
    fundingLanes: options.fundingLanes ?? suiteFundingLanes(),
  });
  const { sandbox, database, refreshPool, tokens, walletConfig, encryptionKey, taskQueue } = api;
  let running: InProcessWorker | undefined;
  const mintLoginUrl = async (partnerUserId: string, mobile?: string) => {
    const response = await api.opsFetch('/ops/links/login-urls', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ partnerUserId, ...(mobile ? { mobile } : {}) }),
    });
    if (response.status !== 201) throw new Error(`login URL: ${response.status} ${await response.text()}`);
    return ((await response.json()) as { url: string }).url;
  };
  const vaultWallets: WalletClient[] = [];
  return {
    apiBase: api.apiBase,
    app: api.app,
    temporalAddress: temporal.address,
    temporalNamespace: temporal.namespace,
    opsKey: api.opsKey,
    encryptionKey,
    workerEnv: () => ({
      ...process.env,
      NODE_ENV: 'test',
      LOG_LEVEL: 'warn',
      DATABASE_URL: testDatabaseUrl(),
      TEMPORAL_ADDRESS: temporal.address,
      TEMPORAL_NAMESPACE: temporal.namespace,
      TEMPORAL_TASK_QUEUE: taskQueue,
      WORKFLOW_BUNDLE_PATH: inject('workflowBundlePath'),
      TOKEN_ENCRYPTION_KEY: encryptionKey.toString('base64'),
      ...sandboxWalletVariables(sandbox),
      WALLET_TIMEOUT_MS: '5000',
      WORKER_METRICS_PORT: '0',
    }),
    sandbox,
    admin: sandboxAdminClient(sandbox.url),
    database,
    refreshPool,
    wallet: api.wallet,
    walletConfig,
    tokens,
    temporal: api.temporal,
    taskQueue,
    onboarding: api.onboarding,
    apiMetrics,
    workerMetrics,
    async startWorker() {
      if (running) return;
      running = await api.createWorker({
        workflowBundle: { codePath: inject('workflowBundlePath') },
        metrics: workerMetrics,
        ...(options.settlementNow ? { settlementNow: options.settlementNow } : {}),
      });
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
    createWorker: api.createWorker,
    createVault: (vaultOptions = {}) => {
      const vaultWallet = createWalletClient({
        ...walletConfig,
        ...vaultOptions.wallet,
        ...(vaultOptions.now ? { now: vaultOptions.now } : {}),
      });
      vaultWallets.push(vaultWallet);
      return createTokenVault({
        database: vaultOptions.database ?? database,
        refreshPool: vaultOptions.refreshPool ?? refreshPool,
        tokens,
        wallet: vaultWallet,
        logger,
        ...(vaultOptions.now ? { now: vaultOptions.now } : {}),
        ...(vaultOptions.lockTimeoutMs === undefined ? {} : { lockTimeoutMs: vaultOptions.lockTimeoutMs }),
      });
    },
    opsFetch: api.opsFetch,
    mintLoginUrl,
    async startLogin(partnerUserId, mobile) {
      const response = await fetch(await mintLoginUrl(partnerUserId, mobile), { redirect: 'manual' });
      if (response.status !== 302) throw new Error(`login start answered ${response.status}`);
      const location = new URL(response.headers.get('location')!);
      return {
        location,
        state: location.searchParams.get('state')!,
        cookie: response.headers.getSetCookie()[0]!.split(';')[0]!,
      };
    },
    close: async () => {
      if (running) {
        running.worker.shutdown();
        await running.done.catch(() => undefined);
        await running.connection.close();
        await running.wallet.close();
      }
      await Promise.allSettled(vaultWallets.map((w) => w.close()));
      await api.close();
    },
  };
}
