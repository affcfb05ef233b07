// The connect service: the authorization URL for the login redirect and the three grants of the
// token endpoint (form body, HTTP Basic client authentication, OAuth 2.0 errors).
import { z } from 'zod';
import { clientTokenExpiry } from './client-token.ts';
import type { ClientToken } from './client-token.ts';
import type { WalletOperation } from './operations.ts';
import type { WalletResult, WalletTransport } from './transport.ts';
import { parseWith } from './transport.ts';

/** `expires_in` is a string in the interface; a number (plain OAuth) is read as well. */
const expiresInSchema = z
  .union([z.string().regex(/^\d+$/), z.number().int().nonnegative()])
  .transform((value) => Number(value));

const tokenResponseSchema = z.object({
  access_token: z.string().min(1),
  token_type: z.string(),
  refresh_token: z.string().min(1).optional(),
  expires_in: expiresInSchema,
  scope: z.string().optional(),
  id_token: z.string().optional(),
});

const clientTokenResponseSchema = z.object({
  access_token: z.string().min(1),
  expires_in: expiresInSchema.optional(),
});

/** A user token pair from the authorization_code or refresh_token grant. */
export interface UserTokens {
  accessToken: string;
  tokenType: string;
  /** Whatever refresh token the answer carries; null when it carries none (keep the old one). */
  refreshToken: string | null;
  expiresIn: number;
  /** On the client's clock: when the call was sent plus expires_in. */
  expiresAt: Date;
  scope: string | null;
  idToken: string | null;
}

export interface ConnectSettings {
  connectUrl: string;
  clientId: string;
  clientSecret: string;
  redirectUri: string;
  now: () => number;
}

export interface ConnectCalls {
  authorizeUrl(input: { mobile?: string; state?: string }): string;
  exchangeCode(code: string): Promise<WalletResult<UserTokens>>;
  refreshStandalone(refreshToken: string, scope?: string): Promise<WalletResult<UserTokens>>;
  clientCredentials(): Promise<WalletResult<ClientToken>>;
}

export function createConnectCalls(settings: ConnectSettings, transport: WalletTransport): ConnectCalls {
  const basic = `Basic ${Buffer.from(`${settings.clientId}:${settings.clientSecret}`).toString('base64')}`;

  function token<T>(
    operation: WalletOperation,
    form: Record<string, string>,
    secrets: string[],
    parse: (body: unknown, sentAt: number) => T,
  ): Promise<WalletResult<T>> {
    const sentAt = settings.now();
    return transport.send({
      operation,
      method: 'POST',
      baseUrl: settings.connectUrl,
      path: '/token',
      headers: {
        accept: 'application/json',
        'content-type': 'application/x-www-form-urlencoded',
        authorization: basic,
      },
      body: new URLSearchParams(form).toString(),
      secrets: [settings.clientSecret, basic, ...secrets],
      parse: (body) => parse(body, sentAt),
    });
  }

  const readUserTokens = (body: unknown, sentAt: number): UserTokens => {
    const response = parseWith(tokenResponseSchema)(body);
    return {
      accessToken: response.access_token,
      tokenType: response.token_type,
      refreshToken: response.refresh_token ?? null,
      expiresIn: response.expires_in,
      expiresAt: new Date(sentAt + response.expires_in * 1000),
      scope: response.scope ?? null,
      idToken: response.id_token ?? null,
    };
  };

  return {
    authorizeUrl({ mobile, state }) {
      const query = new URLSearchParams({
        response_type: 'code',
        client_id: settings.clientId,
        redirect_uri: settings.redirectUri,
        prompt: 'login',
      });
      // Absent: the wallet's login page asks for the mobile number (interface: login scenarios).
      if (mobile !== undefined) query.set('user_id', mobile);
      if (state !== undefined) query.set('state', state);
      return `${settings.connectUrl}/authorize?${query.toString()}`;
    },

    exchangeCode(code) {
      return token(
        'connect.token.authorization_code',
        { grant_type: 'authorization_code', code, redirect_uri: settings.redirectUri },
        [code],
        readUserTokens,
      );
    },

    refreshStandalone(refreshToken, scope) {
      const form: Record<string, string> = { grant_type: 'refresh_token', refresh_token: refreshToken };
      if (scope !== undefined) form.scope = scope;
      return token('connect.token.refresh_token', form, [refreshToken], readUserTokens);
    },

    clientCredentials() {
      return token('connect.token.client_credentials', { grant_type: 'client_credentials' }, [], (body, sentAt) => {
        const response = parseWith(clientTokenResponseSchema)(body);
        return {
          accessToken: response.access_token,
          expiresAt: clientTokenExpiry(response.access_token, response.expires_in, sentAt),
        };
      });
    },
  };
}
