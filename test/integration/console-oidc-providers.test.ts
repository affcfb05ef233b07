// The console's OpenID Connect sign-in against providers shaped as real ones are, over HTTP as a browser follows it
// (the start, the provider's login form, its redirect back, the callback): an issuer with a path and a trailing slash
// (Authentik's, Azure AD v1's) is discovered and checked as configured, one set with a slash its provider does not
// have is found all the same, and a provider that gives the groups claim only for the `groups` scope (Dex, Okta's org
// server) is asked for it, so each person signs in with their role.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { createConsoleSessions } from '../../access/console-sessions.ts';
import { Prisma } from '../../generated/prisma/client.ts';
import { loadConfig } from '../../lib/config.ts';
import {
  startIdentityProvider,
  type IdentityProviderOptions,
  type RunningIdentityProvider,
} from '../../sandbox/identity-provider.ts';
import { startPartnerStack, type PartnerStack } from '../support/partner-stack.ts';
import { testDatabaseUrl } from '../support/test-database.ts';
import { lockWaits } from '../support/lock-waits.ts';
import { waitUntil } from '../support/wait-for.ts';

const clientSecret = randomBytes(24).toString('base64url');
const staff = [
  {
    username: 'noor',
    password: 'noor-pass',
    name: 'Noor Aquino',
    groups: ['walletflow-checkers', 'walletflow-readers'],
  },
  { username: 'omar', password: 'omar-pass', name: 'Omar Villanueva', groups: ['walletflow-checkers'] },
];

interface Provided {
  idp: RunningIdentityProvider;
  stack: PartnerStack;
}

/**
 * A walletflow whose console signs in through a sandbox provider of `shape`: its settings read from the variables an
 * operator sets (CONSOLE_OIDC_ISSUER as the provider names itself), as the API reads them.
 */
async function providedBy(
  shape: Pick<IdentityProviderOptions, 'issuerPath' | 'groupsScope'>,
  configured: (issuer: string) => string = (issuer) => issuer,
): Promise<Provided> {
  let idp: RunningIdentityProvider | undefined;
  const stack = await startPartnerStack({
    console: async (apiBase) => {
      idp = await startIdentityProvider({
        clients: [{ clientId: 'walletflow-console', clientSecret, redirectUris: [`${apiBase}/console/oidc/callback`] }],
        staff,
        ...shape,
      });
      return loadConfig({
        CONSOLE_OIDC_ISSUER: configured(idp.issuer),
        CONSOLE_OIDC_CLIENT_ID: 'walletflow-console',
        CONSOLE_OIDC_CLIENT_SECRET: clientSecret,
        CONSOLE_OIDC_ROLES: 'walletflow-checkers=read+approve,walletflow-readers=read',
      }).console;
    },
  });
  return { idp: idp!, stack };
}

const omar = 'oidc:staff-omar';
const STALL_LOCK = 7_204_611;

/** Omar's "sign out everywhere", as the console's sign-out does it; how many sessions it ended. */
const signOutEverywhere = (stack: PartnerStack) =>
  createConsoleSessions(stack.database, { idleMs: 3_600_000, lifetimeMs: 8 * 3_600_000 }).endEverySessionOf(omar, {
    remember: true,
  });

/**
 * Omar signs in through the provider, and his callback's statement `at` (a trigger's place: `BEFORE INSERT ON
 * console_session`) is held there while `meanwhile` runs; then let go. What the callback answered, and `meanwhile`'s
 * result.
 */
async function whileStalled<T>(
  stack: PartnerStack,
  at: string,
  meanwhile: () => Promise<T>,
): Promise<{ callback: { status: number; text: string }; signedOut: T }> {
  const database = stack.database;
  const [timing, table] = at.split(' ON ');
  await database.$executeRawUnsafe(`
    CREATE FUNCTION stall_omar() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF (CASE WHEN TG_OP = 'DELETE' THEN OLD.person_id ELSE NEW.person_id END) = '${omar}' THEN
        PERFORM pg_advisory_lock(${STALL_LOCK});
        PERFORM pg_advisory_unlock(${STALL_LOCK});
      END IF;
      RETURN CASE WHEN TG_OP = 'DELETE' THEN OLD ELSE NEW END;
    END $$`);
  await database.$executeRawUnsafe(
    `CREATE TRIGGER stall_omar ${timing} ON ${table} FOR EACH ROW EXECUTE FUNCTION stall_omar()`,
  );
  const holder = new pg.Client({ connectionString: testDatabaseUrl() });
  await holder.connect();
  try {
    await holder.query(`SELECT pg_advisory_lock(${STALL_LOCK})`);
    const signingIn = signInThrough(stack, staff[1]!);
    // The console's waits only: the advisory ones, and its tables' rows.
    const waiting = () => lockWaits(database, Prisma.sql`AND (wait_event = 'advisory' OR query LIKE '%console%')`);
    await waitUntil(waiting, (n) => n >= 1, 30_000);
    let done = false;
    const signingOut = meanwhile().finally(() => {
      done = true;
    });
    // The sign-out ends, or waits for the sign-in's turn.
    await waitUntil(
      async () => (done ? 2 : await waiting()),
      (n) => n >= 2,
      30_000,
    );
    await holder.query(`SELECT pg_advisory_unlock(${STALL_LOCK})`);
    const [{ callback }, signedOut] = await Promise.all([signingIn, signingOut]);
    return { callback, signedOut };
  } finally {
    await holder.end();
    await database.$executeRawUnsafe(`DROP TRIGGER IF EXISTS stall_omar ON ${table}`);
    await database.$executeRawUnsafe(`DROP FUNCTION IF EXISTS stall_omar()`);
  }
}

/** Cookies per origin, as a browser keeps them (names and values only: every cookie of an origin is sent to it). */
class CookieJar {
  private readonly byOrigin = new Map<string, Map<string, string>>();
  take(url: URL, response: Response): void {
    const jar = this.byOrigin.get(url.origin) ?? new Map<string, string>();
    this.byOrigin.set(url.origin, jar);
    for (const line of response.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const at = pair!.indexOf('=');
      const value = pair!.slice(at + 1);
      if (/max-age=0|expires=thu, 01 jan 1970/i.test(line) || value === '') jar.delete(pair!.slice(0, at));
      else jar.set(pair!.slice(0, at), value);
    }
  }
  header(url: URL): string {
    return [...(this.byOrigin.get(url.origin) ?? new Map<string, string>())]
      .map(([name, value]) => `${name}=${value}`)
      .join('; ');
  }
}

/**
 * Signs `member` in as a browser does, from the console's "Sign in with …" link through the provider's login form and
 * back: what the callback answered, and the console's home page with the session it set.
 */
async function signInThrough(
  stack: PartnerStack,
  member: (typeof staff)[number],
  options: { headOfCallback?: (answer: Response) => void } = {},
): Promise<{ callback: { status: number; text: string }; home: string | null }> {
  const jar = new CookieJar();
  const navigate = async (href: string, site: 'none' | 'cross-site', init: RequestInit = {}) => {
    const url = new URL(href);
    const response = await fetch(url, {
      ...init,
      redirect: 'manual',
      headers: {
        ...(init.headers as Record<string, string> | undefined),
        cookie: jar.header(url),
        'sec-fetch-dest': 'document',
        'sec-fetch-mode': 'navigate',
        'sec-fetch-site': site,
      },
    });
    jar.take(url, response);
    const location = response.headers.get('location');
    return { response, url, next: location ? new URL(location, url).href : null };
  };
  // The console's link to the provider, then the provider's redirects to its login form.
  let step = await navigate(`${stack.apiBase}/console/sign-in/oidc`, 'none');
  expect(step.response.status, await step.response.clone().text()).toBe(303);
  while (step.next && !step.next.includes('/interaction/')) step = await navigate(step.next, 'cross-site');
  const form = step.next!;
  step = await navigate(form, 'none');
  expect(step.response.status).toBe(200);
  await step.response.arrayBuffer();
  // The login form, sent; then the provider's redirects back to the console's callback.
  step = await navigate(`${form}/login`, 'none', {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ username: member.username, password: member.password }).toString(),
  });
  while (step.next && !step.next.startsWith(`${stack.apiBase}/console/oidc/callback`))
    step = await navigate(step.next, 'none');
  expect(step.next, 'the provider sends the browser back to the console').not.toBeNull();
  if (options.headOfCallback)
    options.headOfCallback((await navigate(step.next!, 'cross-site', { method: 'HEAD' })).response);
  step = await navigate(step.next!, 'cross-site');
  const callback = {
    status: step.response.status,
    text: await step.response.text(),
  };
  if (callback.status !== 200) return { callback, home: null };
  const home = await navigate(`${stack.apiBase}/console`, 'none');
  return { callback, home: home.response.status === 200 ? await home.response.text() : null };
}

/** Signs `member` in through `provided`'s provider, shown as `shown` on the console's home: their first session. */
async function signsIn(provided: Provided, member: (typeof staff)[number], shown: string) {
  const { callback, home } = await signInThrough(provided.stack, member);
  expect(callback.status, callback.text).toBe(200);
  expect(callback.text).toContain('Signed in.');
  expect(home).toContain(shown);
  return provided.stack.database.consoleSession.findFirstOrThrow({
    where: { personId: `oidc:staff-${member.username}` },
    orderBy: { createdAt: 'asc' },
  });
}

describe('the console’s sign-in through an identity provider', () => {
  let slashed: Provided;
  let scoped: Provided;
  beforeAll(async () => {
    [slashed, scoped] = await Promise.all([
      providedBy({ issuerPath: '/application/o/walletflow/' }),
      // Its issuer has no trailing slash; the operator wrote one.
      providedBy({ issuerPath: '/realms/ops', groupsScope: true }, (issuer) => `${issuer}/`),
    ]);
  }, 90_000);
  afterAll(async () => {
    for (const provided of [slashed, scoped]) {
      await provided?.stack.close();
      await provided?.idp.close();
    }
  });

  it('whose issuer has a path ending in a slash (Authentik, Azure AD v1): discovered and checked as configured, the person signed in', async () => {
    expect(slashed.idp.issuer).toMatch(/\/application\/o\/walletflow\/$/);
    // Before: the issuer was read without its slash, the provider's metadata named it with one, and every start
    // answered 503 "the identity provider cannot be reached just now".
    const noor = staff[0]!;
    const first = await signsIn(slashed, noor, 'Noor Aquino (oidc:staff-noor)');
    expect(first.scopes.sort()).toEqual(['approve', 'read']);
    // Recorded as sessions were before the issuer was kept as given: without its slash.
    expect(first.issuer).toBe(slashed.idp.issuer.replace(/\/$/, ''));
    // The provider takes a group away; the person's next sign-in takes it from their first session too.
    noor.groups = ['walletflow-readers'];
    const again = await signInThrough(slashed.stack, noor);
    expect(again.callback.status, again.callback.text).toBe(200);
    const narrowed = await slashed.stack.database.consoleSession.findUniqueOrThrow({ where: { id: first.id } });
    expect(narrowed.groups).toEqual(['walletflow-readers']);
  });

  it('that gives the groups claim only for the `groups` scope (Dex, Okta), its issuer set with a slash it does not have: found, asked for the scope, the person signed in with their role', async () => {
    expect(scoped.idp.issuer).toMatch(/\/realms\/ops$/);
    // Before: only `openid profile` was asked for, the person came back with no groups, and was refused 403 "no role".
    // And with the slash kept as written, discovery's check failed: every start 503.
    const session = await signsIn(scoped, staff[1]!, 'Omar Villanueva (oidc:staff-omar)');
    expect(session.scopes.sort()).toEqual(['approve', 'read']);
    expect(session.groups).toEqual(['walletflow-checkers']);
  });

  it('takes a login whose auth_time has a fraction of a second (a JWT’s times may): the person signed in, the login kept to its second', async () => {
    // Before: the fraction went to a bigint column, the callback answered 500 after spending the sign-in's state, and
    // nobody could sign in through such a provider.
    /** Omar's sign-in, the provider stamping his login `offset` seconds from now (its auth_time). */
    const signInStampedAt = async (offset: number) => {
      scoped.idp.setLoginClockOffset(offset);
      try {
        return (await signInThrough(scoped.stack, staff[1]!)).callback;
      } finally {
        scoped.idp.setLoginClockOffset(0);
      }
    };
    const callback = await signInStampedAt(0.5);
    expect(callback.status, callback.text).toBe(200);
    expect(callback.text).toContain('Signed in.');
    const latest = await scoped.stack.database.consoleSession.findFirstOrThrow({
      where: { personId: 'oidc:staff-omar' },
      orderBy: { createdAt: 'desc' },
    });
    expect(Number(latest.loginAuthTime) % 1).toBe(0);
    expect(Math.abs(Number(latest.loginAuthTime) - Date.now() / 1000)).toBeLessThan(120);
    // One past what a login's time can be stored as is refused, in words, never a 500.
    const refused = await signInStampedAt(1e16);
    expect(refused.status, refused.text).toBe(400);
    expect(refused.text).toContain('could not be accepted');
  });

  it('a sign-in finishing as its person signs out everywhere elsewhere leaves no session: the sign-out ends it', async () => {
    // Omar's sign-in has read that he had not signed out, and is storing its session; he signs out everywhere meanwhile
    // (another browser). Before: the sign-out ended every session it could see and the new one was stored after it,
    // left signed in.
    const { callback, signedOut } = await whileStalled(scoped.stack, 'BEFORE INSERT ON console_session', () =>
      signOutEverywhere(scoped.stack),
    );
    expect(callback.status, callback.text).toBe(200);
    expect(signedOut).toBeGreaterThanOrEqual(1);
    expect(await scoped.stack.database.consoleSession.count({ where: { personId: omar } })).toBe(0);
  });

  it('a sign-in under way when its person signs out everywhere starts no session: the sign-out stands, and the browser is asked to sign in again', async () => {
    // Signed out once before: the sign-in forgets that sign-out when it has checked his login is newer. It is doing so
    // when he signs out everywhere again (another browser). Before: the sign-in stored its session after the sign-out.
    await signOutEverywhere(scoped.stack);
    // His next login is stamped a second after it, at least (auth_time has whole seconds).
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    const { callback } = await whileStalled(scoped.stack, 'BEFORE DELETE ON console_sign_out', () =>
      signOutEverywhere(scoped.stack),
    );
    expect(callback.status, callback.text).toBe(409);
    expect(callback.text).toContain('signed out everywhere while this sign-in was under way');
    expect(await scoped.stack.database.consoleSession.count({ where: { personId: omar } })).toBe(0);
    // The refused login is kept with the sign-out: the provider, answering with it again, is asked for a fresh login.
    // Before the second read: the row kept no login of his, and that one was taken as fresh (a minute old).
    const signOut = await scoped.stack.database.consoleSignOut.findUniqueOrThrow({ where: { personId: omar } });
    expect(Number(signOut.loginAuthTime)).toBeGreaterThanOrEqual(Math.floor(Date.now() / 1000) - 60);
    // The next sign-in, a new login a second later, goes through.
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    const again = await signInThrough(scoped.stack, staff[1]!);
    expect(again.callback.status, again.callback.text).toBe(200);
    expect(await scoped.stack.database.consoleSession.count({ where: { personId: omar } })).toBe(1);
  });

  it('refuses a HEAD of the provider’s redirect back (a link preview, a scanner), which spends nothing: the person’s own GET signs them in', async () => {
    let head: Response | undefined;
    const { callback } = await signInThrough(scoped.stack, staff[1]!, {
      headOfCallback: (answer) => {
        head = answer;
      },
    });
    // Before: Express let the GET's handler answer the HEAD, which spent the sign-in's state; the GET then found none.
    expect(head?.status).toBe(405);
    expect(head?.headers.get('allow')).toBe('GET');
    expect(callback.status, callback.text).toBe(200);
    expect(callback.text).toContain('Signed in.');
  });
});
