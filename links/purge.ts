// Purges what a login or an embedded session leaves behind once it can no longer be used: login
// states, login grants, web sessions and embedded sessions whose expiry lies more than a retention
// margin in the past. Each call deletes one bounded batch of one table (oldest expiry first), so a
// backlog never becomes one long transaction; the caller loops.
//
// What the audit needs is kept, because it lives elsewhere and is never purged: `link_event` (links
// made, logins refused, login URLs minted with the ops key's name, unlinks), the `wallet_call`
// audit, and fundings and payments with their timelines. The retention margin
// (PURGE_RETENTION_HOURS) keeps the purged rows themselves for a while after expiry, so a recent
// incident can still see whether a session id or a login was used, when, and with what outcome
// (`login_state.outcome`). Every purged row is a hash of a spent or expired bearer value; an
// embedded session's encrypted tokens (left behind only by a failed onboarding) go with it.
import type { Database } from '../lib/database.ts';
import type { LinkPurgeTable } from '../domain/purge.ts';

/**
 * Deletes up to `batchSize` rows of `table` that expired before `cutoff`; returns how many. An
 * embedded session goes only once no web session refers to it (web sessions go first; their
 * foreign key would otherwise cascade a live one away).
 */
export async function purgeExpiredBatch(
  database: Database,
  table: LinkPurgeTable,
  cutoff: Date,
  batchSize: number,
): Promise<number> {
  switch (table) {
    case 'login_state':
      return database.$executeRaw`DELETE FROM login_state WHERE state_hash IN (
        SELECT state_hash FROM login_state WHERE expires_at < ${cutoff} ORDER BY expires_at LIMIT ${batchSize})`;
    case 'login_grant':
      return database.$executeRaw`DELETE FROM login_grant WHERE token_hash IN (
        SELECT token_hash FROM login_grant WHERE expires_at < ${cutoff} ORDER BY expires_at LIMIT ${batchSize})`;
    case 'app_session':
      return database.$executeRaw`DELETE FROM app_session WHERE id IN (
        SELECT id FROM app_session WHERE expires_at < ${cutoff} ORDER BY expires_at LIMIT ${batchSize})`;
    case 'embedded_session':
      return database.$executeRaw`DELETE FROM embedded_session WHERE id IN (
        SELECT e.id FROM embedded_session e WHERE e.expires_at < ${cutoff}
          AND NOT EXISTS (SELECT 1 FROM app_session a WHERE a.embedded_session_id = e.id)
        ORDER BY e.expires_at LIMIT ${batchSize})`;
  }
}
