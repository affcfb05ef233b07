// The worker process: polls walletflow's task queue and runs its workflows and activities.
// Development bundles workflows from source; SIGINT/SIGTERM drain in-flight tasks before exit.
import { createLaneBell, LANE_CHANNEL } from '../lib/lane-bell.ts';
import { LANE_COUNT, startFundLane } from '../workflows/fund-lane.contract.ts';
import { readFileSync } from 'node:fs';
import { Client } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import { createActivities } from '../activities/index.ts';
import { ConfigError, loadConfig, requireResolved } from '../lib/config.ts';
import { createRefreshPool, createWorkerDatabase, refreshWaitMs } from '../lib/database.ts';
import { createLogger } from '../lib/logger.ts';
import { createMetrics } from '../lib/metrics.ts';
import { dataConverterFor } from '../lib/payload-codec.ts';
import { temporalConnectionOptions } from '../lib/temporal.ts';
import { createTokenCipher } from '../lib/token-cipher.ts';
import { createWalletCallLog } from '../audit/wallet-call-log.ts';
import { createWalletClient } from '../wallet/index.ts';
import { installTemporalRuntime, serveWorkerMetrics } from './metrics.ts';
import { checkWalletTimeout } from './activity-timeouts.ts';
import { applyWorkerHeapPolicy, nativeAllocator } from './heap-policy.ts';
import { ensurePurgeSchedule } from './purge-schedule.ts';
import { ensureSweepSchedule } from './sweep-schedule.ts';
import { tracedBundlePath, tracedBundleProblem } from '../lib/tracing-bundle.ts';
import { buildIdOf, bundleWorkflows } from '../lib/workflow-bundle.ts';
import { isCurrentVersion, promoteOnStart, versionedWorkerOptions } from '../lib/worker-deployment.ts';
import { startDeliverWebhooks } from '../workflows/deliver-webhooks.contract.ts';
import { WORKER_HEARTBEAT_THROTTLE_MS } from '../workflows/fund-batch.contract.ts';

let config;
try {
  config = requireResolved(loadConfig());
  checkWalletTimeout(config.walletTimeoutMs);
  // Workflow spans come from the traced twin of a prebuilt bundle (npm run build writes both).
  const traced = tracedBundleProblem(config);
  if (traced) throw new ConfigError([traced]);
} catch (error) {
  if (error instanceof ConfigError) {
    console.error(`walletflow worker: ${error.message}`);
    process.exit(78);
  }
  throw error;
}

applyWorkerHeapPolicy();
const logger = createLogger({ level: config.logLevel, name: 'worker', format: config.logFormat });
// Tracing: loaded only when configured, before the clients and the worker it instruments are made.
const tracing = config.tracing
  ? (await import('../lib/tracing.ts')).startTracing(config.tracing, { defaultServiceName: 'walletflow-worker' })
  : undefined;
if (tracing) logger.info({ serviceName: config.tracing?.serviceName ?? 'walletflow-worker' }, 'tracing on');
const metrics = createMetrics({ defaultMetrics: true });
// The SDK's runtime (its logger, its exporter) must be installed before the first connection creates it.
const { sdkMetricsUrl } = await installTemporalRuntime(logger, { prometheus: config.workerMetricsPort > 0 });
const metricsServer = sdkMetricsUrl
  ? await serveWorkerMetrics({ metrics, host: config.host, port: config.workerMetricsPort, sdkMetricsUrl }).catch(
      (error: Error) => {
        // Metrics are not worth a worker that does not run: say so loudly and carry on.
        logger.error(
          { err: error, port: config.workerMetricsPort },
          'worker metrics cannot listen (WORKER_METRICS_PORT); running without them',
        );
        return undefined;
      },
    )
  : undefined;
if (metricsServer) logger.info({ url: metricsServer.url }, 'worker metrics listening');
// Transactions wait in line in front of the pool (lib/database.ts workerAdmissionLimits) instead
// of timing out inside Prisma; the token vault's refresh lock has a small pool of its own, never a
// connection the audit rows of its own wallet calls need (docs/token-refresh-lock.md).
const { database } = createWorkerDatabase(config.databaseUrl);
const refreshPool = createRefreshPool(config.databaseUrl, { maxWaitMs: refreshWaitMs.worker });
const wallet = createWalletClient({
  ...config.wallet,
  ...createWalletCallLog(database, logger, metrics),
  ...(tracing ? { onCallStart: tracing.walletCallSpan } : {}),
});
/**
 * Temporal may start after the worker (a restart of both, a compose `up`): retry for a while with
 * backoff instead of exiting, so a supervisor does not have to. SIGTERM meanwhile stops at once.
 */
const temporalAddress = config.temporal.address;
async function connectWithRetry<T>(what: string, connect: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + 120_000;
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await connect();
    } catch (error) {
      if (Date.now() >= deadline) throw error;
      const delayMs = Math.min(5000, 250 * 2 ** (attempt - 1));
      logger.warn(
        { address: temporalAddress, attempt, retryInMs: delayMs, err: error as Error },
        `${what}: Temporal not reachable yet`,
      );
      for (const until = Date.now() + delayMs; Date.now() < until;) {
        if (stopRequested) {
          logger.info('stopped before Temporal was reachable');
          process.exit(0);
        }
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }
  }
}
let stopRequested = false;
const requestStop = () => {
  stopRequested = true;
};
process.on('SIGTERM', requestStop).on('SIGINT', requestStop);
const connectionOptions = temporalConnectionOptions(temporalAddress, config.temporal.security);
// One connection for the worker and for the client its activities and schedules use: the SDK's
// native one serves both (a second, JavaScript gRPC connection cost ~40 MiB of heap;
// docs/benchmarks.md, memory).
const connection = await connectWithRetry('worker connection', () => NativeConnection.connect(connectionOptions));
process.off('SIGTERM', requestStop).off('SIGINT', requestStop);
const dataConverter = dataConverterFor(config.payloadKeys);
const temporal = new Client({
  connection,
  namespace: config.temporal.namespace,
  ...(dataConverter ? { dataConverter } : {}),
  ...(tracing ? { interceptors: tracing.clientInterceptors } : {}),
});
// The workflow code this worker runs, and its build id (derived from the code: a new build, a new
// version of the deployment; docs/changing-workflows.md): a prebuilt bundle (production), or one
// bundled here from the sources (development). The build id is the plain bundle's, with tracing on
// too: its traced twin adds interceptors and no command (test/replay/traced-bundle.replay.test.ts,
// both ways), so turning tracing on or off keeps the build, and the runs pinned to it keep workers.
const plainCode = config.workflowBundlePath
  ? readFileSync(config.workflowBundlePath, 'utf8')
  : await bundleWorkflows({ warnings: false });
const workflowCode = !tracing
  ? plainCode
  : config.workflowBundlePath
    ? readFileSync(tracedBundlePath(config.workflowBundlePath), 'utf8')
    : await bundleWorkflows({ warnings: false, tracing: true });
const version = { deploymentName: config.workerDeployment.name, buildId: buildIdOf(plainCode) };
// A lane's run waits on it for fundings that joined the lane (lib/lane-bell.ts).
const laneBell = createLaneBell({ databaseUrl: config.databaseUrl, channel: LANE_CHANNEL, logger });
const worker = await Worker.create({
  connection,
  namespace: config.temporal.namespace,
  taskQueue: config.temporal.taskQueue,
  maxConcurrentActivityTaskExecutions: config.workerMaxConcurrentActivities,
  // A batch chunk's heartbeats reach Temporal well within its time-out (workflows/fund-batch.contract.ts).
  maxHeartbeatThrottleInterval: WORKER_HEARTBEAT_THROTTLE_MS,
  ...(dataConverter ? { dataConverter } : {}),
  workflowBundle: { code: workflowCode },
  workerDeploymentOptions: versionedWorkerOptions(version),
  // Tracing: activity spans here; workflow spans from the bundle's interceptors, out through the sink.
  ...(tracing ? { interceptors: tracing.workerInterceptors, sinks: tracing.workflowSinks } : {}),
  activities: createActivities({
    database,
    refreshPool,
    wallet,
    walletTimeoutMs: config.walletTimeoutMs,
    cipher: createTokenCipher(config.tokenEncryptionKeys),
    logger,
    temporal,
    taskQueue: config.temporal.taskQueue,
    metrics,
    batchMaxInFlight: config.batches.maxInFlight,
    laneBell,
    lanes: config.fundingLanes !== 'off',
    buildIsCurrent: () => isCurrentVersion(temporal, version),
    // Production: webhooks go to public https endpoints only, checked at every attempt
    // (webhooks/target-guard.ts).
    webhooks: { retry: config.webhooks.retry, publicTargetsOnly: config.nodeEnv === 'production' },
  }),
});
const schedule = await ensureSweepSchedule(temporal, {
  taskQueue: config.temporal.taskQueue,
  everyMinutes: config.sweep.everyMinutes,
  olderThanSeconds: config.sweep.olderThanSeconds,
});
logger.info({ schedule }, 'sweep schedule ready');
/**
 * The lanes (workflows/fund-lane.ts): running for good once any worker started them, unless FUNDING_LANES is off.
 * Started once this build is the current version: a lane started before would run on no build, and while no version is
 * current (the first versioned deploy, WORKER_PROMOTE=never) the previous release's unversioned workers, which have no
 * fundLane, would fail its every task until a promotion.
 */
const lanes = { mode: config.fundingLanes, taskQueue: config.temporal.taskQueue };
async function startLanes(): Promise<void> {
  if (lanes.mode === 'off') return;
  for (let lane = 0; lane < LANE_COUNT; lane += 1) await startFundLane(temporal, { taskQueue: lanes.taskQueue, lane });
  logger.info({ lanes: LANE_COUNT, mode: lanes.mode }, 'funding lanes running');
}
// The webhook deliverer: one per deployment, started by whichever worker comes first.
const deliverer = await startDeliverWebhooks(temporal, {
  taskQueue: config.temporal.taskQueue,
  input: { pollIntervalMs: config.webhooks.pollIntervalMs },
});
logger.info({ workflowId: deliverer.workflowId }, 'webhook deliverer running');
const purgeSchedule = await ensurePurgeSchedule(temporal, {
  taskQueue: config.temporal.taskQueue,
  everyMinutes: config.purge.everyMinutes,
  retentionSeconds: config.purge.retentionSeconds,
});
logger.info({ schedule: purgeSchedule }, 'purge schedule ready');
logger.info(
  {
    taskQueue: config.temporal.taskQueue,
    namespace: config.temporal.namespace,
    maxConcurrentActivities: config.workerMaxConcurrentActivities,
    allocator: nativeAllocator(),
    ...version,
  },
  'worker polling',
);
try {
  // Once its pollers have registered this build, it becomes the current version if WORKER_PROMOTE says so.
  const running = worker.run();
  void promoteOnStart(temporal, version, config.workerDeployment.promote, logger)
    .catch((error: Error) => {
      logger.error(
        { err: error.message, ...version },
        'worker deployment: could not make this build current; walletflow deploy promote does it',
      );
      return 'left' as const;
    })
    // Left: the current build's workers run the lanes (and the API and the sweep start any that is missing).
    .then((outcome) => (outcome === 'left' ? undefined : startLanes()))
    .catch((error: Error) => logger.error({ err: error.message }, 'funding lanes: could not start them'));
  await running;
} finally {
  await connection.close();
  await laneBell.close();
  await wallet.close();
  await database.$disconnect();
  await refreshPool.database.$disconnect();
  await metricsServer?.close();
  await tracing?.shutdown();
  logger.info('worker stopped');
}
process.exit(0);
