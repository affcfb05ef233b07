// The entry to the landing page, GET /app?sessionId=…: the one-time session id is consumed
// atomically and traded for a web session cookie, and the same response shows the partner page
// (200: a client that follows no redirect and keeps no cookies still sees it); the page drops the
// id from its address at once, so a reload asks for /app, never the used id. A used or expired id
// gets 410, an unknown one 404, never partner content, whoever asks. Without an id, GET /app shows
// the page of the request's web session. A HEAD (a link preview, a prefetch) never uses up an id.
import type { Request, Response, Router } from 'express';
import { z } from 'zod';
import { sessionIdSchema } from '../../domain/embedded-session.ts';
import { hashBearer } from '../../links/embedded-sessions.ts';
import { rateLimitedPageAnswer } from '../http/rate-limit.ts';
import { routesOn } from '../http/route-registration.ts';
import { defineRoute, header, htmlAnswer, type AnyRouteSpec } from '../http/route-spec.ts';
import type { LandingContext } from './landing-context.ts';
import { messagePages } from './landing-messages.ts';
import { securityHeaders, sendMessage } from './landing-responses.ts';
import type { MoneyPage } from './money-page.ts';
import { APP_COOKIE, createAppSession, readAppSessionByCookie, setAppCookie } from './web-sessions.ts';

/** GET /app's query: the session id, which the handler checks itself (an unknown one is a 404 page). */
const landingQuerySchema = z.object({ sessionId: sessionIdSchema.optional() });

const routes = {
  appLanding: defineRoute({
    method: 'get',
    path: '/app',
    operationId: 'appLanding',
    tag: 'landing',
    summary: 'The landing page in the wallet app’s web view',
    description: [
      'With `sessionId` (from the session URL): the id is used up atomically and traded for the web session',
      `cookie \`${APP_COOKIE}\` (HttpOnly, SameSite=Lax, Path=/app), set on the same 200 that shows the page; the page`,
      'drops the id from its address, so a reload asks for /app. Without it: the page of the web session. Either way',
      'after a short wait for onboarding. Pages are HTML with their own nonce CSP.',
    ].join(' '),
    access: { webSession: 'optional' },
    query: {
      schema: landingQuerySchema,
      descriptions: { sessionId: 'the one-time session id the session URL gave the wallet service' },
    },
    responses: {
      '200': htmlAnswer('the home page (withdraw and deposit), or the loading page while onboarding runs', {
        'Set-Cookie': header(`with a session id that was just used up: the web session cookie \`${APP_COOKIE}\``),
      }),
      '401': htmlAnswer(
        'no web session, the wallet no longer accepts the user’s tokens, or onboarding gave up (reopen from the wallet)',
      ),
      '404': htmlAnswer('an unknown session id'),
      '410': htmlAnswer('the session id was already used, or has expired'),
      '429': rateLimitedPageAnswer,
      '500': htmlAnswer('an unexpected failure (logged)'),
      '503': htmlAnswer('busy: the database or Temporal could not take the request now (Retry-After)'),
    },
  }),
  appLandingHead: defineRoute({
    method: 'head',
    path: '/app',
    operationId: 'appLandingHead',
    tag: 'landing',
    summary: 'A link preview or prefetch: never uses up a session id',
    access: { webSession: 'optional' },
    query: { schema: landingQuerySchema, descriptions: { sessionId: 'a session id: answered 405, left unused' } },
    responses: {
      '200': { description: 'as GET without a session id, without the body' },
      '401': { description: 'no web session, or one to reopen from the wallet' },
      '405': { description: 'a session id is only used by GET', headers: { Allow: header('`GET`') } },
      '503': { description: 'busy (Retry-After)' },
    },
  }),
};

/** The session entry's routes, as the document lists them. */
export const sessionEntryRoutes: readonly AnyRouteSpec[] = Object.values(routes);

export function addSessionEntryRoutes(router: Router, { deps, now, sessionOf }: LandingContext, page: MoneyPage): void {
  const add = routesOn(router);
  async function consumeSessionId(req: Request, res: Response, raw: unknown): Promise<void> {
    const parsed = sessionIdSchema.safeParse(raw);
    if (!parsed.success) {
      sendMessage(res, 404, messagePages.unknown);
      return;
    }
    const sessionIdHash = hashBearer(parsed.data);
    // One request wins the id: the UPDATE's WHERE is the single-use check, and the web session is
    // created in the same transaction.
    const started = await deps.database.$transaction(async (tx) => {
      const rows = await tx.$queryRaw<Array<{ id: string }>>`
        UPDATE embedded_session SET consumed_at = now(), updated_at = now()
        WHERE session_id_hash = ${sessionIdHash} AND consumed_at IS NULL AND expires_at > now()
        RETURNING id`;
      const row = rows[0];
      if (!row) return null;
      const { cookieValue } = await createAppSession(tx, row.id, new Date(now() + deps.webSessionTtlMs));
      return { cookieValue, sessionRecordId: row.id };
    });
    if (!started) {
      const known = await deps.database.embeddedSession.findUnique({
        where: { sessionIdHash },
        select: { id: true, consumedAt: true },
      });
      deps.logger.info(
        { sessionRecordId: known?.id, reason: !known ? 'unknown' : known.consumedAt ? 'used' : 'expired' },
        'landing page refused a session id',
      );
      if (!known) sendMessage(res, 404, messagePages.unknown);
      else sendMessage(res, 410, known.consumedAt ? messagePages.used : messagePages.expired);
      return;
    }
    deps.logger.info({ sessionRecordId: started.sessionRecordId }, 'web session started');
    setAppCookie(res, started.cookieValue, {
      maxAgeSeconds: Math.floor(deps.webSessionTtlMs / 1000),
      secure: deps.secureCookies ?? req.secure,
    });
    const session = await readAppSessionByCookie(deps.database, started.cookieValue, new Date(now()));
    // An older session id used after its link was revoked: the user opens the app again (a new session links again).
    if (!session) return sendMessage(res, 401, messagePages.reopen);
    await page.showHome(res, session);
  }

  // A HEAD (a link preview, a prefetch) must not use up the single-use id: only a GET consumes it.
  // Added before the GET, which Express would otherwise let answer HEAD too.
  add(routes.appLandingHead, (req, res, next) => {
    if (req.query.sessionId === undefined) {
      next();
      return;
    }
    securityHeaders(res);
    res.setHeader('Allow', 'GET');
    res.status(405).end();
  });

  add(routes.appLanding, async (req, res) => {
    if (req.query.sessionId !== undefined) {
      await consumeSessionId(req, res, req.query.sessionId);
      return;
    }
    const session = await sessionOf(req);
    if (!session) {
      sendMessage(res, 401, messagePages.noSession);
      return;
    }
    await page.showHome(res, session);
  });
}
