// The landing page (GET /app?sessionId=…) and the partner pages behind it, put together from its
// parts: the session entry (session-entry.ts: the one-time session id traded for a web session
// cookie), the money page (money-page.ts: the balance, what may be withdrawn, recent activity),
// its forms (money-forms.ts: withdraw and deposit, CSRF-protected, idempotent per form instance)
// and progress (progress.ts: the pages' polls, answered for this web session's own fundings and
// payments only). The pages' scripts are files (assets/), served under /app/assets by
// page-assets.ts. Under /app every answer is a page, or JSON to the pages' polls: never a problem
// document.
import { strictRouter } from '../http/route-registration.ts';
import { LOST_CONNECTION_RETRY_AFTER_SECONDS, lostConnectionOf, overloadOf } from '../../lib/admission.ts';
import { WORKFLOW_UNAVAILABLE, workflowUnavailableOf } from '../../lib/workflow-unavailable.ts';
import type { Router } from 'express';
import { type ErrorRequestHandler, type Request, type Response } from 'express';
import { clientErrorOf } from '../http/client-errors.ts';
import type { AnyRouteSpec } from '../http/route-spec.ts';
import type { MessagePage } from './landing-pages.ts';
import { createLandingContext, type LandingDependencies } from './landing-context.ts';
import { messagePages } from './landing-messages.ts';
import { isStatusPoll, limitLandingRequests } from './landing-rate-limit.ts';
import { sendJson, sendMessage } from './landing-responses.ts';
import { addMoneyFormRoutes, moneyFormRoutes } from './money-forms.ts';
import { createMoneyPage } from './money-page.ts';
import { pageAssetsRouter } from './page-assets.ts';
import { addProgressRoutes, progressRoutes } from './progress.ts';
import { addSessionEntryRoutes, sessionEntryRoutes } from './session-entry.ts';

export type { LandingDependencies } from './landing-context.ts';

/** Every route of the landing page, as the document lists them. */
export const landingRoutes: readonly AnyRouteSpec[] = [...sessionEntryRoutes, ...moneyFormRoutes, ...progressRoutes];

export function landingRouter(deps: LandingDependencies): Router {
  const router = strictRouter();
  const context = createLandingContext(deps);

  // The pages' scripts (/app/assets/…), before the rate limit: a browser fetches each once (they
  // are cached for good), so they would only use up the pages' allowance.
  router.use(pageAssetsRouter());
  if (deps.rateLimiter) router.use('/app', limitLandingRequests(context, deps.rateLimiter, deps.pollRateLimiter));

  const page = createMoneyPage(context);
  addSessionEntryRoutes(router, context, page);
  addMoneyFormRoutes(router, context, page);
  addProgressRoutes(router, context, page);

  // Under /app a page (or the polls' JSON: the statuses and the activity), never a problem document: unknown paths and
  // methods, unreadable forms (the client's fault: its 4xx) and failures (500, logged).
  const answer = (req: Request, res: Response, status: number, content: MessagePage, code: string, text: string) => {
    if (isStatusPoll(`${req.baseUrl}${req.path}`)) sendJson(res, status, { code, message: text });
    else sendMessage(res, status, content);
  };
  router.use('/app', (req, res) =>
    answer(req, res, 404, messagePages.notFound, 'NOT_FOUND', `no route for ${req.method} ${req.baseUrl}${req.path}`),
  );
  const onError: ErrorRequestHandler = (error: unknown, req, res, _next) => {
    const refused = clientErrorOf(error);
    if (refused) {
      answer(
        req,
        res,
        refused.status,
        refused.status === 413 ? messagePages.formTooLarge : messagePages.unreadable,
        refused.code,
        refused.message,
      );
      return;
    }
    // Too many requests at once: nothing was stored; the user is told to try again. A refused connection may come after
    // a withdrawal was stored (its page's read): the words say to look at the activity first, as the unavailable page.
    const busy = overloadOf(error);
    if (busy) {
      res.setHeader('Retry-After', String(busy.retryAfterSeconds));
      if (busy.connectionRefused)
        answer(
          req,
          res,
          503,
          messagePages.busyMaybeKept,
          'OVERLOADED',
          'the database refused a connection: what was sent may be kept; look at the activity before sending it again',
        );
      else
        answer(
          req,
          res,
          503,
          messagePages.busy,
          'OVERLOADED',
          'too many requests at once: nothing was done; try again in a few seconds',
        );
      return;
    }
    // The database connection was lost mid-statement (a failover, a restart): never a 500. A page read changed nothing;
    // a form's write may have been stored before it was lost, and the words say to look at the activity first.
    const lost = lostConnectionOf(error);
    if (lost) {
      deps.logger.warn(
        { method: req.method, path: req.path, reason: lost },
        'landing page lost its database connection',
      );
      res.setHeader('Retry-After', String(LOST_CONNECTION_RETRY_AFTER_SECONDS));
      const read = req.method === 'GET' || req.method === 'HEAD';
      answer(
        req,
        res,
        503,
        read ? messagePages.busy : messagePages.busyMaybeKept,
        'OVERLOADED',
        read
          ? 'the database connection was lost while this was read (nothing was changed): try again in a few seconds'
          : 'the database connection was lost: what was sent may be kept; look at the activity before sending it again',
      );
      return;
    }
    // Temporal could not take a call now: said in words, never a 500 (the forms themselves go to their progress page).
    const unavailable = workflowUnavailableOf(error);
    if (unavailable) {
      deps.logger.warn(
        { method: req.method, path: req.path, reason: unavailable.reason },
        `landing page: a workflow could not take the request: 503 ${WORKFLOW_UNAVAILABLE}`,
      );
      res.setHeader('Retry-After', String(unavailable.retryAfterSeconds));
      answer(
        req,
        res,
        503,
        messagePages.unavailable,
        WORKFLOW_UNAVAILABLE,
        'this cannot be done just now; try again in a minute',
      );
      return;
    }
    deps.logger.error({ err: error, method: req.method, path: req.path }, 'landing page failed');
    answer(req, res, 500, messagePages.broken, 'INTERNAL', 'something went wrong; try again');
  };
  router.use('/app', onError);
  return router;
}
