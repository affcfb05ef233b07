// POST /connect/token: the authorization_code, refresh_token and client_credentials grants with
// HTTP Basic client authentication and RFC 6749 errors (contract-decisions section 4).
import type { Request } from 'express';
import { oauthError, type EndpointAnswer } from './answers.ts';
import type { SandboxContext } from './context.ts';
import { basicCredentials, sameSecret } from './request-checks.ts';
import { issueClientToken, issueStandaloneTokens, refreshStandaloneTokens, revokeStandaloneGrant } from './tokens.ts';

// Token responses must not be cached (RFC 6749 section 5.1).
const noStore = { 'Cache-Control': 'no-store', Pragma: 'no-cache' };

/**
 * RFC 6749 section 2.3.1: client id and secret are form-encoded before Basic encoding. The interface writes the header
 * as base64(client_id:client_secret), with nothing form-encoded: either is taken.
 */
function formDecode(value: string): string {
  try {
    return decodeURIComponent(value.replaceAll('+', ' '));
  } catch {
    return value;
  }
}

function field(req: Request, name: string): string | undefined {
  const body = (req.body ?? {}) as Record<string, unknown>;
  const value = body[name];
  return typeof value === 'string' && value !== '' ? value : undefined;
}

export function tokenEndpoint(context: SandboxContext): (req: Request) => EndpointAnswer {
  const { registration, state, clock } = context;

  const authorizationCodeGrant = (req: Request): EndpointAnswer => {
    const code = field(req, 'code');
    const redirectUri = field(req, 'redirect_uri');
    if (code === undefined || redirectUri === undefined)
      throw oauthError(400, 'invalid_request', 'code and redirect_uri are required');
    const record = state.authorizationCodes.get(code);
    if (!record) throw oauthError(400, 'invalid_grant', 'authorization code unknown');
    if (record.used) {
      // A replayed code may be stolen: RFC 6749 section 4.1.2 says to revoke what it issued.
      if (record.issued) revokeStandaloneGrant(context, record.issued.refreshToken);
      throw oauthError(400, 'invalid_grant', 'authorization code already used');
    }
    // Any presentation by the registered client uses the code up (interface: single use).
    record.used = true;
    if (record.expiresAt <= clock.now()) throw oauthError(400, 'invalid_grant', 'authorization code expired');
    if (record.redirectUri !== redirectUri)
      throw oauthError(400, 'invalid_grant', 'redirect_uri differs from the authorization request');
    const user = state.users.get(record.userId);
    if (!user) throw oauthError(400, 'invalid_grant', 'the account no longer exists');
    const tokens = issueStandaloneTokens(context, user);
    record.issued = { accessToken: tokens.access_token, refreshToken: tokens.refresh_token };
    return { status: 200, body: tokens, headers: noStore };
  };

  const refreshTokenGrant = (req: Request): EndpointAnswer => {
    const refreshToken = field(req, 'refresh_token');
    if (refreshToken === undefined) throw oauthError(400, 'invalid_request', 'refresh_token is required');
    const result = refreshStandaloneTokens(context, refreshToken, field(req, 'scope'));
    if (!result.ok) throw oauthError(400, result.error, result.description);
    return { status: 200, body: result.response, headers: noStore };
  };

  return (req) => {
    const credentials = basicCredentials(req);
    if (
      !credentials ||
      (credentials.user !== registration.clientId && formDecode(credentials.user) !== registration.clientId) ||
      !(
        sameSecret(credentials.password, registration.clientSecret) ||
        sameSecret(formDecode(credentials.password), registration.clientSecret)
      )
    ) {
      throw oauthError(401, 'invalid_client', 'client authentication failed');
    }
    if (!req.is('application/x-www-form-urlencoded')) {
      throw oauthError(400, 'invalid_request', 'the body must be application/x-www-form-urlencoded');
    }
    const grantType = field(req, 'grant_type');
    switch (grantType) {
      case undefined:
        throw oauthError(400, 'invalid_request', 'grant_type is required');
      case 'authorization_code':
        return authorizationCodeGrant(req);
      case 'refresh_token':
        return refreshTokenGrant(req);
      case 'client_credentials':
        return { status: 200, body: issueClientToken(context), headers: noStore };
      default:
        throw oauthError(400, 'unsupported_grant_type', `grant_type ${grantType} is not supported`);
    }
  };
}
