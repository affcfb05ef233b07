// When a link's tokens expire, as walletflow records it. An embedded token carries its expiry as
// the JWT's `exp`, read here without verifying the signature: the wallet service checks its own
// tokens, walletflow only plans refreshes by the time. A standalone refresh token's expiry is in
// no token response, so it is the interface's fixed lifetime from when it was issued.
import { decodeJwt } from 'jose';

/** The standalone refresh token's lifetime (interface: 604800 s); the token response does not carry it. */
export const STANDALONE_REFRESH_LIFETIME_MS = 604_800_000;

/** A JWT's `exp` as a Date, unverified; null when the token is not a JWT or has no numeric `exp`. */
export function jwtExpiry(token: string): Date | null {
  try {
    const { exp } = decodeJwt(token);
    return typeof exp === 'number' ? new Date(exp * 1000) : null;
  } catch {
    return null;
  }
}
