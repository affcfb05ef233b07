// Signing in to the ops console (contract-decisions section 15) in headless Chromium, against a
// real OpenID Connect provider (sandbox/identity-provider.ts: panva's oidc-provider) and, for a
// partner without one, with a named ops key: the session is server-side, its cookie HttpOnly and
// SameSite=Strict, a new id at every sign-in; the person's groups give their scopes (a reader sees
// no buttons, a forged write gets 403); a write without the session's CSRF token is refused; an
// idle session ends; signing out ends every session of the person.
import { randomBytes } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConsoleRoles } from '../../lib/console-roles.ts';
import { startIdentityProvider, type RunningIdentityProvider } from '../../sandbox/identity-provider.ts';
import { closeChromium, launchChromium } from '../support/browser.ts';
import { waitFor } from '../support/wait-for.ts';
import { connectionReset, failRawQueries } from '../support/raw-failures.ts';
import { startPartnerStack, type PartnerStack } from '../support/partner-stack.ts';

let browser: Browser;
let idp: RunningIdentityProvider;
let oidcStack: PartnerStack;
/**
 * Another walletflow on the same database, whose CONSOLE_OIDC_ROLES took roles away: makers may only read, readers
 * nothing.
 */
let narrowedStack: PartnerStack;
let keyStack: PartnerStack;
/** How far the key stack's clock is ahead of the real one (idle time passes without waiting for it). */
let keyClockSkewMs = 0;
/** How far the OpenID Connect stack's database clock is ahead of its API process's (an API host's clock behind). */
let oidcDatabaseSkewMs = 0;
const readerKey = randomBytes(24).toString('base64url');
const clientSecret = randomBytes(24).toString('base64url');

const staff = [
  { username: 'maria', password: 'maria-pass', name: 'Maria Santos', groups: ['walletflow-makers'] },
  { username: 'jose', password: 'jose-pass', name: 'Jose Reyes', groups: ['walletflow-checkers'] },
  { username: 'ana', password: 'ana-pass', name: 'Ana Cruz', groups: ['walletflow-readers'] },
  { username: 'lea', password: 'lea-pass', name: 'Lea Garcia', groups: ['walletflow-readers'] },
  { username: 'kim', password: 'kim-pass', name: 'Kim Dela Cruz', groups: ['walletflow-readers'] },
  { username: 'ren', password: 'ren-pass', name: 'Ren Bautista', groups: ['walletflow-readers'] },
  // Whose groups a test changes at the provider between sign-ins.
  {
    username: 'tess',
    password: 'tess-pass',
    name: 'Tess Lim',
    groups: ['walletflow-makers', 'walletflow-checkers'],
  },
  { username: 'nobody', password: 'nobody-pass', name: 'No Role', groups: ['marketing'] },
  // A display name chosen to pass for Jose: his identity in parentheses, and a right-to-left override.
  {
    username: 'mallory',
    password: 'mallory-pass',
    name: 'Jose Reyes (oidc:staff-jose)\u202e',
    groups: ['walletflow-readers'],
  },
];
const oidcSettings = (roles: string[]) => ({
  oidc: {
    issuer: idp.issuer,
    clientId: 'walletflow-console',
    clientSecret,
    roles: parseConsoleRoles(roles),
    groupsClaim: 'groups',
  },
  idleMinutes: 15,
  sessionHours: 8,
  temporalUiUrl: undefined,
});

beforeAll(async () => {
  browser = await launchChromium();
  oidcStack = await startPartnerStack({
    console: async (apiBase) => {
      idp = await startIdentityProvider({
        clients: [{ clientId: 'walletflow-console', clientSecret, redirectUris: [`${apiBase}/console/oidc/callback`] }],
        staff,
      });
      return oidcSettings([
        'walletflow-makers=read+fund+accounts',
        'walletflow-checkers=read+approve+resolve',
        'walletflow-readers=read',
      ]);
    },
    hardening: { sqlClock: () => Date.now() + oidcDatabaseSkewMs },
  });
  narrowedStack = await startPartnerStack({
    console: oidcSettings(['walletflow-makers=read', 'walletflow-checkers=read+approve+resolve']),
  });
  keyStack = await startPartnerStack({
    extraOpsKeys: [`auditor:read:${readerKey}`],
    hardening: { now: () => Date.now() + keyClockSkewMs, sqlClock: () => Date.now() + keyClockSkewMs },
  });
}, 90_000);

afterAll(async () => {
  await closeChromium(browser);
  await oidcStack?.close();
  await narrowedStack?.close();
  await keyStack?.close();
  await idp?.close();
});

/** A GET with exactly these headers (node:http: fetch puts its own Sec-Fetch-Mode on it), not followed. */
function navigate(url: string, headers: Record<string, string>): Promise<{ status: number }> {
  return new Promise((resolve, reject) => {
    const request = httpRequest(url, { headers }, (answer) => {
      answer.resume();
      answer.on('end', () => resolve({ status: answer.statusCode ?? 0 }));
    });
    request.on('error', reject);
    request.end();
  });
}

async function signInWithProvider(
  context: BrowserContext,
  base: string,
  username: string,
  password: string,
): Promise<Page> {
  const page = await context.newPage();
  await page.goto(`${base}/console`);
  await page.getByRole('link', { name: /Sign in with/ }).click();
  await logInAtProvider(page, username, password);
  return page;
}

/**
 * Sign in again through a provider that ignores walletflow's asking for a fresh login (prompt=login, max_age=0) and
 * answers with the login it kept: refused as a login from before someone signed out.
 */
async function signInRefusedWithAnEarlierLogin(page: Page): Promise<void> {
  idp.ignoreFreshLoginRequests(true);
  try {
    await page.getByRole('link', { name: /Sign in with/ }).click();
    await page.waitForURL((url) => url.pathname === '/console/oidc/callback');
    await page.getByText('signed you in with a login from before someone signed out here').waitFor();
  } finally {
    idp.ignoreFreshLoginRequests(false);
  }
}

/** A person's login on the identity provider's page, which the page is on. */
async function logInAtProvider(page: Page, username: string, password: string): Promise<void> {
  await page.getByLabel('User name').fill(username);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
}

describe('the console’s sign-in through OpenID Connect', () => {
  it('signs a person in with PKCE, names them, and gives them their groups’ scopes only', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    // The sessions this test makes (other files signing the same staff in share this database).
    const since = new Date();
    try {
      const page = await signInWithProvider(context, oidcStack.apiBase, 'maria', 'maria-pass');
      await page.waitForURL(`${oidcStack.apiBase}/console`);
      await expect(page.getByRole('heading', { level: 1, name: 'Home' }).isVisible()).resolves.toBe(true);
      expect(await page.locator('header .who').innerText()).toContain('Maria Santos (oidc:staff-maria)');
      const cookies = await context.cookies(`${oidcStack.apiBase}/console`);
      const session = cookies.find((cookie) => cookie.name === 'walletflow_console');
      expect(session).toMatchObject({ httpOnly: true, sameSite: 'Strict', path: '/console' });
      const stored = await oidcStack.database.consoleSession.findMany({
        where: { personId: 'oidc:staff-maria', createdAt: { gte: since } },
      });
      expect(stored).toHaveLength(1);
      expect([...stored[0]!.scopes].sort()).toEqual(['accounts', 'fund', 'read']);
      // The cookie's value is not what is stored (only its hash).
      expect(stored[0]!.cookieHash).not.toBe(session?.value);
    } finally {
      await context.close();
    }
  });

  it('refuses a person whose groups have no console role, and a wrong password at the provider', async () => {
    const context = await browser.newContext();
    const another = await browser.newContext();
    try {
      const page = await signInWithProvider(context, oidcStack.apiBase, 'nobody', 'nobody-pass');
      await expect(page.getByRole('heading', { level: 1, name: 'No access' }).isVisible()).resolves.toBe(true);
      expect(await oidcStack.database.consoleSession.count({ where: { personId: 'oidc:staff-nobody' } })).toBe(0);
      const wrong = await signInWithProvider(another, oidcStack.apiBase, 'ana', 'not-her-password');
      expect(await wrong.getByRole('alert').innerText()).toContain('Wrong user name or password');
    } finally {
      await context.close();
      await another.close();
    }
  });

  it('records every sign-in through the identity provider under the person’s name, a refused one too', async () => {
    const since = new Date();
    const context = await browser.newContext();
    const another = await browser.newContext();
    try {
      const page = await signInWithProvider(context, oidcStack.apiBase, 'maria', 'maria-pass');
      await page.waitForURL(`${oidcStack.apiBase}/console`);
      const refused = await signInWithProvider(another, oidcStack.apiBase, 'nobody', 'nobody-pass');
      await expect(refused.getByRole('heading', { level: 1, name: 'No access' }).isVisible()).resolves.toBe(true);
      const rows = await waitFor(
        'both sign-ins audited',
        async () => {
          const found = await oidcStack.database.opsAction.findMany({
            where: { at: { gte: since }, path: '/console/oidc/callback' },
            orderBy: { id: 'asc' },
          });
          return found.length >= 2 ? found : undefined;
        },
        15_000,
      );
      // Written once each answer has gone, in either order: compared by status.
      expect(
        rows
          .map((row) => ({ method: row.method, status: row.status, keyName: row.keyName, channel: row.channel }))
          .sort((a, b) => a.status - b.status),
      ).toEqual([
        { method: 'GET', status: 200, keyName: 'Maria Santos (oidc:staff-maria)', channel: 'console' },
        { method: 'GET', status: 403, keyName: 'No Role (oidc:staff-nobody)', channel: 'console' },
      ]);
    } finally {
      await context.close();
      await another.close();
    }
  });

  it('shows a display name from the provider as text that cannot pass for another person', async () => {
    const context = await browser.newContext();
    try {
      const page = await signInWithProvider(context, oidcStack.apiBase, 'mallory', 'mallory-pass');
      await page.waitForURL(`${oidcStack.apiBase}/console`);
      const shown = await page.locator('header .who strong').innerText();
      // Her own identity, last; no other one in parentheses, no character that reorders what follows.
      expect(shown).toBe('Jose Reyes oidc staff-jose (oidc:staff-mallory)');
      expect(shown).not.toMatch(/[\p{Cf}\p{Cc}]/u);
      const stored = await oidcStack.database.consoleSession.findFirst({
        where: { personId: 'oidc:staff-mallory' },
        orderBy: { createdAt: 'desc' },
      });
      expect(stored?.personName).toBe(shown);
    } finally {
      await context.close();
    }
  });

  it('a person whose groups lost a role acts without it on their next request; one left with no role is signed out', async () => {
    const maker = await browser.newContext();
    const reader = await browser.newContext();
    try {
      const maria = await signInWithProvider(maker, oidcStack.apiBase, 'maria', 'maria-pass');
      await maria.waitForURL(`${oidcStack.apiBase}/console`);
      const ana = await signInWithProvider(reader, oidcStack.apiBase, 'ana', 'ana-pass');
      await ana.waitForURL(`${oidcStack.apiBase}/console`);
      await maria.goto(`${oidcStack.apiBase}/console/batches`);
      await expect(maria.getByRole('heading', { name: 'Upload a batch' }).isVisible()).resolves.toBe(true);
      // The same sessions at a walletflow whose CONSOLE_OIDC_ROLES now grant makers read only, and readers nothing.
      await maria.goto(`${narrowedStack.apiBase}/console/batches`);
      expect(maria.url()).toBe(`${narrowedStack.apiBase}/console/batches`);
      await expect(maria.getByRole('heading', { level: 1, name: 'Batches' }).isVisible()).resolves.toBe(true);
      expect(await maria.getByRole('heading', { name: 'Upload a batch' }).count()).toBe(0);
      await ana.goto(`${narrowedStack.apiBase}/console`);
      expect(ana.url()).toContain(`${narrowedStack.apiBase}/console/sign-in`);
    } finally {
      await maker.close();
      await reader.close();
    }
  });

  it('a group the provider takes away, seen at the person’s next sign-in, is gone from their other sessions too; one left with no role ends them all', async () => {
    const tess = staff.find((member) => member.username === 'tess')!;
    const laptop = await browser.newContext();
    const desk = await browser.newContext();
    const kiosk = await browser.newContext();
    /** A batch approval from `page`'s session with its own form token: 403 without `approve`, else 404 (no batch). */
    const approve = (page: Page) =>
      page.evaluate(async () => {
        const token = document.querySelector<HTMLInputElement>('header input[name=_csrf]')?.value ?? '';
        const response = await fetch(`/console/batches/${crypto.randomUUID()}/approve`, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: `_csrf=${encodeURIComponent(token)}`,
        });
        return response.status;
      });
    try {
      const onLaptop = await signInWithProvider(laptop, oidcStack.apiBase, 'tess', 'tess-pass');
      await onLaptop.waitForURL(`${oidcStack.apiBase}/console`);
      expect(await approve(onLaptop)).toBe(404);
      // Her company moves her out of the checkers; she signs in at another desk.
      tess.groups = ['walletflow-makers'];
      const atDesk = await signInWithProvider(desk, oidcStack.apiBase, 'tess', 'tess-pass');
      await atDesk.waitForURL(`${oidcStack.apiBase}/console`);
      expect(await approve(atDesk)).toBe(403);
      // Before: the laptop's session kept approving for the rest of its 8 hours.
      expect(await approve(onLaptop)).toBe(403);
      const sessions = await oidcStack.database.consoleSession.findMany({ where: { personId: 'oidc:staff-tess' } });
      expect(sessions.map((session) => session.groups)).toEqual([['walletflow-makers'], ['walletflow-makers']]);
      // Then out of every console group: the sign-in is refused, and both sessions end.
      tess.groups = ['marketing'];
      const atKiosk = await signInWithProvider(kiosk, oidcStack.apiBase, 'tess', 'tess-pass');
      await atKiosk.getByText('your account has no role in this console').waitFor();
      for (const page of [onLaptop, atDesk]) {
        await page.goto(`${oidcStack.apiBase}/console/batches`);
        expect(page.url()).toContain(`${oidcStack.apiBase}/console/sign-in`);
      }
    } finally {
      tess.groups = ['walletflow-makers', 'walletflow-checkers'];
      await laptop.close();
      await desk.close();
      await kiosk.close();
    }
  });

  it('after a person signs out, the next sign-in in that browser asks the provider for a fresh login: the next person at the desk is not signed in as them', async () => {
    const context = await browser.newContext();
    try {
      const first = await signInWithProvider(context, oidcStack.apiBase, 'ana', 'ana-pass');
      await first.waitForURL(`${oidcStack.apiBase}/console`);
      await first.getByRole('button', { name: 'Sign out' }).click();
      await first.waitForURL(`${oidcStack.apiBase}/console/sign-in`);
      // The next person clicks Sign in: the provider (which still knows Ana) asks who they are.
      await first.getByRole('link', { name: /Sign in with/ }).click();
      await first.waitForURL((url) => url.origin !== oidcStack.apiBase || url.pathname === '/console');
      expect(new URL(first.url()).origin).not.toBe(oidcStack.apiBase);
      await expect(first.getByLabel('User name').isVisible()).resolves.toBe(true);
      await logInAtProvider(first, 'maria', 'maria-pass');
      await first.waitForURL(`${oidcStack.apiBase}/console`);
      expect(await first.locator('header .who').innerText()).toContain('(oidc:staff-maria)');
      // Signed in afresh: the sign-in after this one is the provider's to remember again.
      expect((await context.cookies(`${oidcStack.apiBase}/console`)).map((cookie) => cookie.name)).not.toContain(
        'walletflow_console_out',
      );
      // Maria leaves her desk and her session ends (idle) before she clicks Sign out: the sign-out still leaves the
      // marker (it was a 401 that left none, and the next person got her login at the provider). Lax: the next start
      // may be a click on a link from another site (the provider's app list), which a Strict cookie does not come with.
      await oidcStack.database
        .$executeRaw`UPDATE console_session SET last_seen_at = now() - interval '1 day' WHERE person_id = 'oidc:staff-maria'`;
      await first.getByRole('button', { name: 'Sign out' }).click();
      await first.waitForURL(`${oidcStack.apiBase}/console/sign-in`);
      const marker = (await context.cookies(`${oidcStack.apiBase}/console`)).find(
        (cookie) => cookie.name === 'walletflow_console_out',
      );
      expect(marker).toMatchObject({ sameSite: 'Lax', httpOnly: true });
      await first.getByRole('link', { name: /Sign in with/ }).click();
      await first.waitForURL((url) => url.origin !== oidcStack.apiBase || url.pathname === '/console');
      expect(new URL(first.url()).origin).not.toBe(oidcStack.apiBase);
      await expect(first.getByLabel('User name').isVisible()).resolves.toBe(true);
    } finally {
      await context.close();
    }
  });

  it('a login the provider kept from before the person signed out is not taken as theirs: a provider that does not ask is refused, and without the marker cookie the provider is asked again', async () => {
    const context = await browser.newContext();
    const onConsole = (url: URL) => url.origin === oidcStack.apiBase && url.pathname === '/console';
    try {
      // Lea logged in at the provider ten minutes ago (its session there), and signs in to the console with it.
      idp.setLoginClockOffset(-600);
      const page = await signInWithProvider(context, oidcStack.apiBase, 'lea', 'lea-pass');
      await page.waitForURL(`${oidcStack.apiBase}/console`);
      idp.setLoginClockOffset(0);
      await page.getByRole('button', { name: 'Sign out' }).click();
      await page.waitForURL(`${oidcStack.apiBase}/console/sign-in`);

      // The provider ignores what walletflow asks for (prompt=login, max_age=0) and answers with her earlier login:
      // refused, and nobody is signed in.
      const leaSessions = () => oidcStack.database.consoleSession.count({ where: { personId: 'oidc:staff-lea' } });
      await signInRefusedWithAnEarlierLogin(page);
      expect(await leaSessions()).toBe(0);
      const names = (await context.cookies(`${oidcStack.apiBase}/console`)).map((cookie) => cookie.name);
      expect(names).not.toContain('walletflow_console');
      expect(names).toContain('walletflow_console_out');

      // The marker cookie is gone (cleared with the site's cookies): nothing in this browser says Lea left, and the
      // provider answers at once with her earlier login. walletflow knows she signed out, and asks it again.
      await context.clearCookies({ name: 'walletflow_console_out' });
      await page.getByRole('link', { name: /Sign in with/ }).click();
      await page.waitForURL((url) => url.origin !== oidcStack.apiBase || onConsole(url));
      expect(new URL(page.url()).origin).not.toBe(oidcStack.apiBase);
      await expect(page.getByLabel('User name').isVisible()).resolves.toBe(true);
      await logInAtProvider(page, 'maria', 'maria-pass');
      await page.waitForURL(`${oidcStack.apiBase}/console`);
      expect(await page.locator('header .who').innerText()).toContain('(oidc:staff-maria)');
      expect(await leaSessions()).toBe(0);
      await page.getByRole('button', { name: 'Sign out' }).click();
      await page.waitForURL(`${oidcStack.apiBase}/console/sign-in`);

      // A provider whose clock is 20 s behind walletflow's database (from Ren's first login on: a clock does not jump
      // back between one person's logins): Ren's fresh login after her sign-out says it happened before it, and is
      // still taken as fresh (later than the login her sign-out ended, and within the clocks' tolerance of now).
      idp.setLoginClockOffset(-20);
      try {
        for (let login = 1; login <= 2; login += 1) {
          await page.getByRole('link', { name: /Sign in with/ }).click();
          await logInAtProvider(page, 'ren', 'ren-pass');
          await page.waitForURL(`${oidcStack.apiBase}/console`);
          expect(await page.locator('header .who').innerText()).toContain('(oidc:staff-ren)');
          if (login === 1) {
            await page.getByRole('button', { name: 'Sign out' }).click();
            await page.waitForURL(`${oidcStack.apiBase}/console/sign-in`);
            // A login stamped in the same second as the one signed out (auth_time is whole seconds) cannot be told from
            // it, and is refused: a person takes longer than that to log in again; this browser waits for it.
            await page.waitForTimeout(1100);
          }
        }
      } finally {
        idp.setLoginClockOffset(0);
      }
    } finally {
      await context.close();
    }
  });

  it('a login kept at the provider from just before the sign-out is not taken as theirs either, however soon the next person signs in', async () => {
    const context = await browser.newContext();
    try {
      // Lea logs in at the provider, signs in to the console with it, and signs out a moment later: the next person at
      // the desk signs in within the minutes a login's age is given for clocks that disagree.
      const page = await signInWithProvider(context, oidcStack.apiBase, 'lea', 'lea-pass');
      await page.waitForURL(`${oidcStack.apiBase}/console`);
      await page.getByRole('button', { name: 'Sign out' }).click();
      await page.waitForURL(`${oidcStack.apiBase}/console/sign-in`);
      // The provider answers with her login whatever walletflow asks. Before: taken as fresh (within two minutes of
      // now), a session as Lea with her scopes, and her sign-out forgotten.
      await signInRefusedWithAnEarlierLogin(page);
      expect(await oidcStack.database.consoleSession.count({ where: { personId: 'oidc:staff-lea' } })).toBe(0);
    } finally {
      await context.close();
    }
  });

  it('a login’s age is told by the database’s clock, not the API process’s: with the process ten minutes behind the database and the provider, a login from before the sign-out is still not taken as theirs', async () => {
    const context = await browser.newContext();
    // The database and the provider agree; this API process's clock is ten minutes behind both.
    oidcDatabaseSkewMs = 10 * 60_000;
    try {
      // Kim logged in at the provider five minutes ago (by its clock), and signs in to the console with it.
      idp.setLoginClockOffset(600 - 300);
      const page = await signInWithProvider(context, oidcStack.apiBase, 'kim', 'kim-pass');
      await page.waitForURL(`${oidcStack.apiBase}/console`);
      idp.setLoginClockOffset(600);
      await page.getByRole('button', { name: 'Sign out' }).click();
      await page.waitForURL(`${oidcStack.apiBase}/console/sign-in`);
      // The provider answers with her earlier login, whatever walletflow asks for. Five minutes before the sign-out:
      // not fresh. Before: measured against this process's clock, it was within two minutes of "now", and taken.
      await signInRefusedWithAnEarlierLogin(page);
      expect(await oidcStack.database.consoleSession.count({ where: { personId: 'oidc:staff-kim' } })).toBe(0);
      // Her fresh login, by the same clocks: taken.
      await page.getByRole('link', { name: /Sign in with/ }).click();
      await logInAtProvider(page, 'kim', 'kim-pass');
      await page.waitForURL(`${oidcStack.apiBase}/console`);
      expect(await page.locator('header .who').innerText()).toContain('(oidc:staff-kim)');
    } finally {
      oidcDatabaseSkewMs = 0;
      idp.setLoginClockOffset(0);
      await context.close();
    }
  });

  it('two sign-ins started in one browser (two tabs) each finish: the first one’s callback is not refused', async () => {
    const context = await browser.newContext();
    const since = new Date();
    try {
      // Both tabs reach the provider's login page before either logs in (console tabs restored after a sign-out).
      const first = await context.newPage();
      await first.goto(`${oidcStack.apiBase}/console`);
      await first.getByRole('link', { name: /Sign in with/ }).click();
      await first.getByLabel('User name').waitFor();
      const second = await context.newPage();
      await second.goto(`${oidcStack.apiBase}/console`);
      await second.getByRole('link', { name: /Sign in with/ }).click();
      await second.getByLabel('User name').waitFor();
      // The first tab logs in first. Before: one cookie held the sign-in under way, the second start's, so the first
      // callback was refused (400, "started in another browser") and counted as a failed sign-in.
      await logInAtProvider(first, 'jose', 'jose-pass');
      await first.waitForURL(`${oidcStack.apiBase}/console`);
      expect(await first.locator('header .who').innerText()).toContain('(oidc:staff-jose)');
      await logInAtProvider(second, 'jose', 'jose-pass');
      await second.waitForURL(`${oidcStack.apiBase}/console`);
      expect(await second.locator('header .who').innerText()).toContain('(oidc:staff-jose)');
      const refused = await oidcStack.database.opsAction.count({
        where: { at: { gte: since }, path: { startsWith: '/console/oidc/callback' }, status: { gte: 400 } },
      });
      expect(refused).toBe(0);
    } finally {
      await context.close();
    }
  });

  it('signing in again in the same browser ends its earlier session (the one its cookie named)', async () => {
    const context = await browser.newContext();
    const since = new Date();
    try {
      const first = await signInWithProvider(context, oidcStack.apiBase, 'ana', 'ana-pass');
      await first.waitForURL(`${oidcStack.apiBase}/console`);
      const earlier = (await context.cookies(`${oidcStack.apiBase}/console`)).find(
        (cookie) => cookie.name === 'walletflow_console',
      )!.value;
      const live = () =>
        oidcStack.database.consoleSession.count({ where: { personId: 'oidc:staff-ana', createdAt: { gte: since } } });
      // The provider's answer comes from another site in production, without the Strict session
      // cookie: the start, a person's navigation from the console, ends the browser's session. An
      // image (a sibling subdomain's page) or a prefetch of the start ends nothing: each is refused, nothing begins.
      for (const [headers, status] of [
        [{ 'sec-fetch-mode': 'no-cors', 'sec-fetch-dest': 'image', 'sec-fetch-site': 'same-site' }, 400],
        [
          {
            'sec-fetch-mode': 'navigate',
            'sec-fetch-dest': 'document',
            'sec-fetch-site': 'same-origin',
            'sec-purpose': 'prefetch',
          },
          400,
        ],
      ] as const) {
        expect(
          (
            await navigate(`${oidcStack.apiBase}/console/sign-in/oidc`, {
              cookie: `walletflow_console=${earlier}`,
              ...headers,
            })
          ).status,
        ).toBe(status);
        expect(await live()).toBe(1);
      }
      // A control character in the page to return to: the console's home instead (a NUL was a 500).
      expect(
        (
          await navigate(`${oidcStack.apiBase}/console/sign-in/oidc?return=/console/fundings%00x`, {
            'sec-fetch-mode': 'navigate',
            'sec-fetch-dest': 'document',
            'sec-fetch-site': 'none',
          })
        ).status,
      ).toBe(303);
      expect(
        (
          await navigate(`${oidcStack.apiBase}/console/sign-in/oidc`, {
            cookie: `walletflow_console=${earlier}`,
            'sec-fetch-mode': 'navigate',
            'sec-fetch-dest': 'document',
            'sec-fetch-site': 'same-origin',
          })
        ).status,
      ).toBe(303);
      expect(await live()).toBe(0);
      // Straight to the provider's sign-in again, as a person does from a bookmark.
      const again = await context.newPage();
      await again.goto(`${oidcStack.apiBase}/console/sign-in/oidc`);
      // The provider may remember her (its own session) or ask again.
      await again.waitForURL((url) => url.href === `${oidcStack.apiBase}/console` || url.origin !== oidcStack.apiBase);
      if (!again.url().startsWith(oidcStack.apiBase)) {
        await logInAtProvider(again, 'ana', 'ana-pass');
        await again.waitForURL(`${oidcStack.apiBase}/console`);
      }
      const later = (await context.cookies(`${oidcStack.apiBase}/console`)).find(
        (cookie) => cookie.name === 'walletflow_console',
      )!.value;
      expect(later).not.toBe(earlier);
      // One session of this browser's is left: the new one.
      expect(await live()).toBe(1);
      const stale = await fetch(`${oidcStack.apiBase}/console`, {
        redirect: 'manual',
        headers: { cookie: `walletflow_console=${earlier}` },
      });
      await stale.arrayBuffer();
      expect(stale.status).toBe(303);
    } finally {
      await context.close();
    }
  });

  it('answers a provider down at the callback with 503 and Retry-After, not as a refused sign-in: nothing counted against the address, and once it is back the person signs in', async () => {
    const failures = async () =>
      Number(
        (
          await oidcStack.database.$queryRaw<Array<{ n: bigint }>>`
            SELECT COALESCE(sum(count), 0)::bigint AS n FROM attempt_count WHERE kind LIKE '%console-sign-in-failure%'`
        )[0]!.n,
      );
    const before = await failures();
    const context = await browser.newContext();
    try {
      const page = await context.newPage();
      await page.goto(`${oidcStack.apiBase}/console`);
      await page.getByRole('link', { name: /Sign in with/ }).click();
      idp.failTokenRequests(true);
      const callback = page.waitForResponse((response) => response.url().includes('/console/oidc/callback'));
      try {
        await logInAtProvider(page, 'ana', 'ana-pass');
        const answer = await callback;
        // Before: 400 "could not be accepted", counted as a failed sign-in (an office behind one address was held
        // back for the provider's outage).
        expect(answer.status()).toBe(503);
        expect(Number(answer.headers()['retry-after'])).toBeGreaterThan(0);
        await expect(page.getByText('The identity provider cannot be reached just now.').isVisible()).resolves.toBe(
          true,
        );
      } finally {
        idp.failTokenRequests(false);
      }
      expect(await failures()).toBe(before);
      await page.goto(`${oidcStack.apiBase}/console`);
      await page.getByRole('link', { name: /Sign in with/ }).click();
      await page.waitForURL(`${oidcStack.apiBase}/console`);
      expect(await page.locator('header .who').innerText()).toContain('Ana Cruz (oidc:staff-ana)');
    } finally {
      await context.close();
    }
  });

  it('answers a callback whose database read lost its connection 503, saying to sign in again (a reload cannot work: its state is spent), and the next sign-in goes through to the page the person asked for', async () => {
    // A reset, once, at the callback's read of the person's last sign-out.
    const restore = failRawQueries(oidcStack.database, 'console_sign_out', connectionReset(), { once: true });
    const context = await browser.newContext();
    try {
      const page = await context.newPage();
      // Signed out, a person opens the audit page: the sign-in is to bring them back to it.
      await page.goto(`${oidcStack.apiBase}/console/audit`);
      await page.getByRole('link', { name: /Sign in with/ }).click();
      const callback = page.waitForResponse((response) => response.url().includes('/console/oidc/callback'));
      await logInAtProvider(page, 'ana', 'ana-pass');
      const answer = await callback;
      expect(answer.status()).toBe(503);
      expect(Number(answer.headers()['retry-after'])).toBeGreaterThan(0);
      // Before: "nothing was changed. Reload it", and a reload of the callback is refused: its state is spent.
      const text = await page.locator('main').innerText();
      expect(text).toContain('sign in again');
      expect(text).not.toContain('Reload');
      // Before: the link went to /console/sign-in, and the sign-in ended on the home page.
      const again = page.getByRole('link', { name: 'Sign in', exact: true });
      expect(await again.getAttribute('href')).toBe('/console/sign-in?return=%2Fconsole%2Faudit');
      await again.click();
      await page.getByRole('link', { name: /Sign in with/ }).click();
      await page.waitForURL(`${oidcStack.apiBase}/console/audit`);
      expect(await page.locator('header .who').innerText()).toContain('Ana Cruz (oidc:staff-ana)');
    } finally {
      restore();
      await context.close();
    }
  });

  it('answers a provider that sends the browser back saying it is down (temporarily_unavailable, server_error) with 503 and Retry-After, not as a refused sign-in; a refusal (access_denied) is still one', async () => {
    const failures = async () =>
      Number(
        (
          await oidcStack.database.$queryRaw<Array<{ n: bigint }>>`
            SELECT COALESCE(sum(count), 0)::bigint AS n FROM attempt_count WHERE kind LIKE '%console-sign-in-failure%'`
        )[0]!.n,
      );
    const context = await browser.newContext();
    try {
      const page = await context.newPage();
      /** A sign-in begun, then the provider's redirect back with `error` in place of a code (RFC 6749 4.1.2.1). */
      const sentBackWith = async (error: string) => {
        await page.goto(`${oidcStack.apiBase}/console`);
        const authorization = page.waitForRequest((request) => new URL(request.url()).searchParams.has('state'));
        await page.getByRole('link', { name: /Sign in with/ }).click();
        const state = new URL((await authorization).url()).searchParams.get('state')!;
        const callback = new URL(`${oidcStack.apiBase}/console/oidc/callback`);
        callback.search = new URLSearchParams({ error, state, iss: idp.issuer }).toString();
        return (await page.goto(callback.href))!;
      };
      for (const error of ['temporarily_unavailable', 'server_error']) {
        const before = await failures();
        const answer = await sentBackWith(error);
        // Before: 400 "could not be accepted", counted against the office's address like a refused sign-in.
        expect(answer.status()).toBe(503);
        expect(Number(answer.headers()['retry-after'])).toBeGreaterThan(0);
        await expect(page.getByText('The identity provider cannot be reached just now.').isVisible()).resolves.toBe(
          true,
        );
        expect(await failures()).toBe(before);
      }
      const before = await failures();
      const refused = await sentBackWith('access_denied');
      expect(refused.status()).toBe(400);
      expect(await failures()).toBe(before + 1);
    } finally {
      await context.close();
    }
  });

  it('refuses a callback this browser did not start, and a state used twice', async () => {
    const context = await browser.newContext();
    try {
      const page = await context.newPage();
      const forged = await page.goto(
        `${oidcStack.apiBase}/console/oidc/callback?code=forged&state=${randomBytes(16).toString('base64url')}`,
      );
      expect(forged?.status()).toBe(400);
    } finally {
      await context.close();
    }
  });

  it('signs out everywhere: every session of the person ends, on every browser', async () => {
    const first = await browser.newContext();
    const second = await browser.newContext();
    const since = new Date();
    try {
      const one = await signInWithProvider(first, oidcStack.apiBase, 'jose', 'jose-pass');
      await one.waitForURL(`${oidcStack.apiBase}/console`);
      const two = await signInWithProvider(second, oidcStack.apiBase, 'jose', 'jose-pass');
      await two.waitForURL(`${oidcStack.apiBase}/console`);
      expect(
        await oidcStack.database.consoleSession.count({
          where: { personId: 'oidc:staff-jose', createdAt: { gte: since } },
        }),
      ).toBe(2);
      await one.getByRole('button', { name: 'Sign out' }).click();
      await one.waitForURL(/\/console\/sign-in$/);
      expect(await oidcStack.database.consoleSession.count({ where: { personId: 'oidc:staff-jose' } })).toBe(0);
      await two.reload();
      expect(two.url()).toContain('/console/sign-in');
    } finally {
      await first.close();
      await second.close();
    }
  });
});

describe('the console’s sign-in with a named ops key (no identity provider)', () => {
  it('signs in under the key’s name and scopes; a reader sees no buttons and a forged write gets 403', async () => {
    const context = await browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true });
    try {
      const page = await context.newPage();
      await page.goto(`${keyStack.apiBase}/console`);
      expect(page.url()).toContain('/console/sign-in');
      await page.getByLabel('Your ops key').fill('not-a-key-of-ours-at-all');
      await page.getByRole('button', { name: 'Sign in' }).click();
      expect(await page.getByRole('alert').innerText()).toContain('not one of this walletflow’s ops keys');
      await page.getByLabel('Your ops key').fill(readerKey);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.waitForURL(`${keyStack.apiBase}/console`);
      expect(await page.locator('header .who').innerText()).toContain('auditor');
      // The reader's home offers nothing to do but look.
      expect(await page.locator('main button:not(.copy)').count()).toBe(0);
      // A write it has no scope for, forged with its own valid CSRF token: 403, nothing done.
      const csrf = await page.locator('header input[name=_csrf]').getAttribute('value');
      const forged = await page.evaluate(async (token) => {
        const response = await fetch(`/console/batches/${crypto.randomUUID()}/approve`, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: `_csrf=${encodeURIComponent(token ?? '')}`,
        });
        return { status: response.status, type: response.headers.get('content-type'), text: await response.text() };
      }, csrf);
      // Refused by the route's own scope check, with a page in words (not the API's problem document).
      expect(forged.status).toBe(403);
      expect(forged.type).toMatch(/^text\/html/);
      expect(forged.text).toContain('You may not do this');
    } finally {
      await context.close();
    }
  });

  it('answers a key sign-in whose session could not be stored (a lost connection) 503, with a link that signs in again to the page asked for', async () => {
    const restore = failRawQueries(keyStack.database, 'INSERT INTO console_session', connectionReset(), { once: true });
    const context = await browser.newContext();
    try {
      const page = await context.newPage();
      await page.goto(`${keyStack.apiBase}/console/audit`);
      await page.getByLabel('Your ops key').fill(readerKey);
      const answer = page.waitForResponse((response) => response.request().method() === 'POST');
      await page.getByRole('button', { name: 'Sign in' }).click();
      expect((await answer).status()).toBe(503);
      expect(await page.locator('main').innerText()).toContain('sign in again');
      // Before: /console/sign-in, which signs in to the home page.
      const again = page.getByRole('link', { name: 'Sign in', exact: true });
      expect(await again.getAttribute('href')).toBe('/console/sign-in?return=%2Fconsole%2Faudit');
      await again.click();
      await page.getByLabel('Your ops key').fill(readerKey);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.waitForURL(`${keyStack.apiBase}/console/audit`);
    } finally {
      restore();
      await context.close();
    }
  });

  it('refuses a write without the session’s CSRF token, and a session idle past its time-out', async () => {
    const context = await browser.newContext();
    try {
      const page = await context.newPage();
      await page.goto(`${keyStack.apiBase}/console/sign-in`);
      await page.getByLabel('Your ops key').fill(keyStack.opsKey);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.waitForURL(`${keyStack.apiBase}/console`);
      const status = await page.evaluate(
        async () =>
          (
            await fetch('/console/sign-out', {
              method: 'POST',
              headers: { 'content-type': 'application/x-www-form-urlencoded' },
              body: '',
            })
          ).status,
      );
      expect(status).toBe(403);
      // Still signed in: the refused sign-out did nothing.
      await page.reload();
      expect(page.url()).toBe(`${keyStack.apiBase}/console`);
      // Idle past CONSOLE_IDLE_MINUTES: the next request finds no session.
      await keyStack.database.consoleSession.updateMany({
        where: { personId: 'key:default' },
        data: { lastSeenAt: new Date(Date.now() - 16 * 60_000) },
      });
      await page.reload();
      expect(page.url()).toContain('/console/sign-in');
      // Over for good: its lifetime ends where it was found idle (kept for the purge, which deletes it; a sign-out from
      // this browser still knows whose it was).
      expect(
        await keyStack.database.consoleSession.count({
          where: { personId: 'key:default', expiresAt: { gt: new Date(Date.now() + keyClockSkewMs + 1000) } },
        }),
      ).toBe(0);
    } finally {
      await context.close();
    }
  });

  it('keeps a session alive for the pages a person opens in the browser (typed or clicked), not for what a page loads or prefetches on its own', async () => {
    const context = await browser.newContext();
    try {
      const page = await context.newPage();
      await page.goto(`${keyStack.apiBase}/console/sign-in`);
      await page.getByLabel('Your ops key').fill(readerKey);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.waitForURL(`${keyStack.apiBase}/console`);
      const session = async () =>
        (
          await keyStack.database.consoleSession.findFirstOrThrow({
            where: { personId: 'key:auditor' },
            orderBy: { createdAt: 'desc' },
          })
        ).lastSeenAt.getTime();
      const signedInAt = await session();
      // Ten minutes on, an address typed in the browser (Sec-Fetch-Site: none): the person's act.
      keyClockSkewMs = 10 * 60_000;
      await page.goto(`${keyStack.apiBase}/console/search`);
      const typed = await session();
      expect(typed - signedInAt).toBeGreaterThanOrEqual(10 * 60_000 - 5000);
      // Ten minutes more: an image, a prefetch and a script's fetch of console pages, by the page itself: none is the
      // person's.
      keyClockSkewMs = 20 * 60_000;
      await page.evaluate(async () => {
        const image = new Image();
        const loaded = new Promise((resolve) => {
          image.onload = resolve;
          image.onerror = resolve;
        });
        image.src = '/console/review';
        document.body.append(image);
        const prefetch = document.createElement('link');
        prefetch.rel = 'prefetch';
        prefetch.href = '/console/audit';
        document.head.append(prefetch);
        await fetch('/console/batches');
        await loaded;
        await new Promise((resolve) => setTimeout(resolve, 1000));
      });
      expect(await session()).toBe(typed);
      // A link clicked: the person's act again.
      await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Review' }).click();
      await page.waitForURL(`${keyStack.apiBase}/console/review`);
      expect((await session()) - signedInAt).toBeGreaterThanOrEqual(20 * 60_000 - 5000);
    } finally {
      keyClockSkewMs = 0;
      await context.close();
    }
  });

  it('an open page whose session ended says so: its live region stops, and the page asks the person to sign in again', async () => {
    const context = await browser.newContext();
    try {
      const page = await context.newPage();
      await page.goto(`${keyStack.apiBase}/console/sign-in`);
      await page.getByLabel('Your ops key').fill(readerKey);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.waitForURL(`${keyStack.apiBase}/console`);
      await page.locator('#home-figures[data-updated]').waitFor({ timeout: 20_000 });
      // Sixteen minutes with the page open on the screen and nobody at it.
      keyClockSkewMs = 16 * 60_000;
      const alert = page.getByRole('alert').filter({ hasText: 'Your session has ended' });
      await alert.waitFor({ timeout: 20_000 });
      const signInAgain = alert.getByRole('link', { name: 'Sign in again' });
      expect(await signInAgain.getAttribute('href')).toBe('/console/sign-in?return=%2Fconsole');
      await signInAgain.click();
      await page.waitForURL(/\/console\/sign-in\?return=/);
    } finally {
      keyClockSkewMs = 0;
      await context.close();
    }
  });

  it('stops pushing a live region once the person signed out: an open page is not a session of its own', async () => {
    const form = await fetch(`${keyStack.apiBase}/console/sign-in`);
    const pre = form.headers.getSetCookie()[0]!.split(';')[0]!;
    const signedIn = await fetch(`${keyStack.apiBase}/console/sign-in`, {
      method: 'POST',
      redirect: 'manual',
      headers: { cookie: pre, 'content-type': 'application/x-www-form-urlencoded', origin: keyStack.apiBase },
      body: `_csrf=${pre.split('=')[1]}&return=%2Fconsole&key=${encodeURIComponent(readerKey)}`,
    });
    const session = signedIn.headers
      .getSetCookie()
      .find((cookie) => cookie.startsWith('walletflow_console='))!
      .split(';')[0]!;
    const stream = await fetch(`${keyStack.apiBase}/console/live/home`, { headers: { cookie: session } });
    expect(stream.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const reader = stream.body!.getReader();
    let received = '';
    const first = await reader.read();
    received += new TextDecoder().decode(first.value);
    // Signed out everywhere (another browser's sign-out): the stream says so and ends.
    await keyStack.database.consoleSession.deleteMany({ where: { personId: 'key:auditor' } });
    const deadline = Date.now() + 15_000;
    for (;;) {
      const next = await reader.read();
      if (next.done) break;
      received += new TextDecoder().decode(next.value);
      expect(Date.now()).toBeLessThan(deadline);
    }
    expect(received).toContain('event: end\ndata: signed-out');
  });
});
