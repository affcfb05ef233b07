// The API process: loads configuration, connects PostgreSQL and Temporal, serves the app, and
// on SIGTERM/SIGINT finishes in-flight requests before closing its connections.
import type { Server } from 'node:http';
import { ConfigError, loadConfig, requireResolved } from '../lib/config.ts';
import { createApiDatabase, createRefreshPool, pingDatabase, refreshWaitMs } from '../lib/database.ts';
import { createLogger } from '../lib/logger.ts';
import { createMetrics } from '../lib/metrics.ts';
import { connectTemporal, pingTemporal } from '../lib/temporal.ts';
import { createTokenCipher } from '../lib/token-cipher.ts';
import { createTokenStore } from '../links/token-store.ts';
import { createSessionOnboarding } from '../links/embedded-onboarding.ts';
import { createWalletCallLog } from '../audit/wallet-call-log.ts';
import { createOpsActionLog } from '../audit/ops-actions.ts';
import { createWalletClient } from '../wallet/index.ts';
import { checkWalletServiceReachable } from '../wallet/reachability.ts';
import { createApp } from './app.ts';
import { answerParserRefusals } from './http/parser-refusals.ts';
import { createLedger } from '../ledger/ledger.ts';
import { retiredOwnerNames } from '../lib/ops-keys.ts';
import { createOnboardingDispatcher } from './embedded/onboarding-dispatcher.ts';

let config;
try {
  config = requireResolved(loadConfig());
} catch (error) {
  if (error instanceof ConfigError) {
    console.error(`walletflow api: ${error.message}`);
    process.exit(78);
  }
  throw error;
}

const logger = createLogger({ level: config.logLevel, name: 'api', format: config.logFormat });
// Tracing: loaded only when configured, before the clients it instruments are made.
const tracing = config.tracing
  ? (await import('../lib/tracing.ts')).startTracing(config.tracing, { defaultServiceName: 'walletflow-api' })
  : undefined;
if (tracing) logger.info({ serviceName: config.tracing?.serviceName ?? 'walletflow-api' }, 'tracing on');
const metrics = createMetrics({ defaultMetrics: true });
// Write transactions are admitted in line in front of the pool (lib/admission.ts): a burst waits or is
// answered 503 with Retry-After, never 500.
const { database } = createApiDatabase(config.databaseUrl);
// The token vault's refresh lock on a small pool of its own (lib/database.ts): never a connection
// the audit rows of its own wallet calls need.
const refreshPool = createRefreshPool(config.databaseUrl, { maxWaitMs: refreshWaitMs.api });
const temporal = connectTemporal(
  config.temporal.address,
  config.temporal.namespace,
  config.payloadKeys,
  config.temporal.security,
  tracing?.clientInterceptors,
);
const walletUrls = config.wallet;
const cipher = createTokenCipher(config.tokenEncryptionKeys);
const wallet = createWalletClient({
  ...config.wallet,
  ...createWalletCallLog(database, logger, metrics),
  ...(tracing ? { onCallStart: tracing.walletCallSpan } : {}),
});
// Starts the onboarding of the sessions the session URL stores, off the request path; its first
// sweep picks up what a previous process stored but did not start.
const onboarding = createOnboardingDispatcher({
  database,
  temporal: temporal.client,
  taskQueue: config.temporal.taskQueue,
  logger,
  metrics,
  // A user already on the landing page is onboarded here, ahead of any backlog (docs/architecture.md, admission).
  onboardNow: createSessionOnboarding({
    database,
    wallet,
    tokens: createTokenStore(cipher),
    cipher,
    logger,
    refreshPool,
    walletTimeoutMs: config.wallet.timeoutMs,
  }),
});
if (config.opsApiKeys.length === 0) logger.warn('OPS_API_KEYS is empty: every /ops request will be refused');
const retiredOwners = retiredOwnerNames(config.batches.keyOwners, config.opsApiKeys);
if (retiredOwners.length > 0)
  logger.warn(
    { names: retiredOwners },
    'OPS_KEY_OWNERS names keys OPS_API_KEYS does not have: kept for the batches a retired key stored (drop each once none awaits approval), or a typo that ties no key',
  );
// The audit of ops writes, written behind the answers and drained before the process ends.
const opsAudit = createOpsActionLog(database, logger);
const app = createApp({
  logger,
  metrics,
  metricsToken: config.metricsToken,
  tracing,
  hardening: {
    publicUrl: config.publicUrl,
    publicRateLimitPerMinute: config.rateLimits.publicPerMinute,
    sessionRateLimitPerMinute: config.rateLimits.sessionPerMinute,
    webSessionPollLimitPerMinute: config.rateLimits.webSessionPollsPerMinute,
  },
  readiness: {
    postgres: () => pingDatabase(database),
    temporal: () => pingTemporal(temporal, config.temporal.namespace),
    walletService: () => checkWalletServiceReachable(walletUrls),
  },
  services: {
    production: config.nodeEnv === 'production',
    database,
    refreshPool,
    tokens: createTokenStore(cipher),
    cipher,
    fingerprintKey: config.fingerprintKey,
    wallet,
    temporal: temporal.client,
    taskQueue: config.temporal.taskQueue,
    temporalNamespace: config.temporal.namespace,
    onboarding,
    opsApiKeys: config.opsApiKeys,
    opsAudit,
    loginSigningKey: config.loginSigningKey,
    connectReturnUrl: config.connectReturnUrl,
    trustedProxies: config.trustedProxies,
    sessionAllowedIps: config.sessionAllowedIps,
    publicUrl: config.publicUrl,
    embeddedSessionTtlSeconds: config.embeddedSessionTtlSeconds,
    webSessionTtlSeconds: config.webSessionTtlSeconds,
    treasuryLimit: config.treasuryLimit,
    fundingLimits: config.fundingLimits,
    settlementTimeZone: config.settlementTimeZone,
    settlements: { maxInFlight: config.settlement.maxInFlight, maxRuns: config.settlement.maxRuns },
    batches: config.batches,
    fundingLanes: config.fundingLanes,
    console: config.console,
  },
});
// The treasury's floor follows TREASURY_LIMIT (unset: no floor). A treasury already past the limit is held where it
// stands, its floor raised by the ledger's entry trigger as money comes back (ledger/ledger.ts). Applied at start and
// again every minute: a database away at start, or a floor another release set during a roll, is mended within one.
const treasuryLedger = createLedger({ treasuryLimit: config.treasuryLimit ?? null });
let treasuryPastLimit = false;
const applyTreasuryLimit = () =>
  treasuryLedger.applyTreasuryLimit(database).then(
    ({ floor, pastLimit }) => {
      if (pastLimit && !treasuryPastLimit)
        logger.warn(
          { floor },
          'the treasury is past TREASURY_LIMIT: it funds nothing more until money comes back (adjust it from CAPITAL)',
        );
      else if (!pastLimit && treasuryPastLimit) logger.info({ floor }, 'the treasury is within TREASURY_LIMIT again');
      treasuryPastLimit = pastLimit;
    },
    (error: Error) =>
      logger.error({ err: error.message }, 'could not apply TREASURY_LIMIT now: applied again in a minute'),
  );
await applyTreasuryLimit();
const treasuryLimitTimer = setInterval(() => void applyTreasuryLimit(), 60_000);
treasuryLimitTimer.unref();

onboarding.start();
// Express calls it with the error when listening fails: the 'error' handler below answers that.
const listening = (error?: Error) => {
  if (error) return;
  const address = server.address();
  const url = typeof address === 'object' && address ? `http://${address.address}:${address.port}` : String(address);
  logger.info({ url, ...(config.listenFd === undefined ? {} : { fd: config.listenFd }) }, 'api listening');
};
// LISTEN_FD: the socket the starting process handed over, already bound; else PORT on HOST.
const server: Server =
  config.listenFd === undefined
    ? app.listen(config.port, config.host, listening)
    : app.listen({ fd: config.listenFd }, listening);
// A client must send its whole request within 30 s, its headers within 10 s: slow senders cannot
// hold connections open (Node's defaults are 300 s and 60 s).
server.headersTimeout = 10_000;
server.requestTimeout = 30_000;
answerParserRefusals(server, { publicUrl: config.publicUrl });
server.on('error', (error) => {
  logger.fatal({ err: error }, 'api cannot listen');
  process.exit(1);
});

let stopping = false;
async function shutdown(signal: string): Promise<void> {
  if (stopping) return;
  stopping = true;
  logger.info({ signal }, 'api stopping: finishing in-flight requests');
  clearInterval(treasuryLimitTimer);
  server.close();
  server.closeIdleConnections();
  // A keep-alive connection becomes idle when its in-flight request is answered: close it then,
  // not after the keep-alive timeout.
  const sweep = setInterval(() => server.closeIdleConnections(), 100);
  sweep.unref();
  const force = setTimeout(() => server.closeAllConnections(), 10_000);
  force.unref();
  await new Promise((resolve) => server.once('close', resolve));
  // No new sessions now: the pass in flight finishes; what is left waits in the outbox for the next process.
  await onboarding.stop();
  if (!(await opsAudit.drain(5_000)))
    logger.error({ waiting: opsAudit.state().waiting }, 'ops audit rows not written before the api stopped');
  await Promise.allSettled([
    database.$disconnect(),
    refreshPool.database.$disconnect(),
    temporal.close(),
    wallet.close(),
    tracing?.shutdown(),
  ]);
  process.exit(0);
}
process.on('SIGTERM', () => void shutdown('SIGTERM'));
process.on('SIGINT', () => void shutdown('SIGINT'));
