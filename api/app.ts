// The Express app factory: security headers first, then one router per area; the ops API's error
// shape (problem details) for whatever no area answers.
import { STATUS_CODES } from 'node:http';
import express, { type ErrorRequestHandler } from 'express';
import { defaultRateLimits } from '../lib/config.ts';
import type { Database, RefreshPool } from '../lib/database.ts';
import type { Logger } from '../lib/logger.ts';
import { createMetrics, type Metrics } from '../lib/metrics.ts';
import { readWorkload, registerWorkloadGauges } from '../lib/workload-gauges.ts';
import type { TokenStore } from '../links/token-store.ts';
import type { OpsKey } from '../lib/ops-keys.ts';
import type { Client as TemporalClient } from '@temporalio/client';
import type { TokenCipher } from '../lib/token-cipher.ts';
import type { WalletClient } from '../wallet/index.ts';
import { createFundingService } from '../fundings/funding-service.ts';
import { createFundingPaths } from '../fundings/funding-paths.ts';
import { createLaneAnnouncer } from '../lib/lane-bell.ts';
import type { FundingLanesMode } from '../domain/funding.ts';
import { opsFundingsRouter } from './ops/fundings-routes.ts';
import { createPaymentService } from '../payments/payment-service.ts';
import { opsPaymentsRouter } from './ops/payments-routes.ts';
import { connectRouter } from './connect/connect-routes.ts';
import { docsRouter } from './docs/docs-routes.ts';
import { buildOpenApiDocument } from './docs/openapi.ts';
import { healthRouter, type ReadinessChecks } from './http/health.ts';
import { metricsRouter, observeRequests } from './http/http-metrics.ts';
import { requestId } from './http/request-id.ts';
import { requestSpans, type RequestTracing } from './http/request-spans.ts';
import { opsAuth } from './ops/ops-auth.ts';
import { auditOpsWrites } from './ops/ops-audit.ts';
import { createOpsActionLog, type OpsActionLog } from '../audit/ops-actions.ts';
import { strictRouter } from './http/route-registration.ts';
import { createOpsKeyGuard } from './ops/ops-key-guard.ts';
import { consoleRouter } from './console/console-router.ts';
import { createConsoleSessions } from '../access/console-sessions.ts';
import { createAttemptLimiter } from '../access/attempt-limits.ts';
import { createConsoleGrants } from './console/console-grants.ts';
import type { ConsoleConfig } from '../lib/config.ts';
import { opsLinksRouter } from './ops/links-routes.ts';
import { clientErrorOf } from './http/client-errors.ts';
import { sendProblem } from './http/problem.ts';
import { LOST_CONNECTION_RETRY_AFTER_SECONDS, lostConnectionOf, overloadOf } from '../lib/admission.ts';
import { WORKFLOW_UNAVAILABLE, workflowUnavailableOf } from '../lib/workflow-unavailable.ts';
import { createTokenVault } from '../links/token-vault.ts';
import { createIpAllowlist } from '../lib/ip-allowlist.ts';
import { embeddedSessionRouter } from './embedded/session-url.ts';
import { landingRouter } from './embedded/landing.ts';
import type { OnboardingDispatcher } from './embedded/onboarding-dispatcher.ts';
import { createRateLimiter } from './http/rate-limit.ts';
import { securityHeaders } from './http/security-headers.ts';
import { opsAccountsRouter } from './ops/accounts-routes.ts';
import { opsSettlementsRouter } from './ops/settlement-routes.ts';
import { createSettlementService, type SettlementOptions } from './ops/settlement-service.ts';
import { createLedger } from '../ledger/ledger.ts';
import { createAdjustAccount } from '../ledger/adjustments.ts';
import type { FundingLimits } from '../ledger/limits.ts';
import { createSettlementRuns } from '../ledger/settlement-runs.ts';
import { createBatchService } from '../fundings/batch-service.ts';
import type { KeyOwners } from '../domain/actor.ts';
import { createFundingRecord } from '../fundings/funding-record.ts';
import { createBatchItemsRecord } from '../fundings/batch-items-record.ts';
import { opsBatchesRouter } from './ops/batches-routes.ts';
import { createCsvStreams } from './http/csv-stream.ts';
import { createLiveStreams } from './console/live-region.ts';
import { BATCH_UPLOAD_BUDGET_BYTES } from '../fundings/batch-upload.ts';
import { createUploadBudget } from '../lib/upload-budget.ts';
import { createWebhookStore } from '../webhooks/webhook-store.ts';
import { opsWebhooksRouter } from './ops/webhooks-routes.ts';

export interface HardeningOptions {
  /** PUBLIC_URL: https means HSTS on every answer (else only on requests that came over TLS). */
  publicUrl?: string | undefined;
  /** Requests per client address per minute at the landing page and at the connect routes (each). */
  publicRateLimitPerMinute?: number;
  /** Requests per sender address per minute at the session URL. */
  sessionRateLimitPerMinute?: number;
  /** The landing page's own status polls per web session per minute (instead of per address). */
  webSessionPollLimitPerMinute?: number;
  now?: () => number;
  /**
   * Tests only: the time SQL takes for the database's clock in the console's sessions and the
   * attempt counts (lib/database.ts SqlClock), so idle time passes without waiting; absent (every
   * process walletflow runs): the database's `now()`, never this process's clock.
   */
  sqlClock?: () => number;
  /**
   * Whose attempt counts these are among those on the database (console sign-ins, wrong ops keys):
   * absent, every API process of the deployment shares them; tests give each stack its own.
   */
  attemptCountScope?: string;
}

export interface AppDependencies {
  logger: Logger;
  readiness: ReadinessChecks;
  /** The API's registry, served at GET /metrics; absent: one of its own. */
  metrics?: Metrics;
  /** METRICS_TOKEN: GET /metrics needs it as a bearer; absent: /metrics is open (development). */
  metricsToken?: string | undefined;
  /** Security headers and rate limits; absent: no HSTS unless over TLS, the default limits of lib/config.ts. */
  hardening?: HardeningOptions;
  /** A span per request (lib/tracing.ts); absent: tracing is off. */
  tracing?: RequestTracing | undefined;
  /** Absent in a health-only app (tests of the health routes). */
  services?: {
    /** NODE_ENV=production: production's stricter answers (webhook endpoints: public https only). */
    production?: boolean;
    database: Database;
    /** The token vault's own pool and line (lib/database.ts createRefreshPool). */
    refreshPool: RefreshPool;
    tokens: TokenStore;
    cipher: TokenCipher;
    fingerprintKey: Buffer;
    wallet: WalletClient;
    temporal: TemporalClient;
    taskQueue: string;
    /** TEMPORAL_NAMESPACE, for the console's links to the Temporal UI; absent: default. */
    temporalNamespace?: string;
    /**
     * Starts the onboarding of stored embedded sessions (createOnboardingDispatcher; its owner starts and stops it).
     */
    onboarding: Pick<OnboardingDispatcher, 'wake' | 'expedite'>;
    /** OPS_API_KEYS: OpsKeys or entries (`name:scopes:key`, or a bare key: `default`, every scope). */
    opsApiKeys: readonly (string | OpsKey)[];
    /** Where ops writes are audited (its owner drains it at shutdown); absent: one of the app's own. */
    opsAudit?: OpsActionLog;
    /** LOGIN_SIGNING_KEY: verifies partner-signed login tokens; absent: only ops login URLs. */
    loginSigningKey?: Buffer | undefined;
    connectReturnUrl?: string | undefined;
    trustedProxies?: string[];
    /** Who may call the session URL (SESSION_ALLOWED_IPS); absent or empty: nobody. */
    sessionAllowedIps?: string[];
    /** PUBLIC_URL: an https URL makes the landing page's cookie Secure. */
    publicUrl?: string | undefined;
    /** Defaults: 120 s (session id use window), 1200 s (web session). */
    embeddedSessionTtlSeconds?: number;
    webSessionTtlSeconds?: number;
    /** TREASURY_LIMIT (thousandths); absent: no limit. */
    treasuryLimit?: bigint | undefined;
    /** Section 10's funding limits; absent: none (tests that are not about limits). */
    fundingLimits?: FundingLimits | undefined;
    /** SETTLEMENT_TZ; absent: Asia/Manila. */
    settlementTimeZone?: string;
    /**
     * A day's settlement runs: SETTLEMENT_MAX_IN_FLIGHT, SETTLEMENT_MAX_RUNS (and, in tests, small pages); absent: 32
     * retrieves at once, 2 runs.
     */
    settlements?: SettlementOptions;
    /**
     * Funding batches: BATCH_APPROVAL_THRESHOLD (thousandths; null: none waits), BATCH_MAX_IN_FLIGHT,
     * and the bytes the process's batch uploads may hold at once (default BATCH_UPLOAD_BUDGET_BYTES).
     */
    batches?: {
      approvalThreshold: bigint | null;
      maxInFlight: number;
      uploadBudgetBytes?: number;
      /** OPS_KEY_OWNERS: who holds each ops key; a key and its owner are one for maker-checker. */
      keyOwners?: KeyOwners;
    };
    /** FUNDING_LANES: which run carries a single funding (fundings/funding-paths.ts); absent: its own workflow. */
    fundingLanes?: FundingLanesMode;
    /** The ops console's sign-in and sessions; absent: sign-in with a named ops key, the default time-outs. */
    console?: ConsoleConfig;
    /**
     * Tests: the console's live regions pushed this often (instead of each at its own pace), and a shorter stall bound;
     * absent: the console's own.
     */
    consoleLive?: { pushEveryMs?: number; stallMs?: number };
    /** Tests: how often a streamed CSV asks again whether its actor may go on; absent: RECHECK_MS. */
    reportRecheckMs?: number;
  };
}

/** Failed sign-ins to the console per client address per minute, across every API process (a success never counts). */
const CONSOLE_SIGN_IN_FAILURES_PER_MINUTE = 20;
/** Sign-ins through the identity provider started per client address per minute, across every API process. */
export const CONSOLE_SIGN_IN_STARTS_PER_MINUTE = 120;
/**
 * Wrong ops keys per client address per minute, across every API process and both doors (the ops API's bearer, the
 * console's sign-in).
 */
const WRONG_KEYS_PER_MINUTE = 20;

/**
 * A path's first segment as a router would read it in any spelling: decoded until nothing more decodes (`%2F` is a
 * slash then, so `/ops%2Ffundings` is under `ops`; `%252F` too, decoded twice), in lower case; an escape that does not
 * decode stays as sent.
 */
function firstSegmentOf(path: string): string {
  // Each run of escapes on its own: one that does not decode (a stray `%` anywhere) leaves the rest decoded.
  const decodeRuns = (text: string) =>
    text.replace(/(%[0-9a-f]{2})+/gi, (run) => {
      try {
        return decodeURIComponent(run);
      } catch {
        return run;
      }
    });
  let decoded = path;
  for (let round = 0; round < 4; round += 1) {
    const next = decodeRuns(decoded);
    if (next === decoded) break;
    decoded = next;
  }
  return (decoded.split(/[/\\]/).find((segment) => segment !== '') ?? '').toLowerCase();
}

/** Whether a path is under /ops in any spelling: its first segment, decoded, is `ops` in any case. */
function isOpsPath(path: string): boolean {
  return firstSegmentOf(path) === 'ops';
}

/**
 * Whether a path is the console's in another spelling than its own (`/Console/…`, `/%63onsole`, `/console/`,
 * `/console%2Ffundings`): no console route answers it.
 */
function isConsolePathOtherwiseSpelled(path: string): boolean {
  if (path === '/console' || (path.startsWith('/console/') && path !== '/console/')) return false;
  return firstSegmentOf(path) === 'console';
}

/** The answer for a path no route has, in any spelling but a route's own (contract section 12). */
const noRoute: express.RequestHandler = (req, res) => {
  sendProblem(res, {
    status: 404,
    code: 'NOT_FOUND',
    title: 'Not Found',
    detail: `no route for ${req.method} ${req.baseUrl}${req.path}`,
  });
};

export function createApp(deps: AppDependencies): express.Express {
  const app = express();
  app.disable('x-powered-by');
  // Paths are exact: a route is reached only by its own spelling (case, no trailing slash).
  app.set('case sensitive routing', true);
  app.set('strict routing', true);
  app.set('query parser', 'simple');
  const hardening = deps.hardening ?? {};
  const metrics = deps.metrics ?? createMetrics();
  app.use(requestId());
  if (deps.tracing) app.use(requestSpans(deps.tracing));
  app.use(observeRequests({ metrics, logger: deps.logger }));
  app.use(securityHeaders({ publicUrl: hardening.publicUrl ?? deps.services?.publicUrl }));
  app.use(
    healthRouter(deps.readiness, {
      onDown: (dependency, error) =>
        deps.logger.warn({ dependency, err: error.message }, 'readiness: a dependency is down'),
    }),
  );
  // The API documentation (/docs, /docs/openapi.json): public, like the contract it describes.
  app.use(docsRouter(buildOpenApiDocument()));
  app.use(metricsRouter(metrics, { token: deps.metricsToken }));
  const services = deps.services;
  if (services) {
    // The on-call gauges (items in review, reconciling, the oldest unfinished), read at scrape time.
    registerWorkloadGauges(metrics.registry, () => readWorkload(services.database), {
      onError: (error) => deps.logger.warn({ err: (error as Error).message }, 'could not read the workload gauges'),
    });
    const publicLimiter = () =>
      createRateLimiter({
        limit: hardening.publicRateLimitPerMinute ?? defaultRateLimits.publicPerMinute,
        ...(hardening.now ? { now: hardening.now } : {}),
      });
    // Client addresses (rate limits, the session URL allowlist) come from X-Forwarded-For only
    // when the direct peer is a configured proxy.
    app.set(
      'trust proxy',
      services.trustedProxies && services.trustedProxies.length > 0 ? services.trustedProxies : false,
    );
    app.use(
      connectRouter({
        database: services.database,
        tokens: services.tokens,
        wallet: services.wallet,
        logger: deps.logger,
        returnUrl: services.connectReturnUrl,
        rateLimiter: publicLimiter(),
        loginSigningKey: services.loginSigningKey,
        secureCookies: services.publicUrl?.startsWith('https:') ? true : undefined,
      }),
    );
    // The API's own vault (profile reads, the landing page's token check), as a worker builds one.
    const vault = createTokenVault({
      database: services.database,
      refreshPool: services.refreshPool,
      tokens: services.tokens,
      wallet: services.wallet,
      logger: deps.logger,
      metrics,
    });
    app.use(
      embeddedSessionRouter({
        database: services.database,
        cipher: services.cipher,
        taskQueue: services.taskQueue,
        onboarding: services.onboarding,
        allowlist: createIpAllowlist(services.sessionAllowedIps ?? []),
        sessionTtlMs: (services.embeddedSessionTtlSeconds ?? 120) * 1000,
        logger: deps.logger,
        metrics,
        rateLimiter: createRateLimiter({
          limit: hardening.sessionRateLimitPerMinute ?? defaultRateLimits.sessionPerMinute,
          ...(hardening.now ? { now: hardening.now } : {}),
        }),
      }),
    );
    // Before any ops route, for the ops API in any spelling (/OPS/…, //ops/…, /%6Fps/…): every write
    // leaves an audit row, whatever it answered (a refusal too), with the key's name when a valid
    // key was presented (contract section 12), and the caller is authenticated. Only the exact
    // spelling then reaches a route (`ops`, below); any other is 404.
    const opsAudit = services.opsAudit ?? createOpsActionLog(services.database, deps.logger);
    // Attempts counted in PostgreSQL, so that every API process counts against one limit.
    const attemptKind = (kind: string) =>
      hardening.attemptCountScope ? `${hardening.attemptCountScope}:${kind}` : kind;
    const clock = {
      ...(hardening.now ? { now: hardening.now } : {}),
      ...(hardening.sqlClock ? { sqlClock: hardening.sqlClock } : {}),
    };
    // One guard of the ops keys for both doors (the ops API's bearer, the console's sign-in): wrong keys count once per
    // address.
    const opsKeys = createOpsKeyGuard({
      keys: services.opsApiKeys,
      wrongKeys: createAttemptLimiter(services.database, {
        kind: attemptKind('ops-wrong-key'),
        limit: WRONG_KEYS_PER_MINUTE,
        ...clock,
      }),
      fingerprintKey: services.fingerprintKey,
      ...(hardening.now ? { now: hardening.now } : {}),
    });
    const opsGate = express.Router();
    opsGate.use(auditOpsWrites(opsAudit));
    opsGate.use(opsAuth({ guard: opsKeys }));
    const ops = strictRouter();
    // No ops route answers OPTIONS (no cross-origin caller is served): Express would otherwise list a path's methods.
    ops.use((req, res, next) => (req.method === 'OPTIONS' ? noRoute(req, res, next) : next()));
    const ledger = createLedger({ treasuryLimit: services.treasuryLimit ?? null });
    // The batches' funding rows: read one at a time and written a batch at a time, on one ledger and one registry.
    const batchFundings = {
      database: services.database,
      cipher: services.cipher,
      metrics,
      ledger,
      ...(services.fundingLimits ? { limits: services.fundingLimits } : {}),
    };
    const batches = createBatchService({
      database: services.database,
      fundings: createFundingRecord(batchFundings),
      batchItems: createBatchItemsRecord(batchFundings),
      temporal: services.temporal,
      taskQueue: services.taskQueue,
      fingerprintKey: services.fingerprintKey,
      logger: deps.logger,
      ...(services.fundingLimits ? { limits: services.fundingLimits } : {}),
      approvalThreshold: services.batches?.approvalThreshold ?? null,
      maxInFlight: services.batches?.maxInFlight ?? 32,
      uploadBudget: createUploadBudget(services.batches?.uploadBudgetBytes ?? BATCH_UPLOAD_BUDGET_BYTES),
      ...(services.batches?.keyOwners ? { keyOwners: services.batches.keyOwners } : {}),
    });
    // Before the 16 KiB JSON parser: a batch's body carries up to 100,000 items.
    // Every streamed CSV, the ops API's and the console's: at the client's pace, stopped when it goes away.
    const csvStreams = createCsvStreams({ logger: deps.logger, metrics, recheckMs: services.reportRecheckMs });
    ops.use(opsBatchesRouter({ batches, csvStreams }));
    ops.use(express.json({ limit: '16kb' }));
    ops.use(
      opsLinksRouter({
        database: services.database,
        tokens: services.tokens,
        publicUrl: services.publicUrl,
        profiles: { vault, wallet: services.wallet },
      }),
    );
    const fundingRecord = createFundingRecord({ database: services.database, cipher: services.cipher });
    const fundings = createFundingService({
      paths: createFundingPaths({
        mode: services.fundingLanes ?? 'off',
        inFlight: fundingRecord.inFlight,
        announce: createLaneAnnouncer(services.database, deps.logger).announce,
        temporal: services.temporal,
        taskQueue: services.taskQueue,
        logger: deps.logger,
      }),
      database: services.database,
      temporal: services.temporal,
      taskQueue: services.taskQueue,
      cipher: services.cipher,
      fingerprintKey: services.fingerprintKey,
      logger: deps.logger,
      metrics,
      ledger,
      ...(services.fundingLimits ? { limits: services.fundingLimits } : {}),
    });
    // A day's settlement: runs of the settleDay workflow, their progress and lines in ledger/settlement-runs.ts.
    const settlements = createSettlementService({
      runs: createSettlementRuns(services.database),
      temporal: services.temporal,
      taskQueue: services.taskQueue,
      timeZone: services.settlementTimeZone ?? 'Asia/Manila',
      options: services.settlements ?? { maxInFlight: 32 },
      logger: deps.logger,
    });
    // One adjustment for the ops API and the console (ledger/adjustments.ts).
    const adjust = createAdjustAccount({
      database: services.database,
      ledger,
      fingerprintKey: services.fingerprintKey,
    });
    ops.use(opsAccountsRouter({ database: services.database, ledger, adjust }));
    ops.use(opsSettlementsRouter({ settlements, csvStreams }));
    ops.use(opsFundingsRouter({ fundings }));
    const payments = createPaymentService({
      database: services.database,
      temporal: services.temporal,
      taskQueue: services.taskQueue,
      fingerprintKey: services.fingerprintKey,
      logger: deps.logger,
    });
    ops.use(opsPaymentsRouter({ payments }));
    const webhooks = createWebhookStore({ database: services.database, cipher: services.cipher });
    ops.use(opsWebhooksRouter({ webhooks, publicTargetsOnly: services.production === true }));
    // A path no route has is answered here, by no handler (and an OPTIONS request is not answered with the routes'
    // methods).
    ops.use(noRoute);
    app.use(
      landingRouter({
        database: services.database,
        onboarding: services.onboarding,
        fundings,
        payments,
        vault,
        ledger,
        ...(services.fundingLimits ? { limits: services.fundingLimits } : {}),
        logger: deps.logger,
        webSessionTtlMs: (services.webSessionTtlSeconds ?? 1200) * 1000,
        secureCookies: services.publicUrl?.startsWith('https:') ? true : undefined,
        rateLimiter: publicLimiter(),
        pollRateLimiter: createRateLimiter({
          limit: hardening.webSessionPollLimitPerMinute ?? defaultRateLimits.webSessionPollsPerMinute,
          ...(hardening.now ? { now: hardening.now } : {}),
        }),
      }),
    );
    app.use((req, res, next) => (isOpsPath(req.path) ? opsGate(req, res, next) : next()));
    app.use('/ops', ops);
    // The ops console (contract-decisions section 15): the same services and checks, for people.
    const consoleConfig = services.console ?? {
      oidc: undefined,
      idleMinutes: 15,
      sessionHours: 8,
      temporalUiUrl: undefined,
    };
    // A write to the console in another spelling reaches no console route (404), and is audited all the same.
    const consoleMisspelled = auditOpsWrites(opsAudit, 'console');
    app.use((req, res, next) => (isConsolePathOtherwiseSpelled(req.path) ? consoleMisspelled(req, res, next) : next()));
    app.use(
      consoleRouter({
        sessions: createConsoleSessions(
          services.database,
          { idleMs: consoleConfig.idleMinutes * 60_000, lifetimeMs: consoleConfig.sessionHours * 3_600_000 },
          hardening.sqlClock,
        ),
        config: consoleConfig,
        keys: opsKeys,
        grants: createConsoleGrants(consoleConfig, opsKeys),
        signInFailures: createAttemptLimiter(services.database, {
          kind: attemptKind('console-sign-in-failure'),
          limit: CONSOLE_SIGN_IN_FAILURES_PER_MINUTE,
          ...clock,
        }),
        signInStarts: createAttemptLimiter(services.database, {
          kind: attemptKind('console-sign-in-start'),
          limit: CONSOLE_SIGN_IN_STARTS_PER_MINUTE,
          ...clock,
        }),
        audit: opsAudit,
        publicUrl: services.publicUrl,
        secureCookies: services.publicUrl?.startsWith('https:') === true,
        logger: deps.logger,
        services: {
          database: services.database,
          fundings,
          payments,
          batches,
          csvStreams,
          liveStreams: createLiveStreams({
            logger: deps.logger,
            metrics,
            pushEveryMs: services.consoleLive?.pushEveryMs,
            stallMs: services.consoleLive?.stallMs,
          }),
          ledger,
          adjust,
          settlements,
          webhooks,
          tokens: services.tokens,
          timeZone: services.settlementTimeZone ?? 'Asia/Manila',
          temporalUi: consoleConfig.temporalUiUrl
            ? { url: consoleConfig.temporalUiUrl, namespace: services.temporalNamespace ?? 'default' }
            : undefined,
        },
      }),
    );
  }

  app.use(noRoute);
  const onError: ErrorRequestHandler = (error: unknown, req, res, _next) => {
    // A body or path the framework could not read is the client's fault (4xx), never a 500.
    const refused = clientErrorOf(error);
    if (refused) {
      sendProblem(res, {
        status: refused.status,
        code: refused.code,
        title: STATUS_CODES[refused.status] ?? 'Bad Request',
        detail: refused.message,
      });
      return;
    }
    // The database could not take the request now (docs/architecture.md, admission): nothing was stored; come back
    // later.
    const busy = overloadOf(error);
    if (busy) {
      deps.logger.warn({ method: req.method, path: req.path, reason: busy.reason }, 'refused for load: 503 OVERLOADED');
      res.setHeader('Retry-After', String(busy.retryAfterSeconds));
      sendProblem(res, {
        status: 503,
        code: 'OVERLOADED',
        title: 'Service Unavailable',
        detail:
          busy.detail ??
          'too many requests at once: nothing was stored; send the same request (same Idempotency-Key) again after Retry-After',
      });
      return;
    }
    // A read whose database connection was lost (a failover, a restart): it changed nothing, and is asked again.
    const lost = req.method === 'GET' || req.method === 'HEAD' ? lostConnectionOf(error) : null;
    if (lost) {
      deps.logger.warn(
        { method: req.method, path: req.path, reason: lost },
        'a read lost its database connection: 503',
      );
      res.setHeader('Retry-After', String(LOST_CONNECTION_RETRY_AFTER_SECONDS));
      sendProblem(res, {
        status: 503,
        code: 'OVERLOADED',
        title: 'Service Unavailable',
        detail:
          'the database connection was lost while this was read (nothing was changed): ask again after Retry-After',
      });
      return;
    }
    // Temporal could not take the request's workflow call now (lib/workflow-unavailable.ts): a
    // service's own words (the settlement's run), or, under routes that word none, words true of any.
    const unavailable = workflowUnavailableOf(error);
    if (unavailable) {
      deps.logger.warn(
        { method: req.method, path: req.path, reason: unavailable.reason },
        `a workflow could not take the request: 503 ${WORKFLOW_UNAVAILABLE}`,
      );
      res.setHeader('Retry-After', String(unavailable.retryAfterSeconds));
      sendProblem(res, {
        status: 503,
        code: WORKFLOW_UNAVAILABLE,
        title: 'Service Unavailable',
        detail: unavailable.detail,
      });
      return;
    }
    deps.logger.error({ err: error, method: req.method, path: req.path }, 'unhandled error');
    sendProblem(res, { status: 500, code: 'INTERNAL', title: 'Internal Server Error' });
  };
  app.use(onError);
  return app;
}
