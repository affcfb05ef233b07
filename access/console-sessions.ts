// The ops console's sessions (contract-decisions section 15), kept in PostgreSQL: a random cookie
// value (only its hash is stored) bound to a person, the name their acts are recorded under, the
// scopes their sign-in granted, what that sign-in rests on (the ops key's fingerprint, or the
// provider and the person's groups: whoever reads a session checks them again) and the CSRF token
// of their forms. A session ends after CONSOLE_IDLE_MINUTES in which the person did nothing and
// CONSOLE_SESSION_HOURS after sign-in, whatever is done; reading a session is not using it: only
// `touch`, called for what a person does, moves its idle end. Signing out ends every session of the
// person. OpenID Connect sign-ins under way are kept here too (their state and nonce), each used
// once. The only writer of console_session and console_sign_in, their purge included.
import { randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import type { Database } from '../lib/database.ts';
import type { OpsScope } from '../lib/ops-keys.ts';
import { opsScopes } from '../lib/ops-keys.ts';
import { hashBearer } from '../links/embedded-sessions.ts';

export interface ConsolePerson {
  /** `key:<ops key name>` or `oidc:<subject>`: who, whatever their display name. */
  personId: string;
  /** What audits record (domain/actor.ts): a key's name, or `Name (oidc:subject)`. */
  personName: string;
  via: 'key' | 'oidc';
  scopes: ReadonlySet<OpsScope>;
}

/** What a sign-in rests on, for whoever reads the session to check again. */
export type ConsoleGrant =
  /** The ops key signed in with, as an HMAC under the fingerprint key: never the key. */
  | { via: 'key'; keyFingerprint: string }
  /** The provider, and the person's groups that had a console role then. */
  | { via: 'oidc'; issuer: string; groups: readonly string[] };

export interface ConsoleSessionView extends ConsolePerson {
  id: string;
  csrfToken: string;
  expiresAt: Date;
  lastSeenAt: Date;
  /** Null for a session stored before sign-ins kept what they rest on: it cannot be checked, so it holds no more. */
  grant: ConsoleGrant | null;
}

export interface ConsoleSessionPolicy {
  idleMs: number;
  lifetimeMs: number;
}

/** How long an OpenID Connect sign-in may take, from the start to the callback. */
export const SIGN_IN_TTL_MS = 10 * 60_000;

const isScope = (value: string): value is OpsScope => (opsScopes as readonly string[]).includes(value);

/** Compares two tokens in constant time (a CSRF token, a state). */
export function sameToken(expected: string, presented: string | undefined): boolean {
  if (presented === undefined) return false;
  const a = Buffer.from(expected, 'utf8');
  const b = Buffer.from(presented, 'utf8');
  return a.length === b.length && timingSafeEqual(a, b);
}

interface SessionRow {
  via: string;
  keyFingerprint: string | null;
  issuer: string | null;
  groups: string[] | null;
}

function grantOf(row: SessionRow): ConsoleGrant | null {
  if (row.via === 'key') return row.keyFingerprint ? { via: 'key', keyFingerprint: row.keyFingerprint } : null;
  if (row.via === 'oidc') return row.issuer ? { via: 'oidc', issuer: row.issuer, groups: row.groups ?? [] } : null;
  return null;
}

export function createConsoleSessions(database: Database, policy: ConsoleSessionPolicy, now: () => number = Date.now) {
  /** A session's act is written at most this often (every request would be a write), a tenth of the idle time at most. */
  const seenEveryMs = Math.min(30_000, policy.idleMs / 10);
  const isLiveAt = (row: { expiresAt: Date; lastSeenAt: Date }, at: number) => row.expiresAt.getTime() > at && row.lastSeenAt.getTime() + policy.idleMs > at;
  const endsAt = (expiresAt: number, lastSeenAt: number) => new Date(Math.min(expiresAt, lastSeenAt + policy.idleMs));

  return {
    /** A new session for `person` (a new id at every sign-in); answers the cookie's value. */
    async start(person: ConsolePerson, grant: ConsoleGrant): Promise<{ cookieValue: string; expiresAt: Date }> {
      const cookieValue = randomBytes(32).toString('base64url');
      const at = now();
      const expiresAt = new Date(at + policy.lifetimeMs);
      await database.consoleSession.create({
        data: {
          id: randomUUID(),
          cookieHash: hashBearer(cookieValue),
          personId: person.personId,
          personName: person.personName,
          via: person.via,
          scopes: [...person.scopes],
          ...(grant.via === 'key' ? { keyFingerprint: grant.keyFingerprint } : { issuer: grant.issuer, groups: [...grant.groups] }),
          csrfToken: randomBytes(32).toString('base64url'),
          lastSeenAt: new Date(at),
          expiresAt,
          endsAt: endsAt(expiresAt.getTime(), at),
        },
      });
      return { cookieValue, expiresAt };
    },

    /**
     * The live session of a cookie value; null when unknown, idle past CONSOLE_IDLE_MINUTES or past
     * its lifetime (such a session is deleted). Reading it is not using it: see `touch`.
     */
    async read(cookieValue: string): Promise<ConsoleSessionView | null> {
      const row = await database.consoleSession.findUnique({ where: { cookieHash: hashBearer(cookieValue) } });
      if (!row) return null;
      if (!isLiveAt(row, now())) {
        await database.consoleSession.deleteMany({ where: { id: row.id } });
        return null;
      }
      return {
        id: row.id,
        personId: row.personId,
        personName: row.personName,
        via: row.via === 'oidc' ? 'oidc' : 'key',
        scopes: new Set(row.scopes.filter(isScope)),
        grant: grantOf(row),
        csrfToken: row.csrfToken,
        expiresAt: row.expiresAt,
        lastSeenAt: row.lastSeenAt,
      };
    },

    /**
     * The person did something (a page, a form): the idle time-out starts again, unless the session
     * ended meanwhile (a touch never brings an ended session back). Pushed updates, a page's own
     * requests and assets never come here.
     */
    async touch(session: Pick<ConsoleSessionView, 'id' | 'lastSeenAt' | 'expiresAt'>): Promise<void> {
      const at = now();
      if (at - session.lastSeenAt.getTime() < seenEveryMs) return;
      await database.consoleSession.updateMany({
        where: { id: session.id, expiresAt: { gt: new Date(at) }, lastSeenAt: { gt: new Date(at - policy.idleMs) } },
        data: { lastSeenAt: new Date(at), endsAt: endsAt(session.expiresAt.getTime(), at) },
      });
    },

    /** Signs the person out everywhere: every session of theirs ends. Answers how many. */
    async endEverySessionOf(personId: string): Promise<number> {
      return (await database.consoleSession.deleteMany({ where: { personId } })).count;
    },

    /** An OpenID Connect sign-in under way: its state and nonce, for the callback (the PKCE verifier stays with the browser). */
    async beginSignIn(input: { state: string; nonce: string; returnTo: string }): Promise<void> {
      await database.consoleSignIn.create({ data: { state: input.state, nonce: input.nonce, returnTo: input.returnTo, expiresAt: new Date(now() + SIGN_IN_TTL_MS) } });
    },

    /** Takes the sign-in of `state` once (deleted as it is read); null when unknown, used or expired. */
    async takeSignIn(state: string): Promise<{ nonce: string; returnTo: string } | null> {
      const rows = await database.$queryRaw<Array<{ nonce: string; return_to: string; expires_at: Date }>>`
        DELETE FROM console_sign_in WHERE state = ${state} RETURNING nonce, return_to, expires_at`;
      const row = rows[0];
      if (!row || row.expires_at.getTime() <= now()) return null;
      return { nonce: row.nonce, returnTo: row.return_to };
    },
  };
}

export type ConsoleSessions = ReturnType<typeof createConsoleSessions>;

/** The console's tables the purge empties of what ended (domain/purge.ts). */
export type ConsolePurgeTable = 'console_sign_in' | 'console_session';

/**
 * Deletes up to `batchSize` rows of `table` that ended before `cutoff` (oldest first); answers how
 * many. A sign-in never finished ends at its expiry; a session at the earlier of its idle end and
 * its lifetime's end (`ends_at`). A session signed out is deleted at once, not here.
 */
export async function purgeEndedConsoleRows(database: Database, table: ConsolePurgeTable, cutoff: Date, batchSize: number): Promise<number> {
  switch (table) {
    case 'console_sign_in':
      return database.$executeRaw`DELETE FROM console_sign_in WHERE state IN (
        SELECT state FROM console_sign_in WHERE expires_at < ${cutoff} ORDER BY expires_at LIMIT ${batchSize})`;
    case 'console_session':
      return database.$executeRaw`DELETE FROM console_session WHERE id IN (
        SELECT id FROM console_session WHERE ends_at < ${cutoff} ORDER BY ends_at LIMIT ${batchSize})`;
  }
}
