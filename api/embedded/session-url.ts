// The session URL (POST /embedded/session) the wallet service calls when a user opens the
// partner's tile: sender allowlist and rate limit first, then headers and body, then the tokens are
// stored encrypted under a new one-time session id, with the session's "onboarding pending" outbox
// row in the same statement, and the answer goes out at once. The onboardEmbeddedSession workflow
// (profile fetch, linking) is started afterwards by the onboarding dispatcher, which this call only
// wakes: no Temporal call on the request path. Errors: `{ code, message }` (400, 403, 429 with
// Retry-After; anything else under /embedded too).
import { isIP } from 'node:net';
import { randomUUID } from 'node:crypto';
import type { Router } from 'express';
import express, { type ErrorRequestHandler, type RequestHandler, type Response } from 'express';
import { z } from 'zod';
import { requestReferenceNoSchema, sessionPayloadSchema } from '../../domain/embedded-session.ts';
import type { Database } from '../../lib/database.ts';
import { overloadOf } from '../../lib/admission.ts';
import { hashBearer, sessionAccessTokenContext, sessionRefreshTokenContext } from '../../links/embedded-sessions.ts';
import type { IpAllowlist } from '../../lib/ip-allowlist.ts';
import type { Logger } from '../../lib/logger.ts';
import type { Metrics } from '../../lib/metrics.ts';
import type { TokenCipher } from '../../lib/token-cipher.ts';
import { jwtExpiry } from '../../links/token-expiry.ts';
import { storeSessionForOnboarding } from '../../links/onboarding-outbox.ts';
import { clientErrorOf } from '../http/client-errors.ts';
import { createRateLimiter, limitRequests, rateKeyOf, type RateLimiter } from '../http/rate-limit.ts';
import { routesOn, strictRouter } from '../http/route-registration.ts';
import { defineRoute, jsonAnswer, named, retryAfterHeader, type AnyRouteSpec } from '../http/route-spec.ts';
import type { OnboardingDispatcher } from './onboarding-dispatcher.ts';

/** The session payload is three tokens and a number: a few KiB at most. */
export const SESSION_BODY_LIMIT_BYTES = 16 * 1024;

export interface EmbeddedSessionDependencies {
  database: Database;
  cipher: TokenCipher;
  /** The task queue the session's onboarding runs on (stored on its outbox row). */
  taskQueue: string;
  /** Woken after each stored session: it starts the onboarding workflow. */
  onboarding: Pick<OnboardingDispatcher, 'wake'>;
  allowlist: IpAllowlist;
  /** How long the session id may be used at the landing page. */
  sessionTtlMs: number;
  logger: Logger;
  /** Times every answer (walletflow_session_url_duration_seconds); absent: not timed. */
  metrics?: Pick<Metrics, 'sessionUrl'>;
  /** Calls per sender address (SESSION_RATE_LIMIT_PER_MINUTE); absent: unlimited. */
  rateLimiter?: RateLimiter;
  now?: () => number;
}

const passThrough: RequestHandler = (_req, _res, next) => next();

/** The answer to an accepted call: the one-time session id the wallet opens the landing page with. */
export const sessionCreatedSchema = z.object({ sessionId: z.uuidv4() });

/** Contract section 6: a refused session call answers `{ code, message }`. */
export const sessionRefusalSchema = z.object({ code: z.string(), message: z.string() });

const sessionRefusalComponent = named('SessionRefusal', sessionRefusalSchema);

const createEmbeddedSession = defineRoute({
  method: 'post',
  path: '/embedded/session',
  operationId: 'createEmbeddedSession',
  tag: 'embedded',
  summary: 'The session URL: the wallet service hands over a user’s tokens when the user opens the partner’s tile',
  description: [
    'Checked in this order: the sender allowlist (SESSION_ALLOWED_IPS; the client address is the peer, or',
    '`X-Forwarded-For` from a TRUSTED_PROXIES proxy; 403 before anything is read, however often it calls), the rate',
    'limit per sender (SESSION_RATE_LIMIT_PER_MINUTE, 429), `Content-Type: application/json` (400), the',
    '`Request-Reference-No` header (400), then the body (at most 16 KiB; 400 `VALIDATION_ERROR` naming',
    'the field and rule, never the value). `expiresAt` must lie in the future, in seconds (a millisecond value is refused); fields the interface does not name are ignored.',
    'The tokens are stored encrypted and the answer goes out at once; onboarding (profile, link) runs',
    'afterwards. The session id opens the landing page once, within EMBEDDED_SESSION_TTL_SECONDS.',
    'Answers carry `Cache-Control: no-store`; other methods get 405 (`Allow: POST`).',
  ].join(' '),
  access: 'public',
  headers: {
    'Request-Reference-No': {
      schema: requestReferenceNoSchema,
      required: true,
      description: 'the wallet service’s id of this call (UUIDv4)',
    },
  },
  body: {
    mediaType: 'application/json',
    // expiresAt's checks against the clock (in the future, at most ten years ahead) are refinements:
    // they do not change the shape, so any clock gives the same document.
    schema: named('SessionPayload', sessionPayloadSchema(0)),
    description: `the user’s tokens (at most ${SESSION_BODY_LIMIT_BYTES} bytes)`,
  },
  responses: {
    '200': jsonAnswer(
      named('SessionCreated', sessionCreatedSchema),
      'stored; open the landing page with `?sessionId=…`',
    ),
    '400': jsonAnswer(
      sessionRefusalComponent,
      'a malformed call (`code`: `UNSUPPORTED_CONTENT_TYPE`, `INVALID_REQUEST_REFERENCE_NO`, `MALFORMED_JSON`, `VALIDATION_ERROR`, `BODY_TOO_LARGE`, or another body-reading code)',
    ),
    '403': jsonAnswer(sessionRefusalComponent, 'the sender is not in SESSION_ALLOWED_IPS (`FORBIDDEN`)'),
    '429': jsonAnswer(sessionRefusalComponent, 'too many calls from this sender (`RATE_LIMITED`)', {
      'Retry-After': retryAfterHeader,
    }),
    '500': jsonAnswer(sessionRefusalComponent, 'the session could not be stored; retry (`INTERNAL`)'),
    '503': jsonAnswer(
      sessionRefusalComponent,
      'the database could not take the session just now (`OVERLOADED`); retry after Retry-After',
      { 'Retry-After': retryAfterHeader },
    ),
  },
});

/** The session URL, as the document lists it. */
export const sessionUrlRoutes: readonly AnyRouteSpec[] = [createEmbeddedSession];

function refuse(res: Response, status: number, code: string, message: string): void {
  const body: z.infer<typeof sessionRefusalSchema> = { code, message };
  res.status(status).setHeader('Cache-Control', 'no-store').json(body);
}

/** Lines logged a minute for the calls of one sender outside SESSION_ALLOWED_IPS (each answered 403). */
const OUTSIDER_LOG_LINES = 10;

export function embeddedSessionRouter(deps: EmbeddedSessionDependencies): Router {
  const router = strictRouter();
  const now = deps.now ?? Date.now;
  // The payload schema depends on the current second (expiresAt must lie ahead): built once per second, not per call.
  let payloadSchema: { second: number; schema: ReturnType<typeof sessionPayloadSchema> } | undefined;
  const payloadSchemaAt = (second: number) => {
    if (payloadSchema?.second !== second) payloadSchema = { second, schema: sessionPayloadSchema(second) };
    return payloadSchema.schema;
  };
  const readBody = express.raw({ type: () => true, limit: SESSION_BODY_LIMIT_BYTES });

  const outsiderLog = createRateLimiter({ limit: OUTSIDER_LOG_LINES });
  const limit = deps.rateLimiter
    ? limitRequests(deps.rateLimiter, (_req, res, retryAfterSeconds) =>
        refuse(res, 429, 'RATE_LIMITED', `too many calls from this sender; retry after ${retryAfterSeconds} s`),
      )
    : passThrough;

  // Every answer of the session URL is timed, refusals included: the wallet service waits on it.
  const timed: RequestHandler = (_req, res, next) => {
    const started = performance.now();
    res.once('finish', () => deps.metrics?.sessionUrl(res.statusCode, (performance.now() - started) / 1000));
    next();
  };

  routesOn(router)(
    createEmbeddedSession,
    timed,
    (req, res, next) => {
      // First check, before anything is read or stored: only the wallet service's senders. A sender outside always
      // gets 403 (contract section 6), a flood of them too, logged at most OUTSIDER_LOG_LINES a minute; it is not
      // counted against the limit of the senders listed.
      if (!deps.allowlist.allows(req.ip)) {
        if (outsiderLog.take(req.ip).allowed)
          // The address as sent when it is one (the operator fixes the allowlist from it), never a header's text.
          deps.logger.warn(
            { ip: isIP(req.ip ?? '') ? req.ip : rateKeyOf(req.ip) },
            'session URL called from an address outside SESSION_ALLOWED_IPS',
          );
        refuse(res, 403, 'FORBIDDEN', 'this sender may not call the session URL');
        return;
      }
      next();
    },
    limit,
    (req, res, next) => {
      if (!req.is('application/json')) {
        refuse(res, 400, 'UNSUPPORTED_CONTENT_TYPE', 'Content-Type must be application/json');
        return;
      }
      next();
    },
    readBody,
    async (req, res) => {
      const reference = requestReferenceNoSchema.safeParse(req.get('request-reference-no'));
      if (!reference.success) {
        refuse(res, 400, 'INVALID_REQUEST_REFERENCE_NO', 'the Request-Reference-No header must be a UUIDv4');
        return;
      }
      let json: unknown;
      try {
        json = JSON.parse(Buffer.isBuffer(req.body) ? req.body.toString('utf8') : '');
      } catch {
        refuse(res, 400, 'MALFORMED_JSON', 'the body is not valid JSON');
        return;
      }
      const nowMs = now();
      const payload = payloadSchemaAt(Math.floor(nowMs / 1000)).safeParse(json);
      if (!payload.success) {
        // Messages name the field and the rule, never the value.
        const message = payload.error.issues
          .map((issue) => (issue.path.length > 0 ? `${issue.path.join('.')}: ${issue.message}` : issue.message))
          .join('; ');
        refuse(res, 400, 'VALIDATION_ERROR', message);
        return;
      }
      const { accessToken, refreshToken, expiresAt } = payload.data;
      const sessionId = randomUUID();
      const id = randomUUID();
      // The session and its outbox row in one statement: stored durably before the 200, and its
      // onboarding cannot be lost between the two.
      await storeSessionForOnboarding(
        deps.database,
        {
          id,
          sessionIdHash: hashBearer(sessionId),
          requestReferenceNo: reference.data,
          accessTokenEncrypted: deps.cipher.encrypt(accessToken, sessionAccessTokenContext(id)),
          refreshTokenEncrypted: deps.cipher.encrypt(refreshToken, sessionRefreshTokenContext(id)),
          accessTokenExpiresAt: new Date(expiresAt * 1000),
          refreshTokenExpiresAt: jwtExpiry(refreshToken),
          expiresAt: new Date(nowMs + deps.sessionTtlMs),
        },
        deps.taskQueue,
      );
      deps.onboarding.wake();
      deps.logger.debug({ sessionRecordId: id, requestReferenceNo: reference.data }, 'embedded session stored');
      const body: z.infer<typeof sessionCreatedSchema> = { sessionId };
      res.status(200).setHeader('Cache-Control', 'no-store').json(body);
    },
  );

  // The contract's caller knows 200, 400 and 403: a body that cannot be read (too large, an
  // unknown encoding or charset, cut short) is a malformed call, 400 with its own code.
  const onBodyError: ErrorRequestHandler = (error: unknown, req, res, _next) => {
    const refused = clientErrorOf(error);
    if (refused) {
      refuse(
        res,
        400,
        refused.code,
        refused.code === 'BODY_TOO_LARGE'
          ? `the body must be at most ${SESSION_BODY_LIMIT_BYTES} bytes`
          : refused.message,
      );
      return;
    }
    // The database could not take it now (lib/admission.ts): 503 and when to come back, never 500.
    const busy = overloadOf(error);
    if (busy) {
      deps.logger.warn({ reason: busy.reason }, 'session URL refused for load: 503 OVERLOADED');
      res.setHeader('Retry-After', String(busy.retryAfterSeconds));
      refuse(res, 503, 'OVERLOADED', 'the session could not be stored just now; retry after Retry-After');
      return;
    }
    deps.logger.error({ err: error, method: req.method, path: req.path }, 'session URL failed');
    refuse(res, 500, 'INTERNAL', 'the session could not be stored; retry');
  };
  router.all('/embedded/session', (_req, res) => {
    res.setHeader('Allow', 'POST');
    refuse(res, 405, 'METHOD_NOT_ALLOWED', 'the session URL takes POST only');
  });
  router.use('/embedded', (req, res) =>
    refuse(res, 404, 'NOT_FOUND', `no route for ${req.method} ${req.baseUrl}${req.path}`),
  );
  router.use('/embedded', onBodyError);
  return router;
}
