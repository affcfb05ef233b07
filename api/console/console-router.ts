// The ops console at /console (contract-decisions section 15; docs/console.md): server-rendered
// pages for partner ops staff, on the same services and rules as the ops API. In order: the
// assets; the session (its person becomes the request's actor); a page or a write without one goes
// to sign-in; forms' bodies are read and every write must carry the session's CSRF token; every
// write is audited under the person's name; then the pages, each registered with its scope check
// (api/http/route-registration.ts); anything else is a console page saying so.
import express, { type ErrorRequestHandler, type Router } from 'express';
import type { OpsActionLog } from '../../audit/ops-actions.ts';
import type { ConsoleConfig } from '../../lib/config.ts';
import type { Logger } from '../../lib/logger.ts';
import { overloadOf } from '../../lib/admission.ts';
import { clientErrorOf } from '../http/client-errors.ts';
import type { RateLimiter } from '../http/rate-limit.ts';
import { strictRouter } from '../http/route-registration.ts';
import type { AnyRouteSpec } from '../http/route-spec.ts';
import { auditOpsWrites } from '../ops/ops-audit.ts';
import type { OpsKeyGuard } from '../ops/ops-key-guard.ts';
import { consoleSessionOf, readConsoleSession, requireCsrf, requireSignedIn } from './console-auth.ts';
import { answerScopeRefusalsWith } from '../http/actor.ts';
import { consoleAssetsRouter, CONSOLE_PATH, notice, sendConsolePage } from './console-layout.ts';
import type { ConsoleSessions } from './console-sessions.ts';
import type { ConsoleServices } from './console-services.ts';
import { addBatchesRoutes, batchesRoutes, batchFormsWithFiles } from './batches-pages.ts';
import { accountsRoutes, addAccountsRoutes } from './accounts-page.ts';
import { addAuditRoutes, auditRoutes } from './audit-page.ts';
import { addFundingRoutes, fundingRoutes } from './funding-page.ts';
import { addHomeRoutes, homeRoutes } from './home-page.ts';
import { addLinksRoutes, linksRoutes } from './links-page.ts';
import { addPaymentRoutes, paymentRoutes } from './payment-page.ts';
import { addReviewRoutes, reviewRoutes } from './review-page.ts';
import { addSearchRoutes, searchRoutes } from './search-page.ts';
import { addSignInRoutes, signInRoutes } from './sign-in.ts';
import { addWebhooksRoutes, webhooksRoutes } from './webhooks-page.ts';

export interface ConsoleDependencies {
  /** What the pages act through: the ops API's own services. */
  services: ConsoleServices;
  sessions: ConsoleSessions;
  config: ConsoleConfig;
  keys: OpsKeyGuard;
  /** Sign-in attempts per client address. */
  rateLimiter: RateLimiter;
  audit: OpsActionLog;
  publicUrl: string | undefined;
  secureCookies: boolean;
  logger: Logger;
}

/** Every route of the console, as the route declarations list them (not in the API's document). */
export const consoleRoutes: readonly AnyRouteSpec[] = [
  ...signInRoutes,
  ...homeRoutes,
  ...batchesRoutes,
  ...searchRoutes,
  ...fundingRoutes,
  ...paymentRoutes,
  ...reviewRoutes,
  ...accountsRoutes,
  ...webhooksRoutes,
  ...linksRoutes,
  ...auditRoutes,
];

export function consoleRouter(deps: ConsoleDependencies): Router {
  const router = strictRouter();
  router.use(consoleAssetsRouter());
  const area = strictRouter();
  area.use(readConsoleSession(deps.sessions));
  // A scope a person lacks is refused with a page, in words (the ops API answers a problem document).
  area.use((_req, res, next) => {
    answerScopeRefusalsWith(res.locals, (answer, refusal) => {
      const session = consoleSessionOf(answer);
      sendConsolePage(answer, refusal.status, {
        title: 'Not allowed',
        ...(session ? { person: { name: session.personName, scopes: session.scopes, csrfToken: session.csrfToken } } : {}),
        body: notice(refusal.status === 401 ? 'Sign in first: nothing was done.' : `You may not do this (it needs a role you do not have): nothing was done.`, 'error'),
      });
    });
    next();
  });
  area.use(requireSignedIn);
  area.use(express.urlencoded({ extended: false, limit: '64kb', parameterLimit: 50 }));
  // A form with a file is read by its own route, which checks the token before the file (upload-form.ts).
  area.use(requireCsrf(deps.publicUrl, batchFormsWithFiles));
  area.use(auditOpsWrites(deps.audit, 'console'));
  addSignInRoutes(area, deps);
  addHomeRoutes(area, deps.services);
  addBatchesRoutes(area, deps.services, deps.logger);
  addSearchRoutes(area, deps.services);
  addFundingRoutes(area, deps.services);
  addPaymentRoutes(area, deps.services);
  addReviewRoutes(area, deps.services);
  addAccountsRoutes(area, deps.services, deps.logger);
  addWebhooksRoutes(area, deps.services);
  addLinksRoutes(area, deps.services);
  addAuditRoutes(area, deps.services);
  area.use((req, res) => sendConsolePage(res, 404, { title: 'Not found', body: `${notice(`There is no console page at ${req.originalUrl.split('?')[0] ?? ''}.`, 'error')}<p><a href="${CONSOLE_PATH}">Home</a></p>` }));
  const onError: ErrorRequestHandler = (error: unknown, req, res, _next) => {
    const refused = clientErrorOf(error);
    if (refused) {
      sendConsolePage(res, refused.status, { title: 'Refused', body: notice(`This request could not be read (${refused.message}): nothing was done.`, 'error') });
      return;
    }
    const busy = overloadOf(error);
    if (busy) {
      res.setHeader('Retry-After', String(busy.retryAfterSeconds));
      sendConsolePage(res, 503, { title: 'Busy', body: notice(`walletflow is busy: nothing was done. Try again in ${busy.retryAfterSeconds} seconds.`, 'error') });
      return;
    }
    deps.logger.error({ err: error, method: req.method, path: req.path }, 'console: unhandled error');
    sendConsolePage(res, 500, { title: 'Error', body: notice('Something went wrong on our side; it is logged. Nothing you asked may have been done: look before trying again.', 'error') });
  };
  area.use(onError);
  router.use(CONSOLE_PATH, area);
  return router;
}
