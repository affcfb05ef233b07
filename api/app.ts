// The Express app factory: one router per area, one JSON error shape, nothing global.
import express, { type ErrorRequestHandler } from 'express';
import type { Database } from '../lib/database.ts';
import type { Logger } from '../lib/logger.ts';
import type { TokenStore } from '../lib/token-store.ts';
import type { Client as TemporalClient } from '@temporalio/client';
import type { TokenCipher } from '../lib/token-cipher.ts';
import type { WalletClient } from '../wallet/index.ts';
import { createFundingService } from './funding-service.ts';
import { opsFundingsRouter } from './ops-fundings.ts';
import { createPaymentService } from './payment-service.ts';
import { opsPaymentsRouter } from './ops-payments.ts';
import { connectRouter } from './connect.ts';
import { healthRouter, type ReadinessChecks } from './health.ts';
import { opsAuth } from './ops-auth.ts';
import { opsLinksRouter } from './ops-links.ts';
import { sendProblem } from './problem.ts';
import { createTokenVault } from '../activities/token-vault.ts';
import { createIpAllowlist } from '../lib/ip-allowlist.ts';
import { embeddedSessionRouter } from './embedded-session.ts';
import { landingRouter } from './landing.ts';

export interface AppDependencies {
  logger: Logger;
  readiness: ReadinessChecks;
  /** Absent in a health-only app (tests of the health routes). */
  services?: {
    database: Database;
    tokens: TokenStore;
    cipher: TokenCipher;
    fingerprintKey: Buffer;
    wallet: WalletClient;
    temporal: TemporalClient;
    taskQueue: string;
    opsApiKeys: string[];
    connectReturnUrl?: string | undefined;
    trustedProxies?: string[];
    /** Who may call the session URL (SESSION_ALLOWED_IPS); absent or empty: nobody. */
    sessionAllowedIps?: string[];
    /** PUBLIC_URL: an https URL makes the landing page's cookie Secure. */
    publicUrl?: string | undefined;
    /** Defaults: 120 s (session id use window), 1200 s (web session). */
    embeddedSessionTtlSeconds?: number;
    webSessionTtlSeconds?: number;
  };
}

export function createApp(deps: AppDependencies): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('query parser', 'simple');
  app.use(healthRouter(deps.readiness));
  const services = deps.services;
  if (services) {
    // Client addresses (rate limits, the session URL allowlist) come from X-Forwarded-For only
    // when the direct peer is a configured proxy.
    app.set('trust proxy', services.trustedProxies && services.trustedProxies.length > 0 ? services.trustedProxies : false);
    app.use(
      connectRouter({
        database: services.database,
        tokens: services.tokens,
        wallet: services.wallet,
        logger: deps.logger,
        returnUrl: services.connectReturnUrl,
      }),
    );
    // The API's own vault (profile reads, the landing page's token check), as a worker builds one.
    const vault = createTokenVault({ database: services.database, tokens: services.tokens, wallet: services.wallet, logger: deps.logger });
    app.use(
      embeddedSessionRouter({
        database: services.database,
        cipher: services.cipher,
        temporal: services.temporal,
        taskQueue: services.taskQueue,
        allowlist: createIpAllowlist(services.sessionAllowedIps ?? []),
        sessionTtlMs: (services.embeddedSessionTtlSeconds ?? 120) * 1000,
        logger: deps.logger,
      }),
    );
    const ops = express.Router();
    ops.use(opsAuth({ keys: services.opsApiKeys }));
    ops.use(express.json({ limit: '16kb' }));
    ops.use(opsLinksRouter({ database: services.database, tokens: services.tokens, profiles: { vault, wallet: services.wallet } }));
    const fundings = createFundingService({
      database: services.database,
      temporal: services.temporal,
      taskQueue: services.taskQueue,
      cipher: services.cipher,
      fingerprintKey: services.fingerprintKey,
      logger: deps.logger,
    });
    ops.use(opsFundingsRouter({ database: services.database, fundings }));
    const payments = createPaymentService({
      database: services.database,
      temporal: services.temporal,
      taskQueue: services.taskQueue,
      fingerprintKey: services.fingerprintKey,
      logger: deps.logger,
    });
    ops.use(opsPaymentsRouter({ database: services.database, payments }));
    app.use(
      landingRouter({
        database: services.database,
        temporal: services.temporal,
        taskQueue: services.taskQueue,
        fundings,
        payments,
        vault,
        logger: deps.logger,
        webSessionTtlMs: (services.webSessionTtlSeconds ?? 1200) * 1000,
        secureCookies: services.publicUrl?.startsWith('https:') ? true : undefined,
      }),
    );
    app.use('/ops', ops);
  }

  app.use((req, res) => {
    sendProblem(res, { status: 404, code: 'NOT_FOUND', title: 'Not Found', detail: `no route for ${req.method} ${req.path}` });
  });
  const onError: ErrorRequestHandler = (error: { status?: number; type?: string }, req, res, _next) => {
    if (error.type === 'entity.too.large') {
      sendProblem(res, { status: 413, code: 'BODY_TOO_LARGE', title: 'Payload Too Large' });
      return;
    }
    if (error.type === 'entity.parse.failed') {
      sendProblem(res, { status: 400, code: 'MALFORMED_JSON', title: 'Bad Request', detail: 'the body is not valid JSON' });
      return;
    }
    deps.logger.error({ err: error, method: req.method, path: req.path }, 'unhandled error');
    sendProblem(res, { status: 500, code: 'INTERNAL', title: 'Internal Server Error' });
  };
  app.use(onError);
  return app;
}
