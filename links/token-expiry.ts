// When a link's tokens expire, as walletflow records it. An embedded token carries its expiry as
// the JWT's `exp`, read here without verifying the signature: the wallet service checks its own
// tokens, walletflow only plans refreshes by the time. A standalone refresh token's expiry is in
// no token response, so it is the interface's fixed lifetime from when it was issued.
import { decodeJwt } from 'jose';

/** The standalone refresh token's lifetime (interface: 604800 s); the token response does not carry it. */
export const STANDALONE_REFRESH_LIFETIME_MS = 604_800_000;

/** Year 10000: an `exp` past it (milliseconds sent as seconds, say) is no date PostgreSQL or JavaScript can hold. */
const END_OF_YEAR_9999_MS = 253_402_300_800_000;

/**
 * A JWT's `exp` as a Date, unverified; null when the token is not a JWT, has no numeric `exp`, or one outside 1970 to
 * 9999 (before, such an `exp` became an invalid Date that no statement could store: the session URL answered 500, and
 * a refreshed pair could not be saved).
 */
export function jwtExpiry(token: string): Date | null {
  try {
    const { exp } = decodeJwt(token);
    if (typeof exp !== 'number') return null;
    const at = exp * 1000;
    return Number.isFinite(at) && at >= 0 && at < END_OF_YEAR_9999_MS ? new Date(at) : null;
  } catch {
    return null;
  }
}
