// Issuing, refreshing and checking every token the sandbox hands out: standalone user tokens
// (connect), embedded user tokens (session and op refresh), client tokens and id tokens.
// Everything here is synchronous so that a check and the change it guards are atomic.
import { randomUUID } from 'node:crypto';
import { serviceError } from './answers.ts';
import { epochSeconds } from './clock.ts';
import { encryptDirA256Gcm, opaqueToken, signHs256, verifyHs256 } from './compact-tokens.ts';
import type { SandboxContext } from './context.ts';
import { lifetimes } from './lifetimes.ts';
import type { AccessTokenRecord, SandboxUser } from './state.ts';

const issuer = 'walletflow-sandbox';

/** The connect token endpoint's answer; expires_in is a string, as the interface says. */
export interface StandaloneTokenResponse {
  access_token: string;
  token_type: 'Bearer';
  refresh_token: string;
  expires_in: string;
  scope: string;
  id_token: string;
}

/** What the session URL receives and POST /op/tokens answers. */
export interface EmbeddedTokens {
  accessToken: string;
  refreshToken: string;
  expiresAt: number;
}

function idToken(context: SandboxContext, user: SandboxUser, nowMs: number): string {
  const iat = epochSeconds(nowMs);
  return signHs256(
    {
      iss: issuer,
      sub: user.userId,
      aud: context.registration.clientId,
      iat,
      exp: iat + lifetimes.standaloneAccessToken,
      profile_id: user.profileId,
    },
    context.keys.signing,
  );
}

function newStandaloneAccessToken(context: SandboxContext, userId: string, scopes: string[], nowMs: number): string {
  const accessToken = opaqueToken();
  context.state.accessTokens.set(accessToken, {
    kind: 'standalone',
    userId,
    scopes,
    expiresAt: nowMs + lifetimes.standaloneAccessToken * 1000,
    revoked: false,
  });
  return accessToken;
}

/** A new standalone access and refresh token for `user` (authorization code grant). */
export function issueStandaloneTokens(context: SandboxContext, user: SandboxUser): StandaloneTokenResponse {
  const now = context.clock.now();
  const scopes = [...context.registration.scopes];
  const accessToken = newStandaloneAccessToken(context, user.userId, scopes, now);
  const refreshToken = opaqueToken();
  context.state.refreshTokens.set(refreshToken, {
    kind: 'standalone',
    userId: user.userId,
    scopes,
    expiresAt: now + lifetimes.standaloneRefreshToken * 1000,
    revoked: false,
    accessToken,
  });
  return {
    access_token: accessToken,
    token_type: 'Bearer',
    refresh_token: refreshToken,
    expires_in: String(lifetimes.standaloneAccessToken),
    scope: scopes.join(' '),
    id_token: idToken(context, user, now),
  };
}

export type StandaloneRefreshResult =
  | { ok: true; response: StandaloneTokenResponse }
  | { ok: false; error: 'invalid_grant' | 'invalid_scope'; description: string };

/**
 * The refresh_token grant: a new access token, the previous one invalidated, the same refresh
 * token until it expires (interface, endpoint 2). `scope` narrows the original set.
 */
export function refreshStandaloneTokens(
  context: SandboxContext,
  refreshToken: string,
  requestedScope: string | undefined,
): StandaloneRefreshResult {
  const now = context.clock.now();
  const record = context.state.refreshTokens.get(refreshToken);
  const user = record ? context.state.users.get(record.userId) : undefined;
  if (!record || record.kind !== 'standalone' || record.revoked || record.expiresAt <= now || !user) {
    return { ok: false, error: 'invalid_grant', description: 'refresh token unknown, revoked or expired' };
  }
  let scopes = record.scopes;
  if (requestedScope !== undefined && requestedScope.trim() !== '') {
    const requested = [...new Set(requestedScope.trim().split(/\s+/))];
    const outside = requested.find((scope) => !record.scopes.includes(scope));
    if (outside !== undefined)
      return { ok: false, error: 'invalid_scope', description: `scope ${outside} was not granted originally` };
    scopes = requested;
  }
  const previous = context.state.accessTokens.get(record.accessToken);
  if (previous) previous.revoked = true;
  record.accessToken = newStandaloneAccessToken(context, record.userId, scopes, now);
  context.state.refreshes.push({ kind: 'standalone', userId: record.userId, at: now });
  return {
    ok: true,
    response: {
      access_token: record.accessToken,
      token_type: 'Bearer',
      refresh_token: refreshToken,
      expires_in: String(lifetimes.standaloneAccessToken),
      scope: scopes.join(' '),
      id_token: idToken(context, user, now),
    },
  };
}

/** Revokes a standalone grant (its refresh token and current access token). */
export function revokeStandaloneGrant(context: SandboxContext, refreshToken: string): void {
  const record = context.state.refreshTokens.get(refreshToken);
  if (!record) return;
  record.revoked = true;
  const access = context.state.accessTokens.get(record.accessToken);
  if (access) access.revoked = true;
}

/** A new embedded pair: a JWE access token (600 s) and a JWT refresh token (1200 s). */
export function issueEmbeddedTokens(context: SandboxContext, userId: string): EmbeddedTokens {
  const now = context.clock.now();
  const iat = epochSeconds(now);
  const accessExpiresAt = now + lifetimes.embeddedAccessToken * 1000;
  const refreshExpiresAt = now + lifetimes.embeddedRefreshToken * 1000;
  const accessToken = encryptDirA256Gcm(
    { iss: issuer, sub: userId, jti: randomUUID(), typ: 'access', iat, exp: epochSeconds(accessExpiresAt) },
    context.keys.encryption,
  );
  const refreshToken = signHs256(
    { iss: issuer, sub: userId, jti: randomUUID(), typ: 'refresh', iat, exp: epochSeconds(refreshExpiresAt) },
    context.keys.signing,
  );
  const scopes = [...context.registration.scopes];
  context.state.accessTokens.set(accessToken, {
    kind: 'embedded',
    userId,
    scopes,
    expiresAt: accessExpiresAt,
    revoked: false,
  });
  context.state.refreshTokens.set(refreshToken, {
    kind: 'embedded',
    userId,
    scopes,
    expiresAt: refreshExpiresAt,
    revoked: false,
    accessToken,
  });
  return { accessToken, refreshToken, expiresAt: epochSeconds(accessExpiresAt) };
}

/** POST /op/tokens: rotation, so the old pair stops working (interface, endpoint 8). */
export function rotateEmbeddedTokens(context: SandboxContext, refreshToken: string): EmbeddedTokens {
  const now = context.clock.now();
  const record = context.state.refreshTokens.get(refreshToken);
  if (
    !record ||
    record.kind !== 'embedded' ||
    record.revoked ||
    record.expiresAt <= now ||
    !context.state.users.has(record.userId)
  ) {
    throw serviceError(400, 'REFRESH_TOKEN_INVALID', 'Refresh token is unknown, already used or expired');
  }
  record.revoked = true;
  const previous = context.state.accessTokens.get(record.accessToken);
  if (previous) previous.revoked = true;
  context.state.refreshes.push({ kind: 'embedded', userId: record.userId, at: now });
  return issueEmbeddedTokens(context, record.userId);
}

/** A valid (known, unexpired, unrevoked) user access token of either kind, or null. */
export function validUserAccessToken(context: SandboxContext, token: string): AccessTokenRecord | null {
  const record = context.state.accessTokens.get(token);
  if (!record || record.revoked || record.expiresAt <= context.clock.now()) return null;
  return context.state.users.has(record.userId) ? record : null;
}

export interface ClientTokenResponse {
  access_token: string;
  token_type: 'Bearer';
  expires_in: string;
  scope: string;
}

/** The client_credentials grant: a JWS naming the partner, valid 3600 s on the sandbox clock. */
export function issueClientToken(context: SandboxContext): ClientTokenResponse {
  const iat = epochSeconds(context.clock.now());
  const scope = context.registration.scopes.join(' ');
  const accessToken = signHs256(
    {
      iss: issuer,
      sub: context.registration.clientId,
      typ: 'client',
      scope,
      iat,
      exp: iat + lifetimes.clientToken,
      jti: randomUUID(),
    },
    context.keys.signing,
  );
  return { access_token: accessToken, token_type: 'Bearer', expires_in: String(lifetimes.clientToken), scope };
}

export function isValidClientToken(context: SandboxContext, token: string): boolean {
  const claims = verifyHs256(token, context.keys.signing);
  if (!claims || claims.typ !== 'client' || claims.sub !== context.registration.clientId) return false;
  return typeof claims.exp === 'number' && claims.exp * 1000 > context.clock.now();
}
