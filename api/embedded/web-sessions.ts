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
  const row = await database.appSession.findUnique({
    where: { cookieHash: hashBearer(cookieValue) },
    include: {
      embeddedSession: { select: { ...embeddedSessionShown, createdAt: true } },
    },
  });
  if (!row || row.expiresAt.getTime() <= now.getTime()) return null;
  const { createdAt, ...embeddedSession } = row.embeddedSession;
  if (
    embeddedSession.linkId !== null &&
    (await database.linkEvent.count({
      where: { linkId: embeddedSession.linkId, type: 'UNLINKED', at: { gt: createdAt } },
    })) > 0
  )
    return null;
  return { id: row.id, csrfToken: row.csrfToken, expiresAt: row.expiresAt, embeddedSession };
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
