// Caches the client token (client_credentials grant) for the op service: refreshed ahead of its
// expiry, with one refresh in flight shared by every concurrent caller.
import { decodeJwt } from 'jose';

export interface ClientToken {
  accessToken: string;
  expiresAt: Date;
}

export interface ClientTokenCache {
  /** A token believed valid for at least the margin, fetching one if needed. */
  get(): Promise<string>;
  /** Forgets `token` (after the service refused it); a newer cached token is kept. */
  invalidate(token: string): void;
}

export interface ClientTokenCacheOptions {
  fetchToken: () => Promise<ClientToken>;
  now: () => number;
  /** Refresh this long before expiry (default 60 s). */
  refreshMarginMs?: number;
}

/** The interface's client token lifetime, used when the token tells nothing. */
export const CLIENT_TOKEN_LIFETIME_SECONDS = 3600;

export function createClientTokenCache(options: ClientTokenCacheOptions): ClientTokenCache {
  const marginMs = options.refreshMarginMs ?? 60_000;
  let cached: { token: string; refreshAt: number } | null = null;
  let inFlight: Promise<string> | null = null;

  const refresh = (): Promise<string> => {
    inFlight ??= (async () => {
      try {
        const fetchedAt = options.now();
        const { accessToken, expiresAt } = await options.fetchToken();
        const lifetimeMs = expiresAt.getTime() - fetchedAt;
        // A lifetime shorter than the margin would refetch on every call: use half of it instead.
        cached = { token: accessToken, refreshAt: expiresAt.getTime() - Math.min(marginMs, lifetimeMs / 2) };
        return accessToken;
      } finally {
        inFlight = null;
      }
    })();
    return inFlight;
  };

  return {
    async get() {
      if (cached && options.now() < cached.refreshAt) return cached.token;
      return refresh();
    },
    invalidate(token) {
      if (cached?.token === token) cached = null;
    },
  };
}

/**
 * When the client token expires, on the client's clock. Its claims are read, not trusted: they
 * only schedule the refresh, and a refused token is replaced anyway. The lifetime `exp - iat` is
 * preferred to `exp` itself so that a skewed service clock does not matter.
 */
export function clientTokenExpiry(accessToken: string, expiresIn: number | undefined, issuedAtMs: number): Date {
  let claims: { exp?: number; iat?: number } = {};
  try {
    claims = decodeJwt(accessToken);
  } catch {
    // Not a JWT after all: fall back to expires_in or the interface's lifetime.
  }
  const { exp, iat } = claims;
  if (typeof exp === 'number' && typeof iat === 'number' && exp > iat) return new Date(issuedAtMs + (exp - iat) * 1000);
  if (expiresIn !== undefined) return new Date(issuedAtMs + expiresIn * 1000);
  if (typeof exp === 'number') return new Date(exp * 1000);
  return new Date(issuedAtMs + CLIENT_TOKEN_LIFETIME_SECONDS * 1000);
}
