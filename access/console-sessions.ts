// The ops console's sessions (contract-decisions section 15), kept in PostgreSQL: a random cookie
// value (only its hash is stored) bound to a person, the name their acts are recorded under, the
// scopes their sign-in granted, what that sign-in rests on (the ops key's fingerprint, or the
// provider and the person's groups: whoever reads a session checks them again) and the CSRF token
// of their forms. A session ends after CONSOLE_IDLE_MINUTES in which the person did nothing and
// CONSOLE_SESSION_HOURS after sign-in, whatever is done; reading a session is not using it: only
// `touch`, called for what a person does, moves its idle end. Signing out ends every session of the
// person, and a person's sign-out through the provider is remembered until their next sign-in through
// it (a login the provider kept from before it needs a fresh one: one row per person, so never
// purged). OpenID Connect sign-ins under way are kept here too (their state and nonce), each used
// once. The only writer of console_session, console_sign_in and console_sign_out, their purge
// included.
import { randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import { Prisma } from '../generated/prisma/client.ts';
import { sqlClock, sqlInterval, type Database, type SqlClock } from '../lib/database.ts';
import type { OpsScope } from '../lib/ops-keys.ts';
import { opsScopes } from '../lib/ops-keys.ts';
import { hashBearer } from '../links/embedded-sessions.ts';

/** A sign-in through the provider whose person signed out everywhere while it was under way: no session was started. */
export class SignedOutMeanwhile extends Error {
  readonly code = 'SIGNED_OUT_MEANWHILE';
  constructor(personId: string) {
    super(`${personId} signed out everywhere while this sign-in was under way`);
  }
}

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

/** Whose a session that is over was (a sign-out from its browser ends the person's every session, under their name). */
export type EndedConsoleSession = Pick<ConsolePerson, 'personId' | 'personName' | 'via'>;

export interface ConsoleSessionView extends ConsolePerson {
  id: string;
  csrfToken: string;
  expiresAt: Date;
  lastSeenAt: Date;
  /** Null for a session stored before sign-ins kept what they rest on: it cannot be checked, so it holds no more. */
  grant: ConsoleGrant | null;
  /** Whether the person's next act is to be written (the last one written is old enough: `touch`). */
  touchDue: boolean;
  /** When the person signed in, by the database's clock. */
  signedInAt: Date;
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
  id: string;
  person_id: string;
  person_name: string;
  via: string;
  scopes: string[];
  key_fingerprint: string | null;
  issuer: string | null;
  groups: string[] | null;
  csrf_token: string;
  expires_at: Date;
  last_seen_at: Date;
  created_at: Date;
  /** Whether it is live by the database's clock (within its lifetime and its idle time-out). */
  live: boolean;
  /** Whether its last act is old enough for the next to be written (touch). */
  touch_due: boolean;
}

function grantOf(row: SessionRow): ConsoleGrant | null {
  if (row.via === 'key') return row.key_fingerprint ? { via: 'key', keyFingerprint: row.key_fingerprint } : null;
  if (row.via === 'oidc') return row.issuer ? { via: 'oidc', issuer: row.issuer, groups: row.groups ?? [] } : null;
  return null;
}

/**
 * Every time here is the database's (`now()` in the statement that compares or stores it), never a
 * process's: API processes whose clocks disagree agree on which sessions are live, and the purge
 * reads the same clock. `clock` is a test's time for SQL to take instead (lib/database.ts SqlClock).
 */
export function createConsoleSessions(database: Database, policy: ConsoleSessionPolicy, clock?: SqlClock) {
  /**
   * A session's act is written at most once a second (a page's burst of requests is one write): an act not written
   * ends its idle time at most that much early (a hundredth of the idle time where that is shorter).
   */
  const seenEveryMs = Math.min(1_000, policy.idleMs / 100);
  const at = () => sqlClock(clock);
  const idle = sqlInterval(policy.idleMs);
  const lifetime = sqlInterval(policy.lifetimeMs);
  /**
   * A session's end of life: its sign-in's CONSOLE_SESSION_HOURS, or today's where it is shorter (lowered since, as in
   * an incident: the sessions already open end by it too). The idle time is today's setting as well, but never past
   * the end stored at the session's last write (`ends_at`, under the setting then): a session that went idle is over
   * whether or not a request read it since, and a longer CONSOLE_IDLE_MINUTES set later takes effect from the
   * person's next act.
   */
  const endOfLife = Prisma.sql`LEAST(s.expires_at, s.created_at + ${lifetime})`;

  /** The session is over from now on (its lifetime and its idle end both now), kept so it says whose it was. */
  async function endForGood(sessionId: string): Promise<void> {
    await database.$executeRaw`
      UPDATE console_session s SET expires_at = LEAST(s.expires_at, t.at), ends_at = LEAST(s.ends_at, t.at)
      FROM (SELECT ${at()} AS at) t WHERE s.id = ${sessionId}::uuid AND (s.expires_at > t.at OR s.ends_at > t.at)`;
  }

  /**
   * As `read`, and for a session that has ended (idle, past its lifetime), whose it was: a sign-out from that browser
   * still signs the person out everywhere.
   */
  async function readOrEnded(
    cookieValue: string,
  ): Promise<{ session: ConsoleSessionView | null; ended: EndedConsoleSession | null }> {
    const rows = await database.$queryRaw<SessionRow[]>`
      SELECT s.id::text AS id, s.person_id, s.person_name, s.via, s.scopes, s.key_fingerprint, s.issuer, s.groups, s.csrf_token, ${endOfLife} AS expires_at, s.last_seen_at, s.created_at,
             (${endOfLife} > t.at AND s.last_seen_at + ${idle} > t.at AND s.ends_at > t.at) AS live,
             s.last_seen_at <= t.at - ${sqlInterval(seenEveryMs)} AS touch_due
      FROM console_session s, (SELECT ${at()} AS at) t
      WHERE s.cookie_hash = ${hashBearer(cookieValue)}`;
    const row = rows[0];
    if (!row) return { session: null, ended: null };
    if (!row.live) {
      // Ended for good, not deleted: no setting raised later brings it back (its lifetime is over now), and a sign-out
      // from its browser, whatever read it first (an open page's stream, its reconnections), still finds whose it was.
      // The purge deletes it.
      await endForGood(row.id);
      return {
        session: null,
        ended: { personId: row.person_id, personName: row.person_name, via: row.via === 'oidc' ? 'oidc' : 'key' },
      };
    }
    const session: ConsoleSessionView = {
      id: row.id,
      personId: row.person_id,
      personName: row.person_name,
      via: row.via === 'oidc' ? 'oidc' : 'key',
      scopes: new Set(row.scopes.filter(isScope)),
      grant: grantOf(row),
      csrfToken: row.csrf_token,
      expiresAt: row.expires_at,
      lastSeenAt: row.last_seen_at,
      touchDue: row.touch_due,
      signedInAt: row.created_at,
    };
    return { session, ended: null };
  }

  /**
   * One person's sign-ins through the provider and their "sign out everywhere" take turns (a lock held to each one's
   * commit): a sign-in that read no sign-out and a sign-out meanwhile cannot both go through, the session left.
   */
  const takePersonTurn = (tx: Prisma.TransactionClient, personId: string) =>
    tx.$queryRaw`SELECT 1 AS locked FROM pg_advisory_xact_lock(hashtextextended(${`walletflow:console-person:${personId}`}, 0))`;

  return {
    /**
     * A new session for `person` (a new id at every sign-in); answers the cookie's value. `provider`: an OpenID
     * Connect sign-in's, whose login as the provider stamped it (auth_time) is kept so a sign-out can tell that login
     * again. The sign-out it answered has been forgotten (forgetSignOut), so one kept now is the person's "sign out
     * everywhere" since it read them: no session, the refused login kept with the sign-out (so the next sign-in through
     * the provider asks it for a fresh one), and SignedOutMeanwhile.
     */
    async start(
      person: ConsolePerson,
      grant: ConsoleGrant,
      provider?: { loginAuthTime: number | undefined },
    ): Promise<{ cookieValue: string; expiresAt: Date }> {
      const cookieValue = randomBytes(32).toString('base64url');
      const [keyFingerprint, issuer, groups] =
        grant.via === 'key' ? [grant.keyFingerprint, null, []] : [null, grant.issuer, [...grant.groups]];
      const insert = (client: Prisma.TransactionClient | Database) =>
        client.$queryRaw<Array<{ expires_at: Date }>>`
          INSERT INTO console_session (id, cookie_hash, person_id, person_name, via, scopes, key_fingerprint, issuer, groups, csrf_token, created_at, last_seen_at, expires_at, ends_at, login_auth_time)
          SELECT ${randomUUID()}::uuid, ${hashBearer(cookieValue)}, ${person.personId}, ${person.personName}, ${person.via}, ${[...person.scopes]}::text[],
                 ${keyFingerprint}, ${issuer}, ${groups}::text[], ${randomBytes(32).toString('base64url')}, t.at, t.at,
                 t.at + ${lifetime}, LEAST(t.at + ${lifetime}, t.at + ${idle}), ${provider?.loginAuthTime ?? null}::bigint
          FROM (SELECT ${at()} AS at) t
          RETURNING expires_at`;
      // A key's sign-in has no sign-out to answer to: one statement.
      if (!provider) return { cookieValue, expiresAt: (await insert(database))[0]!.expires_at };
      const rows = await database.$transaction(async (tx) => {
        await takePersonTurn(tx, person.personId);
        const signedOut = await tx.$executeRaw`
          UPDATE console_sign_out SET login_auth_time = GREATEST(login_auth_time, ${provider.loginAuthTime ?? null}::bigint)
          WHERE person_id = ${person.personId}`;
        return signedOut > 0 ? null : insert(tx);
      });
      if (!rows) throw new SignedOutMeanwhile(person.personId);
      return { cookieValue, expiresAt: rows[0]!.expires_at };
    },

    /**
     * The live session of a cookie value; null when unknown, idle past CONSOLE_IDLE_MINUTES or past
     * its lifetime, by the database's clock (such a session is over for good, and the purge deletes it).
     * Reading it is not using it: see `touch`.
     */
    async read(cookieValue: string): Promise<ConsoleSessionView | null> {
      return (await readOrEnded(cookieValue)).session;
    },

    readOrEnded,

    /** The database's time now (the clock sessions are kept by). */
    async databaseTime(): Promise<Date> {
      const [row] = await database.$queryRaw<Array<{ at: Date }>>`SELECT ${at()} AS at`;
      return row!.at;
    },

    /**
     * The session's sign-in was found to rest on less than it was granted (its key removed, given another secret or
     * fewer scopes; its groups' roles taken away; the provider changed), by settings read after it signed in: it keeps
     * only `left`, for good, on every process, and ends when nothing is left. A process still running with the old
     * settings, or a setting put back later, never gives it back: a role given back needs a new sign-in.
     */
    async narrow(sessionId: string, left: ReadonlySet<OpsScope> | null): Promise<void> {
      if (!left || left.size === 0) return endForGood(sessionId);
      await database.$executeRaw`
        UPDATE console_session SET scopes = ARRAY(SELECT s FROM unnest(scopes) s WHERE s = ANY(${[...left]}::text[]))
        WHERE id = ${sessionId}::uuid AND NOT scopes <@ ${[...left]}::text[]`;
    },

    /**
     * What the provider says of a person at a sign-in holds for every session of theirs through it (another browser,
     * a cookie copied): each keeps only those of its groups the provider still gives them, and ends, as a narrowed
     * session does, when none is left. A group given back is not given to the sessions before it: that needs a new
     * sign-in. Answers how many sessions lost a group.
     */
    async narrowToGroups(personId: string, issuer: string, groups: readonly string[]): Promise<number> {
      const kept = [...groups];
      return database.$executeRaw`
        UPDATE console_session s
        SET groups = ARRAY(SELECT g FROM unnest(s.groups) g WHERE g = ANY(${kept}::text[])),
            expires_at = CASE WHEN s.groups && ${kept}::text[] THEN s.expires_at ELSE LEAST(s.expires_at, t.at) END,
            ends_at = CASE WHEN s.groups && ${kept}::text[] THEN s.ends_at ELSE LEAST(s.ends_at, t.at) END
        FROM (SELECT ${at()} AS at) t
        WHERE s.person_id = ${personId} AND s.via = 'oidc' AND s.issuer = ${issuer}
          AND NOT s.groups <@ ${kept}::text[] AND s.ends_at > t.at`;
    },

    /**
     * The person did something (a page, a form): the idle time-out starts again, unless the session
     * ended meanwhile (a touch never brings an ended session back), by the database's clock.
     * Pushed updates, a page's own requests and assets never come here.
     */
    async touch(session: Pick<ConsoleSessionView, 'id' | 'touchDue'>): Promise<void> {
      if (!session.touchDue) return;
      await database.$executeRaw`
        UPDATE console_session s SET last_seen_at = t.at, ends_at = LEAST(${endOfLife}, t.at + ${idle})
        FROM (SELECT ${at()} AS at) t
        WHERE s.id = ${session.id}::uuid AND ${endOfLife} > t.at AND s.last_seen_at + ${idle} > t.at AND s.ends_at > t.at`;
    },

    /**
     * Ends the sessions these cookie values name (a browser signing in again: it holds one session). Answers how many.
     */
    async endSessionsOfCookies(cookieValues: readonly string[]): Promise<number> {
      if (cookieValues.length === 0) return 0;
      return (await database.consoleSession.deleteMany({ where: { cookieHash: { in: cookieValues.map(hashBearer) } } }))
        .count;
    },

    /**
     * Signs the person out everywhere: every session of theirs ends. A person who signs in through the provider
     * (`remember`) has the time kept (`signedOutAt`), with the latest provider login of the sessions it ended, until
     * their next sign-in through it. Answers how many sessions ended.
     */
    async endEverySessionOf(personId: string, options: { remember: boolean }): Promise<number> {
      if (!options.remember) return (await database.consoleSession.deleteMany({ where: { personId } })).count;
      // Kept before the sessions go (their logins read in the same transaction), in the person's turn: a sign-in
      // through the provider under way either finishes first, and its session goes too, or finds this sign-out kept.
      return database.$transaction(async (tx) => {
        await takePersonTurn(tx, personId);
        await tx.$executeRaw`
          INSERT INTO console_sign_out (person_id, signed_out_at, login_auth_time)
          SELECT ${personId}, t.at, (SELECT max(s.login_auth_time) FROM console_session s WHERE s.person_id = ${personId})
          FROM (SELECT ${at()} AS at) t
          ON CONFLICT (person_id) DO UPDATE SET signed_out_at = GREATEST(console_sign_out.signed_out_at, EXCLUDED.signed_out_at),
            login_auth_time = GREATEST(console_sign_out.login_auth_time, EXCLUDED.login_auth_time)`;
        return (await tx.consoleSession.deleteMany({ where: { personId } })).count;
      });
    },

    /**
     * When the person last signed out, if they have not signed in through the provider since, with the latest provider
     * login that sign-out ended (its auth_time; null: none known), and the database's time now (what a login's age is
     * measured against: one clock for every API process, the one the sign-out was kept by).
     */
    async signOutOf(
      personId: string,
    ): Promise<{ signedOutAt: Date | null; signedOutLoginAuthTime: number | null; now: Date }> {
      const [row] = await database.$queryRaw<
        Array<{ signed_out_at: Date | null; login_auth_time: bigint | null; now: Date }>
      >`
        SELECT o.signed_out_at, o.login_auth_time, t.at AS now
        FROM (SELECT ${at()} AS at) t LEFT JOIN console_sign_out o ON o.person_id = ${personId}`;
      const login = row!.login_auth_time;
      return {
        signedOutAt: row!.signed_out_at,
        signedOutLoginAuthTime: login === null ? null : Number(login),
        now: row!.now,
      };
    },

    /** The person signed in through the provider after a sign-out at `signedOutAt`: forgotten (a later one stays). */
    async forgetSignOut(personId: string, signedOutAt: Date): Promise<void> {
      await database.consoleSignOut.deleteMany({ where: { personId, signedOutAt: { lte: signedOutAt } } });
    },

    /**
     * An OpenID Connect sign-in under way: its state and nonce, for the callback (the PKCE verifier stays with the
     * browser).
     */
    async beginSignIn(input: { state: string; nonce: string; returnTo: string; freshLogin: boolean }): Promise<void> {
      await database.$executeRaw`
        INSERT INTO console_sign_in (state, nonce, return_to, expires_at, fresh_login_since)
        SELECT ${input.state}, ${input.nonce}, ${input.returnTo}, t.at + ${sqlInterval(SIGN_IN_TTL_MS)},
               CASE WHEN ${input.freshLogin} THEN t.at END
        FROM (SELECT ${at()} AS at) t`;
    },

    /**
     * Takes the sign-in of `state` once (deleted as it is read); null when unknown, used or expired (by the database's
     * clock).
     */
    async takeSignIn(state: string): Promise<{ nonce: string; returnTo: string; freshLoginSince: Date | null } | null> {
      const rows = await database.$queryRaw<
        Array<{ nonce: string; return_to: string; fresh_login_since: Date | null; live: boolean }>
      >`
        DELETE FROM console_sign_in s USING (SELECT ${at()} AS at) t WHERE s.state = ${state}
        RETURNING s.nonce, s.return_to, s.fresh_login_since, s.expires_at > t.at AS live`;
      const row = rows[0];
      if (!row || !row.live) return null;
      return { nonce: row.nonce, returnTo: row.return_to, freshLoginSince: row.fresh_login_since };
    },
  };
}

export type ConsoleSessions = ReturnType<typeof createConsoleSessions>;

/** The console's tables the purge empties of what ended (domain/purge.ts). */
export type ConsolePurgeTable = 'console_sign_in' | 'console_session';

/**
 * Deletes up to `batchSize` rows of `table` that ended before `cutoff` (oldest first); answers how
 * many. A sign-in never finished ends at its expiry; a session at the earlier of its idle end and
 * its lifetime's end (`ends_at`, under the settings of its last write: no setting raised since
 * brings it back). A session signed out is deleted at once, not here.
 */
export async function purgeEndedConsoleRows(
  database: Database,
  table: ConsolePurgeTable,
  cutoff: Date,
  batchSize: number,
): Promise<number> {
  switch (table) {
    case 'console_sign_in':
      return database.$executeRaw`DELETE FROM console_sign_in WHERE state IN (
        SELECT state FROM console_sign_in WHERE expires_at < ${cutoff} ORDER BY expires_at LIMIT ${batchSize})`;
    case 'console_session':
      return database.$executeRaw`DELETE FROM console_session WHERE id IN (
        SELECT id FROM console_session WHERE ends_at < ${cutoff} ORDER BY ends_at LIMIT ${batchSize})`;
  }
}
