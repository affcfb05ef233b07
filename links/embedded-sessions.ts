// What the session URL, the landing page and the onboarding activity share about an embedded
// session row: how a session id or cookie is hashed for storage, and the cipher contexts that bind
// the delivered tokens to their row.
import { createHash } from 'node:crypto';

/** SHA-256 hex of a bearer value (session id, web session cookie): only the hash is stored. */
export function hashBearer(value: string): string {
  return createHash('sha256').update(value, 'utf8').digest('hex');
}

export const sessionAccessTokenContext = (sessionRecordId: string) =>
  `embedded_session:${sessionRecordId}:access_token`;
export const sessionRefreshTokenContext = (sessionRecordId: string) =>
  `embedded_session:${sessionRecordId}:refresh_token`;
