// Who may start a standalone login (contract-decisions section 12): a login URL's token minted by
// the ops API, or a login token the partner backend signed with LOGIN_SIGNING_KEY (HS256 JWT,
// `sub` = the partner user id, `exp` at most 10 minutes ahead). Either is used at most once: both
// are recorded here by a SHA-256 hash, so a replayed token finds its row already used. A signed
// token is recorded by its decoded signature, not its text, and only its canonical encoding is
// accepted: base64url leaves 2 bits of an HS256 signature's last character unused,
// so four strings would otherwise verify as one token and each pass the replay guard.
import { createHash, randomBytes } from 'node:crypto';
import { errors as joseErrors, jwtVerify } from 'jose';
import { z } from 'zod';
import { partnerUserIdSchema } from '../domain/ledger.ts';
import { isEmbeddedPartnerUserId } from '../domain/link.ts';
import type { Database } from '../lib/database.ts';

/** The longest a login URL or a signed login token may live. */
export const LOGIN_GRANT_MAX_TTL_MS = 10 * 60_000;
/** Clock difference tolerated between the partner backend and walletflow when checking `exp`. */
const CLOCK_TOLERANCE_SECONDS = 30;

/**
 * The partner user id a standalone login binds: any the ops API takes, except the embedded-app users' `wallet:`
 * namespace (domain/link.ts).
 */
const standalonePartnerUserIdSchema = partnerUserIdSchema.refine(
  (partnerUserId) => !isEmbeddedPartnerUserId(partnerUserId),
  'partnerUserId must not start with wallet: (the ids of embedded-app users, wallet:{profileId}, no login binds)',
);
/** The mobile number the wallet's login page starts with (and pins). */
export const loginMobileSchema = z
  .string()
  .regex(/^\+?\d{7,15}$/, 'must be a mobile number of 7 to 15 digits, optionally after +');

/** POST /ops/links/login-urls. */
export const loginUrlRequestSchema = z
  .object({ partnerUserId: standalonePartnerUserIdSchema, mobile: loginMobileSchema.optional() })
  .strict();
export type LoginUrlRequest = z.infer<typeof loginUrlRequestSchema>;

/** The claims walletflow reads from a signed login token (others are ignored). */
const signedClaimsSchema = z.object({
  sub: standalonePartnerUserIdSchema,
  exp: z.number().int(),
  mobile: loginMobileSchema.optional(),
});

/**
 * What a signed login token may say it is for: the contract asks only for `sub` and
 * `exp`, so neither is required; but a token whose `aud` names someone else, or whose `typ` is
 * another kind of token (an access token signed with the same key), is not a login.
 */
export const LOGIN_TOKEN_AUDIENCE = 'walletflow:login';
const loginTokenTypes = new Set(['JWT', 'LOGIN+JWT']);

/** The signature segment, decoded, if it is the canonical base64url of its bytes; null otherwise. */
function canonicalSignature(token: string): Buffer | null {
  const segment = token.split('.')[2] ?? '';
  const bytes = Buffer.from(segment, 'base64url');
  return bytes.length > 0 && bytes.toString('base64url') === segment ? bytes : null;
}
const hashSignature = (signature: Buffer) =>
  createHash('sha256').update('login-token-signature:').update(signature).digest('hex');

export type LoginRefusal = 'invalid' | 'used' | 'expired';
export type RedeemedLogin =
  { ok: true; partnerUserId: string; mobile: string | undefined } | { ok: false; reason: LoginRefusal };

const hashToken = (token: string) => createHash('sha256').update(token, 'utf8').digest('hex');
const looksLikeJwt = (token: string) => /^[\w-]+\.[\w-]+\.[\w-]*$/.test(token);

/** Mints a single-use login token for `partnerUserId`, valid 10 minutes; records who minted it. */
export async function mintLoginGrant(
  database: Database,
  input: LoginUrlRequest & { actor: string; now?: number },
): Promise<{ token: string; expiresAt: Date }> {
  const token = randomBytes(32).toString('base64url');
  const expiresAt = new Date((input.now ?? Date.now()) + LOGIN_GRANT_MAX_TTL_MS);
  await database.$transaction([
    database.loginGrant.create({
      data: {
        tokenHash: hashToken(token),
        partnerUserId: input.partnerUserId,
        mobile: input.mobile ?? null,
        source: 'OPS',
        expiresAt,
      },
    }),
    database.linkEvent.create({
      data: { partnerUserId: input.partnerUserId, type: 'LOGIN_URL_MINTED', actor: input.actor.slice(0, 128) },
    }),
  ]);
  return { token, expiresAt };
}

/**
 * A login token read without the database: a signed one verified (its signature, claims and lifetime), an ops-minted
 * one as the hash of its stored row. A token refused here costs no statement (a forged one, say).
 */
/** The shape of an ops-minted login token: 32 random bytes in base64url. */
const mintedToken = /^[A-Za-z0-9_-]{43}$/;

export type ReadLoginToken =
  | { kind: 'signed'; signature: Buffer; claims: z.infer<typeof signedClaimsSchema> }
  | { kind: 'minted'; tokenHash: string }
  | { kind: 'refused'; refusal: Extract<RedeemedLogin, { ok: false }> };

export async function readLoginToken(
  token: string,
  options: { signingKey: Buffer | undefined; now?: number },
): Promise<ReadLoginToken> {
  const now = options.now ?? Date.now();
  const refused = (reason: LoginRefusal): ReadLoginToken => ({ kind: 'refused', refusal: { ok: false, reason } });
  // An ops-minted token is 32 random bytes in base64url (mintLoginGrant): anything else names no row.
  if (!looksLikeJwt(token))
    return mintedToken.test(token) ? { kind: 'minted', tokenHash: hashToken(token) } : refused('invalid');
  if (!options.signingKey) return refused('invalid');
  const signature = canonicalSignature(token);
  if (!signature) return refused('invalid');
  let claims: z.infer<typeof signedClaimsSchema>;
  try {
    const verified = await jwtVerify(token, options.signingKey, {
      algorithms: ['HS256'],
      requiredClaims: ['sub', 'exp'],
      clockTolerance: CLOCK_TOLERANCE_SECONDS,
      currentDate: new Date(now),
    });
    const { aud } = verified.payload;
    if (aud !== undefined && !(Array.isArray(aud) ? aud : [aud]).includes(LOGIN_TOKEN_AUDIENCE))
      return refused('invalid');
    const { typ } = verified.protectedHeader;
    // RFC 7515 4.1.9: "application/" may be left out of typ; both spellings are the same type.
    if (typ !== undefined && !loginTokenTypes.has(typ.toUpperCase().replace(/^APPLICATION\//, '')))
      return refused('invalid');
    const parsed = signedClaimsSchema.safeParse(verified.payload);
    if (!parsed.success) return refused('invalid');
    claims = parsed.data;
  } catch (error) {
    return refused(error instanceof joseErrors.JWTExpired ? 'expired' : 'invalid');
  }
  // A token that lives longer than a login may is refused outright, not shortened.
  if (claims.exp * 1000 > now + LOGIN_GRANT_MAX_TTL_MS + CLOCK_TOLERANCE_SECONDS * 1000) return refused('invalid');
  return { kind: 'signed', signature, claims };
}

/**
 * Spends a login token readLoginToken took: an ops-minted one by its stored row, a signed one by its signature (then
 * recorded as used). Whoever holds neither cannot name a partner user.
 */
export async function spendLoginGrant(
  database: Pick<Database, 'loginGrant'>,
  read: Exclude<ReadLoginToken, { kind: 'refused' }>,
  options: { now?: number } = {},
): Promise<RedeemedLogin> {
  const now = options.now ?? Date.now();
  if (read.kind === 'signed') {
    const { claims } = read;
    const recorded = await database.loginGrant.createMany({
      data: [
        {
          tokenHash: hashSignature(read.signature),
          partnerUserId: claims.sub,
          mobile: claims.mobile ?? null,
          source: 'SIGNED',
          expiresAt: new Date(claims.exp * 1000),
          usedAt: new Date(now),
        },
      ],
      skipDuplicates: true,
    });
    if (recorded.count !== 1) return { ok: false, reason: 'used' };
    return { ok: true, partnerUserId: claims.sub, mobile: claims.mobile };
  }
  // Spend the row atomically: exactly one start can win it.
  const { tokenHash } = read;
  const spent = await database.loginGrant.updateMany({
    where: { tokenHash, source: 'OPS', usedAt: null, expiresAt: { gt: new Date(now) } },
    data: { usedAt: new Date(now) },
  });
  const grant = await database.loginGrant.findUnique({ where: { tokenHash } });
  // A URL minted for an embedded-app user's id before such a URL was refused binds nothing.
  if (spent.count === 1 && grant && isEmbeddedPartnerUserId(grant.partnerUserId))
    return { ok: false, reason: 'invalid' };
  if (spent.count === 1 && grant)
    return { ok: true, partnerUserId: grant.partnerUserId, mobile: grant.mobile ?? undefined };
  if (!grant || grant.source !== 'OPS') return { ok: false, reason: 'invalid' };
  return { ok: false, reason: grant.usedAt ? 'used' : 'expired' };
}
