// The session URL's outbox (onboarding_outbox): every change of its rows. A session is stored
// together with its "onboarding pending" row in one statement, so a stored session always has
// either its outbox row or a started onboarding workflow; the dispatcher
// (api/embedded/onboarding-dispatcher.ts) claims due rows, starts their workflows and deletes the
// row only after the start succeeded. Rows carry ids and times, never a token or a session id.
import type { Database } from '../lib/database.ts';

/** The embedded_session row the session URL stores (tokens already sealed to the row's id). */
export interface NewEmbeddedSession {
  id: string;
  sessionIdHash: string;
  requestReferenceNo: string;
  accessTokenEncrypted: Uint8Array;
  refreshTokenEncrypted: Uint8Array;
  accessTokenExpiresAt: Date;
  refreshTokenExpiresAt: Date | null;
  expiresAt: Date;
}

/**
 * Stores the session (PENDING) and its outbox row on `taskQueue`, due now, in one statement: both
 * or neither. One round trip; what the session URL waits on before its 200.
 */
export async function storeSessionForOnboarding(
  database: Database,
  session: NewEmbeddedSession,
  taskQueue: string,
): Promise<void> {
  await database.$executeRaw`
    WITH stored AS (
      INSERT INTO embedded_session (id, session_id_hash, request_reference_no, access_token_encrypted, refresh_token_encrypted,
        access_token_expires_at, refresh_token_expires_at, expires_at, updated_at)
      VALUES (${session.id}::uuid, ${session.sessionIdHash}, ${session.requestReferenceNo}, ${session.accessTokenEncrypted}, ${session.refreshTokenEncrypted},
        ${session.accessTokenExpiresAt}, ${session.refreshTokenExpiresAt}, ${session.expiresAt}, now())
      RETURNING id)
    INSERT INTO onboarding_outbox (session_id, task_queue) SELECT id, ${taskQueue} FROM stored`;
}

/**
 * The task queue of rows any dispatcher takes: the sessions the migration queued (stored before the outbox existed).
 */
export const ANY_TASK_QUEUE = '';

/** A claimed outbox row: the session whose onboarding to start, and how many claims it has had. */
export interface ClaimedOnboarding {
  sessionRecordId: string;
  attempts: number;
}

/**
 * Claims up to `limit` due rows of `taskQueue` (or ANY_TASK_QUEUE), oldest first, for `leaseMs`: another dispatcher
 * (another API copy) skips them until the lease ends (SKIP LOCKED, then due_at moved on). A
 * dispatcher that dies holding a claim only delays those rows by the lease.
 */
export async function claimDueOnboardings(
  database: Database,
  options: { taskQueue: string; limit: number; leaseMs: number },
): Promise<ClaimedOnboarding[]> {
  const rows = await database.$queryRaw<Array<{ session_id: string; attempts: number }>>`
    UPDATE onboarding_outbox o SET due_at = now() + ${options.leaseMs} * interval '1 millisecond', attempts = o.attempts + 1
    FROM (SELECT session_id FROM onboarding_outbox
          WHERE task_queue IN (${options.taskQueue}, ${ANY_TASK_QUEUE}) AND due_at <= now()
          ORDER BY due_at LIMIT ${options.limit} FOR UPDATE SKIP LOCKED) due
    WHERE o.session_id = due.session_id
    RETURNING o.session_id, o.attempts`;
  return rows.map((row) => ({ sessionRecordId: row.session_id, attempts: row.attempts }));
}

/** Whether `sessionRecordId` still waits for its onboarding's start (the landing page asks). */
export async function isOnboardingPending(database: Database, sessionRecordId: string): Promise<boolean> {
  const rows = await database.$queryRaw<
    Array<{ found: number }>
  >`SELECT 1 AS found FROM onboarding_outbox WHERE session_id = ${sessionRecordId}::uuid`;
  return rows.length > 0;
}

/** The starts succeeded (or found the workflow already started): their rows go. */
export async function clearOnboardings(database: Database, sessionRecordIds: readonly string[]): Promise<void> {
  if (sessionRecordIds.length === 0) return;
  await database.$executeRaw`DELETE FROM onboarding_outbox WHERE session_id = ANY(${[...sessionRecordIds]}::uuid[])`;
}

/** The longest wait between two tries of one row's start. */
export const MAX_ONBOARDING_BACKOFF_MS = 60_000;

/**
 * The starts failed (Temporal unreachable, a time-out): the rows are due again after a backoff that
 * doubles per claim, from 1 s up to MAX_ONBOARDING_BACKOFF_MS. They stay until a start succeeds.
 */
export async function retryOnboardingsLater(database: Database, sessionRecordIds: readonly string[]): Promise<void> {
  if (sessionRecordIds.length === 0) return;
  await database.$executeRaw`
    UPDATE onboarding_outbox
    SET due_at = now() + least(1000 * power(2, least(attempts - 1, 16)), ${MAX_ONBOARDING_BACKOFF_MS}) * interval '1 millisecond'
    WHERE session_id = ANY(${[...sessionRecordIds]}::uuid[])`;
}
