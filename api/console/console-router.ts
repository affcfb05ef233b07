// The ops console at /console (contract-decisions section 15; docs/console.md): server-rendered
// pages for partner ops staff, on the same services and rules as the ops API. In order: the
// assets; every write is audited, under the person's name when there is one, refusals too; the
// session (its person becomes the request's actor, with what their sign-in still grants); a page
// or a write without a session goes to sign-in; forms' bodies are read and every write must carry
// the session's CSRF token; then the pages, each registered with its scope check and, but for
// streams, the count of the person's act (consoleRoutesOn); anything else is a console page saying so.
import express, { type ErrorRequestHandler, type Router } from 'express';
import { ENDED_SESSION_ROOM, type OpsActionLog } from '../../audit/ops-actions.ts';
import type { ConsoleConfig } from '../../lib/config.ts';
import type { Logger } from '../../lib/logger.ts';
import {
  LOST_CONNECTION_RETRY_AFTER_SECONDS,
  lostConnectionOf,
  overloadOf,
  type Overload,
} from '../../lib/admission.ts';
import { refusalWords, workflowUnavailableOf } from '../../lib/workflow-unavailable.ts';
import { clientErrorOf } from '../http/client-errors.ts';
import type { AttemptLimiter } from '../../access/attempt-limits.ts';
import type { ConsoleSessions, EndedConsoleSession } from '../../access/console-sessions.ts';
import { strictRouter } from '../http/route-registration.ts';
import type { AnyRouteSpec } from '../http/route-spec.ts';
import { auditOpsWrites } from '../ops/ops-audit.ts';
import type { OpsKeyGuard } from '../ops/ops-key-guard.ts';
import {
  consoleCookieNames,
  consoleSessionOf,
  endedSessionOf,
  isPublicPath,
  readConsoleSession,
  requireCsrf,
  requireSignedIn,
} from './console-auth.ts';
import { answerScopeRefusalsWith } from '../http/actor.ts';
import {
  consoleAssetsRouter,
  CONSOLE_PATH,
  notice,
  sendConsolePage,
  escapeHtml,
  signInAddress,
} from './console-layout.ts';
import type { ConsoleGrants } from './console-grants.ts';
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
import { addSignInRoutes, signInReturnOf, signInRoutes } from './sign-in.ts';
import { addWebhooksRoutes, webhooksRoutes } from './webhooks-page.ts';

export interface ConsoleDependencies {
  /** What the pages act through: the ops API's own services. */
  services: ConsoleServices;
  sessions: ConsoleSessions;
  config: ConsoleConfig;
  keys: OpsKeyGuard;
  /** What a session rests on, checked again on every request. */
  grants: ConsoleGrants;
  /** Failed sign-ins per client address, counted across every API process (sign-in.ts). */
  signInFailures: AttemptLimiter;
  /** Sign-ins through the provider started per client address, counted across every API process. */
  signInStarts: AttemptLimiter;
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

/** A scope refusal in words: a page not shown, or an act not done. */
function refusalText(method: string, path: string, status: 401 | 403): string {
  if (status === 401) return 'Sign in first: nothing was done.';
  if (method !== 'GET' && method !== 'HEAD')
    return 'You may not do this (it needs a role you do not have): nothing was done.';
  // Home is where a sign-in lands: say why nothing is there.
  if (path === '/')
    return 'Your sign-in grants no role that shows anything here: the console’s pages need the read scope. Ask your administrator, or sign out.';
  return 'You may not see this page (it needs a role you do not have).';
}

/** What a person is told of a request refused for load: what is known of it. */
function busyWords(busy: Overload): string {
  // The database refused a connection: an earlier statement of the request may have committed.
  if (busy.connectionRefused)
    return 'the database refused a connection, so whether this was done is not known here: look before you send it again.';
  return busy.detail ? `${busy.detail}.` : 'nothing was done.';
}

/**
 * Whose ended session sent a write, as its audit row's note keeps it (audit/ops-actions.ts): the person's name as
 * recorded, or their identity alone when the name with its identity would not fit (never a name cut short of its
 * identity).
 */
function whoseEndedSession(ended: EndedConsoleSession | undefined): string | null {
  if (!ended) return null;
  return ended.personName.length <= ENDED_SESSION_ROOM ? ended.personName : ended.personId.slice(0, ENDED_SESSION_ROOM);
}

export function consoleRouter(deps: ConsoleDependencies): Router {
  const router = strictRouter();
  // Home is `/console` only: mounted at /console, the area would take `/console/` for it too. One
  // spelling per page (contract section 12): `/console/` leaves the console to the app's 404.
  router.use((req, _res, next) => (req.path === `${CONSOLE_PATH}/` ? next('router') : next()));
  router.use(consoleAssetsRouter());
  const area = strictRouter();
  // Before anything that may refuse: a write refused for its session, its token or its scope is
  // recorded too (under the person's name, read when the answer is sent).
  area.use(auditOpsWrites(deps.audit, 'console', { endedSessionOf: (res) => whoseEndedSession(endedSessionOf(res)) }));
  area.use(readConsoleSession(deps.sessions, deps.grants, consoleCookieNames(deps.secureCookies), deps.publicUrl));
  // A scope a person lacks is refused with a page, in words (the ops API answers a problem document).
  area.use((_req, res, next) => {
    answerScopeRefusalsWith(res.locals, (answer, refusal) => {
      const session = consoleSessionOf(answer);
      sendConsolePage(answer, refusal.status, {
        title: 'Not allowed',
        ...(session
          ? { person: { name: session.personName, scopes: session.scopes, csrfToken: session.csrfToken } }
          : {}),
        body: notice(refusalText(answer.req.method, answer.req.path, refusal.status), 'error'),
      });
    });
    next();
  });
  area.use(requireSignedIn(deps.publicUrl));
  // Signed-in pages' forms; the sign-in's, which anyone may send, is read by its own route within tighter bounds
  // (sign-in.ts), never by this reader first.
  const readForm = express.urlencoded({ extended: false, limit: '64kb', parameterLimit: 50 });
  area.use((req, res, next) => (isPublicPath(req) ? next() : readForm(req, res, next)));
  // A form with a file is read by its own route, which checks the token before the file (upload-form.ts).
  area.use(requireCsrf(deps.publicUrl, batchFormsWithFiles));
  addSignInRoutes(area, deps);
  addHomeRoutes(area, deps.services);
  addBatchesRoutes(area, deps.services);
  addSearchRoutes(area, deps.services);
  addFundingRoutes(area, deps.services);
  addPaymentRoutes(area, deps.services);
  addReviewRoutes(area, deps.services);
  addAccountsRoutes(area, deps.services);
  addWebhooksRoutes(area, deps.services);
  addLinksRoutes(area, deps.services);
  addAuditRoutes(area, deps.services);
  area.use((req, res) =>
    sendConsolePage(res, 404, {
      title: 'Not found',
      body: `${notice(`There is no console page at ${req.originalUrl.split('?')[0] ?? ''}.`, 'error')}<p><a href="${CONSOLE_PATH}">Home</a></p>`,
    }),
  );
  const onError: ErrorRequestHandler = (error: unknown, req, res, _next) => {
    const refused = clientErrorOf(error);
    if (refused) {
      sendConsolePage(res, refused.status, {
        title: 'Refused',
        body: notice(`This request could not be read (${refused.message}): nothing was done.`, 'error'),
      });
      return;
    }
    const busy = overloadOf(error);
    const lost = lostConnectionOf(error);
    // A sign-in step (its start, the provider's callback, the key's form) the database could not finish: signing in
    // again is always safe, and a reload is not (the callback's state and the provider's code are spent once).
    if (isPublicPath(req) && (busy || lost)) {
      const retryAfter = busy?.retryAfterSeconds ?? LOST_CONNECTION_RETRY_AFTER_SECONDS;
      res.setHeader('Retry-After', String(retryAfter));
      sendConsolePage(res, 503, {
        title: 'Busy',
        body: `${notice(`walletflow could not finish signing you in just now: sign in again in ${retryAfter} seconds.`, 'error')}<p><a href="${escapeHtml(signInAddress(signInReturnOf(req, res)))}">Sign in</a></p>`,
      });
      return;
    }
    // Done, only not shown: the act stands, and is not to be done again.
    if (busy?.done) {
      res.setHeader('Retry-After', String(busy.retryAfterSeconds));
      // The record's page: a form's path without its verb (…/fundings/{id}/cancel → …/fundings/{id}), not a reload.
      const record = (req.originalUrl.split('?')[0] ?? '').replace(/\/[a-z-]+$/, '');
      sendConsolePage(res, 503, {
        title: 'Done',
        body: `${notice(
          `${busy.done[0]!.toUpperCase()}${busy.done.slice(1)}, but it cannot be shown just now: look at it again in ${busy.retryAfterSeconds} seconds. Do not do it again.`,
          'ok',
        )}<p><a href="${escapeHtml(record)}">Back to it</a></p>`,
      });
      return;
    }
    if (busy) {
      res.setHeader('Retry-After', String(busy.retryAfterSeconds));
      sendConsolePage(res, 503, {
        title: 'Busy',
        body: notice(`walletflow is busy: ${busyWords(busy)} Try again in ${busy.retryAfterSeconds} seconds.`, 'error'),
      });
      return;
    }
    // A page whose read lost its database connection (a failover): it changed nothing, and is asked for again.
    if ((req.method === 'GET' || req.method === 'HEAD') && lost) {
      res.setHeader('Retry-After', String(LOST_CONNECTION_RETRY_AFTER_SECONDS));
      sendConsolePage(res, 503, {
        title: 'Busy',
        body: notice(
          `walletflow lost its database connection while reading this page: nothing was changed. Reload it in ${LOST_CONNECTION_RETRY_AFTER_SECONDS} seconds.`,
          'error',
        ),
      });
      return;
    }
    // Temporal could not take a call of a page that words none itself (lib/workflow-unavailable.ts): a page in words,
    // never a 500.
    const unavailable = workflowUnavailableOf(error);
    if (unavailable) {
      deps.logger.warn(
        { method: req.method, path: req.path, reason: unavailable.reason },
        'console: a workflow could not take the request',
      );
      res.setHeader('Retry-After', String(unavailable.retryAfterSeconds));
      const words = `walletflow cannot reach its workflows just now (${refusalWords[unavailable.reason]}). What you asked may have been recorded all the same: look at the record, then try again in ${unavailable.retryAfterSeconds} seconds if it is needed.`;
      sendConsolePage(res, 503, { title: 'Not available just now', body: notice(words, 'error') });
      return;
    }
    deps.logger.error({ err: error, method: req.method, path: req.path }, 'console: unhandled error');
    sendConsolePage(res, 500, {
      title: 'Error',
      body: notice(
        'Something went wrong on our side; it is logged. Nothing you asked may have been done: look before trying again.',
        'error',
      ),
    });
  };
  area.use(onError);
  router.use(CONSOLE_PATH, area);
  return router;
}
