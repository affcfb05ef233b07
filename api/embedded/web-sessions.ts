// The partner's web session in the wallet app's web view: a random cookie value (only its hash is
// stored), bound to the consumed embedded session, with the synchronizer CSRF token of its forms
// and an expiry. The cookie is HttpOnly, SameSite=Lax, scoped to /app, Secure over HTTPS.
import { randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import type { Request, Response } from 'express';
import type { Prisma } from '../../generated/prisma/client.ts';
import type { Database } from '../../lib/database.ts';
import { hashBearer } from '../../links/embedded-sessions.ts';

export const APP_COOKIE = 'walletflow_app';
export const APP_PATH = '/app';

export interface AppSessionView {
  id: string;
  csrfToken: string;
  expiresAt: Date;
  embeddedSession: {
    id: string;
    status: 'PENDING' | 'READY' | 'FAILED';
    errorCode: string | null;
    linkId: string | null;
    firstName: string | null;
    kycStatus: string | null;
    /** The wallet's reference of the session URL call that opened it (who acts on the page: walletUserActorName). */
    requestReferenceNo: string;
  };
}

/** What a web session's pages read of its embedded session (AppSessionView's `embeddedSession`). */
export const embeddedSessionShown = {
  id: true,
  status: true,
  errorCode: true,
  linkId: true,
  firstName: true,
  kycStatus: true,
  requestReferenceNo: true,
} as const;

/** Creates the web session inside the transaction that consumed the session id. */
export async function createAppSession(
  tx: Prisma.TransactionClient,
  embeddedSessionId: string,
  expiresAt: Date,
): Promise<{ cookieValue: string }> {
  const cookieValue = randomBytes(32).toString('base64url');
  await tx.appSession.create({
    data: {
      id: randomUUID(),
      cookieHash: hashBearer(cookieValue),
      embeddedSessionId,
      csrfToken: randomBytes(32).toString('base64url'),
      expiresAt,
    },
  });
  return { cookieValue };
}

function cookieValueOf(req: Request): string | null {
  const header = req.headers.cookie;
  if (!header) return null;
  for (const part of header.split(';')) {
    const [name, ...rest] = part.trim().split('=');
    if (name === APP_COOKIE) {
      const value = rest.join('=');
      return /^[A-Za-z0-9_-]{43}$/.test(value) ? value : null;
    }
  }
  return null;
}

/** The request's live web session, or null (no cookie, unknown or expired). */
export async function readAppSession(database: Database, req: Request, now: Date): Promise<AppSessionView | null> {
  const cookieValue = cookieValueOf(req);
  return cookieValue ? readAppSessionByCookie(database, cookieValue, now) : null;
}

/**
 * The live web session that a cookie value names, or null (unknown, expired, or its link revoked since its embedded
 * session began: a revoke ends the sessions it finds, and this ends one begun beside it or opened after it with an
 * older session id, which a relink of the same wallet would otherwise bring back).
 */
export async function readAppSessionByCookie(
  database: Database,
  cookieValue: string,
  now: Date,
): Promise<AppSessionView | null> {
  // One read, on every page and every poll: the web session, its embedded session, and whether its link was revoked
  // since that began (link_event's (link_id, at) index).
  const [row] = await database.$queryRaw<
    Array<{
      id: string;
      csrf_token: string;
      expires_at: Date;
      embedded_id: string;
      status: AppSessionView['embeddedSession']['status'];
      error_code: string | null;
      link_id: string | null;
      first_name: string | null;
      kyc_status: string | null;
      request_reference_no: string;
      revoked: boolean;
    }>
  >`
    SELECT a.id::text AS id, a.csrf_token, a.expires_at, e.id::text AS embedded_id, e.status::text AS status,
           e.error_code, e.link_id::text AS link_id, e.first_name, e.kyc_status, e.request_reference_no,
           EXISTS (SELECT 1 FROM link_event ev
                   WHERE ev.link_id = e.link_id AND ev.type = 'UNLINKED' AND ev.at > e.created_at) AS revoked
    FROM app_session a JOIN embedded_session e ON e.id = a.embedded_session_id
    WHERE a.cookie_hash = ${hashBearer(cookieValue)}`;
  if (!row || row.expires_at.getTime() <= now.getTime() || row.revoked) return null;
  return {
    id: row.id,
    csrfToken: row.csrf_token,
    expiresAt: row.expires_at,
    embeddedSession: {
      id: row.embedded_id,
      status: row.status,
      errorCode: row.error_code,
      linkId: row.link_id,
      firstName: row.first_name,
      kycStatus: row.kyc_status,
      requestReferenceNo: row.request_reference_no,
    },
  };
}

export function setAppCookie(
  res: Response,
  cookieValue: string,
  options: { maxAgeSeconds: number; secure: boolean },
): void {
  const attributes = [
    `${APP_COOKIE}=${cookieValue}`,
    `Path=${APP_PATH}`,
    `Max-Age=${options.maxAgeSeconds}`,
    'HttpOnly',
    'SameSite=Lax',
  ];
  if (options.secure) attributes.push('Secure');
  res.append('Set-Cookie', attributes.join('; '));
}

/** Constant-time comparison of a submitted CSRF token with the session's. */
export function csrfMatches(session: AppSessionView, submitted: unknown): boolean {
  if (typeof submitted !== 'string' || submitted.length === 0 || submitted.length > 128) return false;
  const expected = Buffer.from(session.csrfToken, 'utf8');
  const actual = Buffer.from(submitted, 'utf8');
  return expected.length === actual.length && timingSafeEqual(expected, actual);
}

/** Idempotency keys of the page's fundings and payments start with the web session's id. */
export const appIdempotencyPrefix = (session: Pick<AppSessionView, 'id'>) => `app:${session.id}:`;
