// Embedded-app sessions: the session URL's request (interface endpoint 6, contract section 6),
// the session id, and the onboarding workflow's input and result (ids and codes only).
import { z } from 'zod';

const base64url = '[A-Za-z0-9_-]';

/** The protected header of a compact JWS/JWE, if it is base64url JSON with an `alg`. */
function protectedHeader(token: string): Record<string, unknown> | null {
  const [first] = token.split('.');
  if (!first) return null;
  try {
    const header: unknown = JSON.parse(Buffer.from(first, 'base64url').toString('utf8'));
    return typeof header === 'object' && header !== null && typeof (header as { alg?: unknown }).alg === 'string'
      ? (header as Record<string, unknown>)
      : null;
  } catch {
    return null;
  }
}

/** A compact JWE: header.encryptedKey.iv.ciphertext.tag (the key part is empty for `dir`). */
export const compactJweSchema = z
  .string({ error: 'accessToken must be a string' })
  .max(8192, 'accessToken is too long')
  .regex(
    new RegExp(`^${base64url}+\\.${base64url}*\\.${base64url}+\\.${base64url}+\\.${base64url}+$`),
    'accessToken must be a compact JWE (5 base64url parts)',
  )
  .refine(
    (token) => typeof protectedHeader(token)?.enc === 'string',
    'accessToken must be a compact JWE (its header names alg and enc)',
  );

/** A compact JWS/JWT: header.payload.signature. */
export const compactJwtSchema = z
  .string({ error: 'refreshToken must be a string' })
  .max(8192, 'refreshToken is too long')
  .regex(
    new RegExp(`^${base64url}+\\.${base64url}+\\.${base64url}+$`),
    'refreshToken must be a compact JWT (3 base64url parts)',
  )
  .refine((token) => protectedHeader(token) !== null, 'refreshToken must be a compact JWT (its header names alg)');

/** The Request-Reference-No header of the session URL call. */
export const requestReferenceNoSchema = z.uuidv4({ error: 'the Request-Reference-No header must be a UUIDv4' });

/**
 * The longest expiresAt accepted ahead of now: ten years. A millisecond timestamp sent as seconds
 * (a thousand times too far) fails; a wallet service whose clock runs ahead of ours (the sandbox's
 * clock can be moved on by days) does not.
 */
const MAX_EXPIRES_AHEAD_SECONDS = 10 * 366 * 86_400;

/**
 * The session payload, checked against `nowSeconds` (expiresAt must lie in the future). Fields the
 * interface does not name are ignored, not refused: a wallet service that adds one must not stop
 * every user's session (nothing but these three is stored).
 */
export function sessionPayloadSchema(nowSeconds: number) {
  return z
    .object({
      accessToken: compactJweSchema,
      refreshToken: compactJwtSchema,
      expiresAt: z
        .number({ error: 'expiresAt must be an integer UNIX time in seconds' })
        .int('expiresAt must be an integer UNIX time in seconds')
        .refine((value) => value > nowSeconds, 'expiresAt must be in the future')
        .refine(
          (value) => value <= nowSeconds + MAX_EXPIRES_AHEAD_SECONDS,
          'expiresAt must be UNIX time in seconds (this is too far ahead)',
        ),
    })
    .strip();
}
export type SessionPayload = z.infer<ReturnType<typeof sessionPayloadSchema>>;

/** walletflow issues UUIDv4 session ids; anything else at the landing page is unknown. */
export const sessionIdSchema = z.uuidv4();

export const embeddedSessionStatuses = ['PENDING', 'READY', 'FAILED'] as const;
export type EmbeddedSessionStatus = (typeof embeddedSessionStatuses)[number];

export interface OnboardEmbeddedSessionInput {
  /** The embedded_session row id (never the session id itself). */
  sessionRecordId: string;
}

export interface OnboardEmbeddedSessionResult {
  sessionRecordId: string;
  status: 'READY' | 'FAILED';
  linkId: string | null;
  errorCode: string | null;
}

/**
 * Onboarding failure codes after which the user must reopen the app from the wallet (LINK_UNLINKED: the link was
 * revoked after this session began; a session opened since links again).
 */
export const reopenFromWalletCodes: ReadonlySet<string> = new Set([
  'REAUTH_REQUIRED',
  'USER_TOKEN_INVALID',
  'LINK_UNLINKED',
]);

/** The most of a profile's first name the landing page keeps (embedded_session.first_name). */
export const FIRST_NAME_MAX_CHARACTERS = 100;
// Control characters, lone surrogate halves and the bidi embeddings, overrides and isolates that
// could reorder the greeting around the name.
const unsafeInName = /[\p{Cc}\p{Cs}\u202a-\u202e\u2066-\u2069]/gu;

/**
 * The first name as the landing page shows it: unsafe characters dropped, at most 100 whole
 * characters (code points: a cut never splits a surrogate pair into a broken character), trimmed;
 * null when nothing is left. Escaping is the page's job (lib/html.ts); this only bounds.
 */
export function firstNameForPage(firstName: string | null | undefined): string | null {
  if (!firstName) return null;
  // Bounded before the scan too: a 100 KB name is not walked whole.
  const head = firstName.slice(0, FIRST_NAME_MAX_CHARACTERS * 4).replace(unsafeInName, '');
  const bounded = Array.from(head).slice(0, FIRST_NAME_MAX_CHARACTERS).join('').trim();
  return bounded === '' ? null : bounded;
}
