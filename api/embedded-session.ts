// The session URL (POST /embedded/session) the wallet service calls when a user opens the
// partner's tile: sender allowlist first, then headers and body, then the tokens are stored
// encrypted under a new one-time session id and the answer goes out at once; the profile fetch and
// linking run afterwards in the onboardEmbeddedSession workflow. Errors: 400/403 `{ code, message }`.
import { randomUUID } from 'node:crypto';
import express, { Router, type ErrorRequestHandler, type Response } from 'express';
import { decodeJwt } from 'jose';
import type { Client } from '@temporalio/client';
import { requestReferenceNoSchema, sessionPayloadSchema, type OnboardEmbeddedSessionInput } from '../domain/embedded-session.ts';
import type { Database } from '../lib/database.ts';
import { hashBearer, onboardingWorkflowId, sessionAccessTokenContext, sessionRefreshTokenContext } from '../lib/embedded-sessions.ts';
import type { IpAllowlist } from '../lib/ip-allowlist.ts';
import type { Logger } from '../lib/logger.ts';
import type { TokenCipher } from '../lib/token-cipher.ts';

/** The session payload is three tokens and a number: a few KiB at most. */
export const SESSION_BODY_LIMIT_BYTES = 16 * 1024;

export interface EmbeddedSessionDependencies {
  database: Database;
  cipher: TokenCipher;
  temporal: Client;
  taskQueue: string;
  allowlist: IpAllowlist;
  /** How long the session id may be used at the landing page. */
  sessionTtlMs: number;
  logger: Logger;
  now?: () => number;
}

/** Contract section 6: a refused session call answers `{ code, message }`. */
function refuse(res: Response, status: number, code: string, message: string): void {
  res.status(status).setHeader('Cache-Control', 'no-store').json({ code, message });
}

/** Starts the onboarding workflow (or finds it running): the landing page calls it too, as a safety net. */
export async function startOnboarding(temporal: Client, taskQueue: string, sessionRecordId: string): Promise<void> {
  const input: OnboardEmbeddedSessionInput = { sessionRecordId };
  await temporal.workflow.start('onboardEmbeddedSession', {
    taskQueue,
    workflowId: onboardingWorkflowId(sessionRecordId),
    args: [input],
    workflowIdConflictPolicy: 'USE_EXISTING',
    workflowIdReusePolicy: 'REJECT_DUPLICATE',
  });
}

function jwtExpiry(token: string): Date | null {
  try {
    const { exp } = decodeJwt(token);
    return typeof exp === 'number' ? new Date(exp * 1000) : null;
  } catch {
    return null;
  }
}

export function embeddedSessionRouter(deps: EmbeddedSessionDependencies): Router {
  const router = Router();
  const now = deps.now ?? Date.now;
  const readBody = express.raw({ type: () => true, limit: SESSION_BODY_LIMIT_BYTES });

  router.post(
    '/embedded/session',
    (req, res, next) => {
      // First check, before anything is read or stored: only the wallet service's senders.
      if (!deps.allowlist.allows(req.ip)) {
        deps.logger.warn({ ip: req.ip }, 'session URL called from an address outside SESSION_ALLOWED_IPS');
        refuse(res, 403, 'FORBIDDEN', 'this sender may not call the session URL');
        return;
      }
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
      const payload = sessionPayloadSchema(Math.floor(nowMs / 1000)).safeParse(json);
      if (!payload.success) {
        // Messages name the field and the rule, never the value.
        const message = payload.error.issues.map((issue) => (issue.path.length > 0 ? `${issue.path.join('.')}: ${issue.message}` : issue.message)).join('; ');
        refuse(res, 400, 'VALIDATION_ERROR', message);
        return;
      }
      const { accessToken, refreshToken, expiresAt } = payload.data;
      const sessionId = randomUUID();
      const id = randomUUID();
      await deps.database.embeddedSession.create({
        data: {
          id,
          sessionIdHash: hashBearer(sessionId),
          requestReferenceNo: reference.data,
          accessTokenEncrypted: deps.cipher.encrypt(accessToken, sessionAccessTokenContext(id)),
          refreshTokenEncrypted: deps.cipher.encrypt(refreshToken, sessionRefreshTokenContext(id)),
          accessTokenExpiresAt: new Date(expiresAt * 1000),
          refreshTokenExpiresAt: jwtExpiry(refreshToken),
          expiresAt: new Date(nowMs + deps.sessionTtlMs),
        },
      });
      // Starting is quick; the workflow's result is not awaited. Should the start fail, the
      // landing page starts it when the user arrives.
      try {
        await startOnboarding(deps.temporal, deps.taskQueue, id);
      } catch (error) {
        deps.logger.warn({ sessionRecordId: id, err: (error as Error).message }, 'could not start session onboarding; the landing page will');
      }
      deps.logger.info({ sessionRecordId: id, requestReferenceNo: reference.data }, 'embedded session stored');
      res.status(200).setHeader('Cache-Control', 'no-store').json({ sessionId });
    },
  );

  const onBodyError: ErrorRequestHandler = (error: { type?: string }, _req, res, next) => {
    if (error.type === 'entity.too.large') {
      refuse(res, 400, 'BODY_TOO_LARGE', `the body must be at most ${SESSION_BODY_LIMIT_BYTES} bytes`);
      return;
    }
    if (error.type === 'request.aborted' || error.type === 'entity.verify.failed' || error.type === 'encoding.unsupported' || error.type === 'charset.unsupported') {
      refuse(res, 400, 'MALFORMED_BODY', 'the body could not be read');
      return;
    }
    next(error);
  };
  router.use('/embedded/session', onBodyError);
  return router;
}
