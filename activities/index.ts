// Activities: the side effects workflows schedule, built by a factory from injected dependencies
// so tests and the worker wire the same code to real services. Each runs in a log context naming
// its workflow and activity type (activities/log-context.ts), and fails retryable when the
// database refused it for load (activities/overload-retry.ts).
import { databaseNow, type Database, type RefreshPool } from '../lib/database.ts';
import type { Logger } from '../lib/logger.ts';
import type { Metrics } from '../lib/metrics.ts';
import type { TokenCipher } from '../lib/token-cipher.ts';
import { createTokenStore } from '../links/token-store.ts';
import type { Client } from '@temporalio/client';
import type { WalletClient } from '../wallet/index.ts';
import { createSweepActivities } from './sweep.ts';
import { createSweepMarks } from '../fundings/sweep-marks.ts';
import { createEmbeddedSessionActivities } from './embedded-session.ts';
import { createFundingActivities } from './funding.ts';
import { createBatchActivities } from './batch.ts';
import { createCarriedChunks } from './carried-chunk.ts';
import { createLaneActivities } from './funding-lane.ts';
import { silentLaneBell, type LaneBell } from '../lib/lane-bell.ts';
import { createPaymentActivities } from './payment.ts';
import { createPurgeActivities } from './purge.ts';
import { createSettlementActivities } from './settlement.ts';
import { createSettlementRuns } from '../ledger/settlement-runs.ts';
import { withActivityLogContext } from './log-context.ts';
import { withOverloadRetry } from './overload-retry.ts';
import { createTokenVault } from '../links/token-vault.ts';
import { createFundingRecord } from '../fundings/funding-record.ts';
import { createBatchItemsRecord } from '../fundings/batch-items-record.ts';
import { createClaimedFundingsRecord } from '../fundings/claimed-fundings-record.ts';
import { createBatchRecord } from '../fundings/batch-record.ts';
import { createPaymentRecord } from '../payments/payment-record.ts';
import { createWebhookDeliverer } from '../webhooks/deliverer.ts';
import { createWebhookStore, defaultWebhookRetryPolicy, type WebhookRetryPolicy } from '../webhooks/webhook-store.ts';
import { createWebhookActivities } from './webhooks.ts';

export interface ActivityDependencies {
  database: Database;
  /** The token vault's own pool and line (lib/database.ts): the refresh lock never takes a main-pool connection. */
  refreshPool: RefreshPool;
  wallet: WalletClient;
  cipher: TokenCipher;
  logger: Logger;
  /** For the sweep, which looks at workflows and may start one. */
  temporal: Client;
  taskQueue: string;
  /** The worker's registry (lib/metrics.ts); absent: nothing is counted. */
  metrics?: Metrics;
  now?: () => number;
  /** Tests only: the time the settlement activities take for the database's clock (a day's end and its grace). */
  settlementNow?: () => number;
  /** Tests only: the settlement's pause between a retrieve's tries (activities/settlement.ts retryPauseMs). */
  settlementRetryPauseMs?: number;
  /** WALLET_TIMEOUT_MS: how long the token vault's refresh lock must live (links/token-vault.ts). */
  walletTimeoutMs?: number;
  /** BATCH_MAX_IN_FLIGHT: for a batch runner the sweep starts again (default 32). */
  batchMaxInFlight?: number;
  /** Wakes a lane's run when a funding joins it (lib/lane-bell.ts); absent: lanes read their table every second. */
  laneBell?: LaneBell;
  /** Whether the sweep keeps the lanes running (FUNDING_LANES is not `off`); absent: it does not. */
  lanes?: boolean;
  /** Whether this worker's build is the current version (activities/sweep.ts); absent: it is. */
  buildIsCurrent?: () => Promise<boolean>;
  /** Tests only: how long the sweep's long passes go on in one sweep (activities/sweep.ts PASS_BUDGET_MS). */
  sweepPassBudgetMs?: number;
  /** The webhook deliverer's retry schedule and per-attempt time-out; absent: 24 hours of retries, 10 s. */
  webhooks?: { retry?: WebhookRetryPolicy; requestTimeoutMs?: number; publicTargetsOnly?: boolean };
}

export function createActivities(deps: ActivityDependencies) {
  // exactOptionalPropertyTypes: pass `metrics` only when there is one.
  const metrics = deps.metrics ? { metrics: deps.metrics } : {};
  const tokens = createTokenStore(deps.cipher);
  const vault = createTokenVault({
    database: deps.database,
    refreshPool: deps.refreshPool,
    tokens,
    wallet: deps.wallet,
    logger: deps.logger,
    ...metrics,
    ...(deps.now ? { now: deps.now } : {}),
    ...(deps.walletTimeoutMs === undefined ? {} : { walletTimeoutMs: deps.walletTimeoutMs }),
  });
  // One record per aggregate: the only writers of its tables, shared by the workflow's steps and the sweep.
  const fundings = createFundingRecord({ database: deps.database, cipher: deps.cipher, ...metrics });
  // A batch's items are fundings too, stored and ended many at a time (the batch's store and cancel).
  const batchItems = createBatchItemsRecord({ database: deps.database, cipher: deps.cipher, ...metrics });
  // The fundings a pass claimed, one or many: their moves set-based (the one pass, a batch chunk).
  const claimed = createClaimedFundingsRecord({ database: deps.database, ...metrics });
  const payments = createPaymentRecord({ database: deps.database, ...metrics });
  const batches = createBatchRecord({ database: deps.database, fundings, batchItems });
  // One set of funding activities: a batch item's one pass is the same code, record, wallet and
  // vault as a single funding's.
  const funding = createFundingActivities({
    fundings,
    claimed,
    wallet: deps.wallet,
    vault,
    logger: deps.logger,
    ...(deps.walletTimeoutMs === undefined ? {} : { walletTimeoutMs: deps.walletTimeoutMs }),
  });
  // The chunk pass is the batch activities' own tool, not an activity of its own.
  const { fundItemsInOnePass: _chunkPass, fundNextInLane: _lanePass, ...fundWalletActivities } = funding;
  const deliverer = createWebhookDeliverer({
    store: createWebhookStore({ database: deps.database, cipher: deps.cipher }),
    cipher: deps.cipher,
    logger: deps.logger,
    retry: deps.webhooks?.retry ?? defaultWebhookRetryPolicy,
    ...(deps.webhooks?.requestTimeoutMs === undefined ? {} : { requestTimeoutMs: deps.webhooks.requestTimeoutMs }),
    publicTargetsOnly: deps.webhooks?.publicTargetsOnly === true,
  });
  return withActivityLogContext(
    withOverloadRetry({
      ...createEmbeddedSessionActivities({
        database: deps.database,
        wallet: deps.wallet,
        tokens,
        cipher: deps.cipher,
        logger: deps.logger,
        refreshPool: deps.refreshPool,
        ...(deps.walletTimeoutMs === undefined ? {} : { walletTimeoutMs: deps.walletTimeoutMs }),
      }),
      ...fundWalletActivities,
      ...createBatchActivities({
        batches,
        fundings,
        funding,
        temporal: deps.temporal,
        taskQueue: deps.taskQueue,
        logger: deps.logger,
      }),
      ...createLaneActivities({
        fundings,
        chunks: createCarriedChunks({
          fundings,
          funding,
          temporal: deps.temporal,
          taskQueue: deps.taskQueue,
          logger: deps.logger,
        }),
        bell: deps.laneBell ?? silentLaneBell,
      }),
      ...createPaymentActivities({
        payments,
        wallet: deps.wallet,
        vault,
        logger: deps.logger,
        ...(deps.walletTimeoutMs === undefined ? {} : { walletTimeoutMs: deps.walletTimeoutMs }),
      }),
      ...createSweepActivities({
        fundings,
        marks: createSweepMarks(deps.database),
        payments,
        batches: { listActive: batches.listActive, maxInFlight: deps.batchMaxInFlight ?? 32 },
        lanes: deps.lanes === true,
        ...(deps.buildIsCurrent ? { buildIsCurrent: deps.buildIsCurrent } : {}),
        wallet: deps.wallet,
        temporal: deps.temporal,
        taskQueue: deps.taskQueue,
        logger: deps.logger,
        databaseNow: () => databaseNow(deps.database),
        ...(deps.sweepPassBudgetMs === undefined ? {} : { passBudgetMs: deps.sweepPassBudgetMs }),
        ...metrics,
      }),
      ...createWebhookActivities({ deliverer }),
      ...createPurgeActivities({
        database: deps.database,
        logger: deps.logger,
        ...(deps.now ? { now: deps.now } : {}),
      }),
      ...createSettlementActivities({
        database: deps.database,
        runs: createSettlementRuns(deps.database),
        wallet: deps.wallet,
        logger: deps.logger,
        ...(deps.settlementNow ? { now: deps.settlementNow } : {}),
        ...(deps.settlementRetryPauseMs !== undefined ? { retryPauseMs: deps.settlementRetryPauseMs } : {}),
      }),
    }),
  );
}

export type Activities = ReturnType<typeof createActivities>;
