// Signing in to the console and out of it (contract-decisions section 15). With an identity
// provider (CONSOLE_OIDC_ISSUER, its client id and secret): OpenID Connect's authorization code
// flow with PKCE (openid-client), state bound to the browser by a cookie, nonce checked in the ID
// token; the person's groups (CONSOLE_OIDC_GROUPS_CLAIM) give their scopes through
// CONSOLE_OIDC_ROLES, and a person with none is refused. Without one: a named ops key, checked as
// the ops API checks it (the same guard, so wrong keys count once per address for both). Either
// way a new session (a new id) starts, resting on what the sign-in showed (the key's fingerprint,
// or the person's groups: console-grants.ts checks them again on every request), and every
// earlier sign-in page's token is spent. Failed sign-ins are counted per address across every API
// process (a success never counts, and a right key or a callback this browser started is never
// held back), and starts through the provider have a looser limit of their own. Every sign-in is audited under the
// person's name, a refused one too. Signing out ends
// every session of the person.
import { randomBytes } from 'node:crypto';
import express, { type Request, type Response } from 'express';
import * as oidc from 'openid-client';
import { personActorName, shownPersonName } from '../../domain/actor.ts';
import type { AttemptLimiter } from '../../access/attempt-limits.ts';
import {
  SIGN_IN_TTL_MS,
  sameToken,
  SignedOutMeanwhile,
  type ConsolePerson,
  type ConsoleGrant,
  type ConsoleSessions,
} from '../../access/console-sessions.ts';
import { escapeHtml } from '../../lib/html.ts';
import type { Logger } from '../../lib/logger.ts';
import { scopesOfGroups } from '../../lib/console-roles.ts';
import type { ConsoleConfig } from '../../lib/config.ts';
import { clearActor, setActor } from '../http/actor.ts';
import { rateKeyOf } from '../http/rate-limit.ts';
import { refuseHead } from '../http/route-registration.ts';
import { defineRoute, headRefusedAnswers, htmlAnswer, redirectAnswer, type AnyRouteSpec } from '../http/route-spec.ts';
import type { OpsKeyGuard } from '../ops/ops-key-guard.ts';
import { auditAsAct } from '../ops/ops-audit.ts';
import {
  clearCookie,
  consoleCookieNames,
  consoleRoutesOn,
  consoleSessionOf,
  endedSessionOf,
  cookieValuesOf,
  isPersonsNavigation,
  isSpeculative,
  sameOrigin,
  setCookie,
} from './console-auth.ts';
import { issuerOfRecord, keyPersonId, type ConsoleGrants } from './console-grants.ts';
import { consoleHeaders, CONSOLE_PATH, notice, sendConsolePage } from './console-layout.ts';

/**
 * The scopes a sign-in asks for: CONSOLE_OIDC_SCOPES as set, else `openid profile` and the groups claim's scope
 * (`groups` by default) where the provider lists it: Dex and Okta's org server send the groups only to a client that
 * asks for that scope, and a person who came back without them would have no role. A provider that lists the scope
 * but refuses it to this client (a Keycloak client scope not assigned to it) is answered by setting the variable.
 */
export function scopesToAsk(
  configuration: oidc.Configuration,
  settings: { groupsClaim: string; scopes?: readonly string[] | undefined },
): string {
  if (settings.scopes) return settings.scopes.join(' ');
  const supported = configuration.serverMetadata().scopes_supported ?? [];
  return ['openid', 'profile', ...(supported.includes(settings.groupsClaim) ? [settings.groupsClaim] : [])]
    .filter((scope, index, all) => all.indexOf(scope) === index)
    .join(' ');
}

/**
 * The provider's metadata, found from CONSOLE_OIDC_ISSUER. Discovery checks that the metadata names the issuer exactly;
 * one that differs only by a trailing slash (an issuer set with a slash its provider does not have, or without one it
 * has) is the same provider: discovered again under the name it gives itself, and the setting to mend is logged.
 */
async function discoverProvider(
  settings: { issuer: string; clientId: string; clientSecret: string },
  logger: Logger,
): Promise<oidc.Configuration> {
  const discover = (issuer: string) =>
    oidc.discovery(
      new URL(issuer),
      settings.clientId,
      settings.clientSecret,
      undefined,
      issuer.startsWith('http:') ? { execute: [oidc.allowInsecureRequests] } : undefined,
    );
  try {
    return await discover(settings.issuer);
  } catch (error) {
    const named = (error as { code?: unknown; cause?: { attribute?: unknown; body?: { issuer?: unknown } } }).cause;
    const issuer = named?.attribute === 'issuer' ? named.body?.issuer : undefined;
    if (typeof issuer !== 'string' || issuerOfRecord(issuer) !== issuerOfRecord(settings.issuer)) throw error;
    logger.warn(
      { configured: settings.issuer, provider: issuer },
      'console: CONSOLE_OIDC_ISSUER differs from the issuer the provider names only by a trailing slash; set it as the provider names it',
    );
    return discover(issuer);
  }
}

export interface SignInDependencies {
  sessions: ConsoleSessions;
  config: ConsoleConfig;
  /** The process's ops key guard (api/ops/ops-key-guard.ts), shared with the ops API. */
  keys: OpsKeyGuard;
  /** What a session rests on, checked again on every request. */
  grants: ConsoleGrants;
  /**
   * Failed sign-ins per client address (a form from no sign-in page, a callback this browser did not
   * start, a code the provider would not exchange), counted across every API process; a success never counts.
   */
  signInFailures: AttemptLimiter;
  /**
   * Sign-ins through the provider started per client address (each writes a row and leaves for the provider), counted
   * across every API process.
   */
  signInStarts: AttemptLimiter;
  /** PUBLIC_URL: the console's origin for the redirect URI and the Origin check; absent: the request's own. */
  publicUrl: string | undefined;
  secureCookies: boolean;
  logger: Logger;
}

const routes = {
  signInPage: defineRoute({
    method: 'get',
    path: '/console/sign-in',
    operationId: 'consoleSignInPage',
    tag: 'console',
    summary: 'The sign-in page: the identity provider’s button, or the ops key form',
    access: { consoleScope: null },
    responses: { '200': htmlAnswer('the page') },
  }),
  signInWithKey: defineRoute({
    method: 'post',
    path: '/console/sign-in',
    operationId: 'consoleSignInWithKey',
    tag: 'console',
    summary: 'Sign in with a named ops key (when no identity provider is configured)',
    access: { consoleScope: null },
    responses: {
      '303': redirectAnswer('signed in'),
      '401': htmlAnswer('a wrong key'),
      '429': htmlAnswer('too many attempts'),
    },
  }),
  signInWithProvider: defineRoute({
    method: 'get',
    path: '/console/sign-in/oidc',
    operationId: 'consoleSignInWithProvider',
    tag: 'console',
    summary: 'Start an OpenID Connect sign-in: to the identity provider',
    access: { consoleScope: null },
    responses: {
      '303': redirectAnswer('to the identity provider'),
      '429': htmlAnswer('too many sign-ins started from this address (Retry-After)'),
      '503': htmlAnswer('the identity provider could not be reached (Retry-After)'),
    },
  }),
  // Before the GET, which Express would otherwise let answer HEAD too: a HEAD of the provider's redirect (a link
  // preview, a scanner) spent the sign-in's state, and the person's own GET then found none.
  providerCallbackHead: defineRoute({
    method: 'head',
    path: '/console/oidc/callback',
    operationId: 'consoleProviderCallbackHead',
    tag: 'console',
    summary: 'A link preview, a scanner or a prefetch: never uses up a sign-in’s state',
    access: { consoleScope: null },
    responses: headRefusedAnswers('only a GET finishes a sign-in'),
  }),
  providerCallback: defineRoute({
    method: 'get',
    path: '/console/oidc/callback',
    operationId: 'consoleProviderCallback',
    tag: 'console',
    summary:
      'The identity provider’s answer: a session for the person, or why not (audited as a sign-in, whatever it answers)',
    access: { consoleScope: null },
    responses: {
      '200': htmlAnswer('signed in: on to the console'),
      '303': redirectAnswer(
        'back to the identity provider, for a fresh login: it answered with a login from before the person signed out',
      ),
      '400': htmlAnswer('a sign-in that cannot be finished'),
      '401': htmlAnswer('the provider answered a request for a fresh login with an earlier login: nobody signed in'),
      '403': htmlAnswer('no console role'),
      '429': htmlAnswer('too many failed sign-ins from this address (Retry-After)'),
      '503': htmlAnswer(
        'the identity provider did not answer, answered 5xx, or said it is down (`temporarily_unavailable`, `server_error`): not counted as a failure (Retry-After)',
      ),
    },
  }),
  signOut: defineRoute({
    method: 'post',
    path: '/console/sign-out',
    operationId: 'consoleSignOut',
    tag: 'console',
    summary: 'Sign out: every session of the person ends',
    access: { consoleScope: null },
    responses: { '303': redirectAnswer('to the sign-in page') },
  }),
};

export const signInRoutes: readonly AnyRouteSpec[] = Object.values(routes);

/**
 * How far apart the identity provider's clock and walletflow's database's may be: a login this recent counts as fresh
 * whatever the two clocks say (its redirect back follows the login at once).
 */
export const FRESH_LOGIN_TOLERANCE_SECONDS = 120;

/**
 * Whether a login the provider says happened at `authTime` (the ID token's auth_time: its clock, whole seconds) is
 * fresh after `since` (walletflow's database clock): at or after it, to the second, or within
 * FRESH_LOGIN_TOLERANCE_SECONDS of `nowMs` (the database's clock too: an API process's own may be off). Never when it
 * is no later than `signedOutLogin`, the login of a session that sign-out ended (the provider's own clock on both
 * sides, so no tolerance: the same login kept at the provider, whatever the clocks say, however soon after; a new
 * login stamped in that login's second cannot be told from it, and is refused too). Without an auth_time, nothing
 * says it is.
 */
export function loginIsFresh(
  authTime: number | undefined,
  since: Date,
  nowMs: number,
  signedOutLogin: number | null = null,
): boolean {
  if (authTime === undefined) return false;
  if (signedOutLogin !== null && authTime <= signedOutLogin) return false;
  return (
    authTime >= Math.floor(since.getTime() / 1000) ||
    authTime >= Math.floor(nowMs / 1000) - FRESH_LOGIN_TOLERANCE_SECONDS
  );
}

/**
 * The ID token's auth_time in whole seconds (a JWT's times may carry a fraction: kept as a bigint, one failed the
 * sign-in with a 500 after its state was spent); undefined when the provider does not say; null when it is no number a
 * login's time can be stored as (not finite, negative, past 2^53): such an answer is refused. A provider's large value
 * (milliseconds) is kept as it is: its sign-out still tells the same login again.
 */
export function loginTimeOf(claim: unknown): number | undefined | null {
  if (claim === undefined) return undefined;
  if (typeof claim !== 'number' || !Number.isFinite(claim) || claim < 0 || claim > Number.MAX_SAFE_INTEGER) return null;
  return Math.floor(claim);
}

/**
 * Whether a failed exchange with the identity provider was the provider away (no answer: a network error or a time-out;
 * a 5xx, or a 429: busy; or the provider saying so in its redirect back or its token answer,
 * `temporarily_unavailable` or `server_error`, the stand-ins for a 503 and a 500 where no status can travel, RFC 6749
 * 4.1.2.1), not an answer that refused the sign-in (any other OAuth error, an ID token that does not verify).
 */
export function providerUnavailable(error: unknown): boolean {
  if (error instanceof oidc.AuthorizationResponseError || error instanceof oidc.ResponseBodyError)
    if (providerDownCodes.has(error.error)) return true;
  // undici's `fetch failed`, its cause the socket's error: not a TypeError of walletflow's own code.
  if (error instanceof TypeError && error.message === 'fetch failed') return true;
  if (error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError')) return true;
  // A 429 is the provider busy (a burst of sign-ins at nine), not refusing this one.
  const busyOrDown = (status: number) => status >= 500 || status === 429;
  if (error instanceof oidc.ResponseBodyError) return busyOrDown(error.status);
  if (error instanceof oidc.ClientError && error.code === 'OAUTH_RESPONSE_IS_NOT_CONFORM')
    return error.cause instanceof Response && busyOrDown(error.cause.status);
  return false;
}

/** The OAuth error codes by which a provider says it is down, not that it refuses the sign-in. */
const providerDownCodes = new Set(['temporarily_unavailable', 'server_error']);
/** When a person is told to try again while the identity provider cannot be reached, or says it is down. */
const PROVIDER_DOWN_RETRY_AFTER_SECONDS = 30;

/** The signed-out cookie's value (what it says is that it is there). */
const SIGNED_OUT = 'signed-out-ask-again';

/**
 * The console's paths that are no page to land on after signing in: the sign-in itself, the provider's callback (a
 * return there counted a failed sign-in against the office's address, audited under the person who had just signed
 * in), the sign-out, and the live regions' streams.
 */
const NOT_A_PAGE = ['sign-in', 'sign-out', 'oidc', 'live'].map((name) => `${CONSOLE_PATH}/${name}`);

/**
 * Whether `path` (a console path, its query off) is one of NOT_A_PAGE or under one, as a browser resolves it (dot
 * segments, `%2e` among them) and Express routes it (without regard to case, with or without a slash at the end); a
 * path a browser would resolve to another is none either.
 */
function isNotAPage(path: string): boolean {
  let routed: string;
  try {
    const resolved = new URL(path, 'http://console.invalid').pathname;
    if (resolved !== path) return true;
    routed = decodeURI(resolved).toLowerCase();
  } catch {
    return true;
  }
  return NOT_A_PAGE.some((prefix) => routed === prefix || routed.startsWith(`${prefix}/`));
}

/** Where a sign-in step was to return to: its callback's stored page once read, else its query or form. */
const SIGN_IN_RETURN = 'consoleSignInReturn';

/**
 * The page a sign-in step (its start, the key's form, the provider's callback once its state was read) was to return
 * to, for a link that begins it again: the console's home when it named none, or none that may be gone back to.
 */
export function signInReturnOf(req: Request, res: Response): string {
  return safeReturn(
    res.locals[SIGN_IN_RETURN] ?? req.query.return ?? (req.body as Record<string, unknown> | undefined)?.return,
  );
}

/** A console path to return to after signing in: only this console's own pages. */
export function safeReturn(value: unknown): string {
  if (
    typeof value !== 'string' ||
    !value.startsWith(`${CONSOLE_PATH}`) ||
    value.startsWith('//') ||
    // A backslash, a space or a control character (a NUL reached PostgreSQL with the sign-in under way: 500).
    /[\\\s\p{Cc}]/u.test(value) ||
    value.length > 500
  )
    return CONSOLE_PATH;
  const rest = value.slice(CONSOLE_PATH.length);
  if (isNotAPage(value.split(/[?#]/)[0]!)) return CONSOLE_PATH;
  // `/console/` is no page (Home is `/console` only).
  return rest === '' || (rest.startsWith('/') && rest !== '/' && !rest.startsWith('/?')) || rest.startsWith('?')
    ? value
    : CONSOLE_PATH;
}

export function addSignInRoutes(router: express.Router, deps: SignInDependencies): void {
  const add = consoleRoutesOn(router);
  const { sessions, config } = deps;
  const readForm = express.urlencoded({ extended: false, limit: '4kb', parameterLimit: 10 });
  const cookieOptions = { secure: deps.secureCookies };
  const cookies = consoleCookieNames(deps.secureCookies);
  const origin = (req: Request) => deps.publicUrl ?? `${req.protocol}://${req.get('host') ?? ''}`;
  const redirectUri = (req: Request) => `${origin(req)}${CONSOLE_PATH}/oidc/callback`;

  // The identity provider's metadata, discovered once (again after a failure).
  let discovered: Promise<oidc.Configuration> | undefined;
  const provider = (): Promise<oidc.Configuration> => {
    const settings = config.oidc;
    if (!settings) return Promise.reject(new Error('no identity provider is configured'));
    discovered ??= discoverProvider(settings, deps.logger).catch((error: unknown) => {
      discovered = undefined;
      throw error;
    });
    return discovered;
  };

  /**
   * A sign-in failed: counted against the address (across processes). Within the limit the failure
   * is answered as it is (`answer`); past it, 429 with the wait. Only failures are counted, and a
   * limit never stops a sign-in that succeeds (a right key, a callback this browser started): an
   * address shared by an office cannot be locked out by someone else's failures.
   */
  const failed = async (req: Request, res: Response, answer: () => void): Promise<void> => {
    const verdict = await deps.signInFailures.take(rateKeyOf(req.ip));
    if (verdict.allowed) {
      answer();
      return;
    }
    res.setHeader('Retry-After', String(verdict.retryAfterSeconds));
    sendConsolePage(res, 429, {
      title: 'Sign in',
      body: notice(
        `Too many failed sign-ins from this address. Wait ${verdict.retryAfterSeconds} seconds and try again.`,
        'error',
      ),
    });
  };

  /**
   * Starts the person's new session and sends them on (a page, so the Strict cookie goes with the
   * next request). The sessions this browser's cookies named end: a browser holds one session (and
   * a session planted beside its own by a sibling subdomain goes too).
   */
  async function signedIn(
    req: Request,
    res: Response,
    person: ConsolePerson,
    grant: ConsoleGrant,
    returnTo: string,
    /** The provider's sign-in that ends here: its state's cookie is cleared; and its login's auth_time, if told. */
    provider?: { signInState: string | undefined; loginAuthTime: number | undefined },
  ): Promise<void> {
    const signInState = provider?.signInState;
    await sessions.endSessionsOfCookies(cookieValuesOf(req, cookies.session));
    let cookieValue: string;
    try {
      ({ cookieValue } = await sessions.start(person, grant, provider && { loginAuthTime: provider.loginAuthTime }));
    } catch (error) {
      if (!(error instanceof SignedOutMeanwhile)) throw error;
      // The person signed out everywhere while this sign-in was under way (another browser, a shared desk's): the
      // sign-out stands, with this login kept beside it, and this browser is asked to sign in again: the provider,
      // answering with this login again, is asked for a fresh one.
      setActor(res.locals, { kind: 'person', name: person.personName, scopes: new Set() });
      deps.logger.info({ personId: person.personId }, 'console: signed out everywhere while a sign-in was under way');
      signInPage(req, res, 409, 'You were signed out everywhere while this sign-in was under way. Sign in again.');
      return;
    }
    // The sign-in is audited under the person's name (the request came without a session).
    setActor(res.locals, {
      kind: person.via === 'key' ? 'key' : 'person',
      name: person.personName,
      scopes: person.scopes,
    });
    setCookie(res, cookies.session, cookieValue, { ...cookieOptions, maxAgeSeconds: config.sessionHours * 3600 });
    clearCookie(res, cookies.preSignIn, cookieOptions);
    if (signInState)
      clearCookie(res, stateCookieName(signInState), {
        ...cookieOptions,
        path: `${CONSOLE_PATH}/oidc`,
        sameSite: 'Lax',
      });
    clearCookie(res, cookies.signedOut, cookieOptions);
    deps.logger.info({ person: person.personName, via: person.via, scopes: [...person.scopes] }, 'console: signed in');
    const target = escapeHtml(safeReturn(returnTo));
    consoleHeaders(res);
    res
      .status(200)
      .type('html')
      .send(
        `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta http-equiv="refresh" content="0; url=${target}"><title>Signed in</title></head><body><p>Signed in. <a href="${target}">Continue to the console</a>.</p></body></html>`,
      );
  }

  function signInPage(req: Request, res: Response, status: number, message?: string): void {
    const returnTo = signInReturnOf(req, res);
    if (config.oidc) {
      sendConsolePage(res, status, {
        title: 'Sign in',
        body: `${message ? notice(message, 'error') : ''}<div class="card"><p>Sign in with your company account.</p>
<p><a class="button" href="${CONSOLE_PATH}/sign-in/oidc?return=${encodeURIComponent(returnTo)}">Sign in with ${escapeHtml(new URL(config.oidc.issuer).host)}</a></p></div>`,
      });
      return;
    }
    // No identity provider: a named ops key, once; the form's token is a cookie of its own. The browser keeps one token
    // while it holds one: a form shown again (another tab, a reload, a signed-out page sent here) leaves the form shown
    // before still good (before, it was refused, and counted as a failed sign-in).
    const held = cookieValuesOf(req, cookies.preSignIn);
    const token =
      held.length === 1 && /^[A-Za-z0-9_-]{32}$/.test(held[0]!) ? held[0]! : randomBytes(24).toString('base64url');
    setCookie(res, cookies.preSignIn, token, { ...cookieOptions, maxAgeSeconds: 3600 });
    sendConsolePage(res, status, {
      title: 'Sign in',
      body: `${message ? notice(message, 'error') : ''}<div class="card"><form method="post" action="${CONSOLE_PATH}/sign-in">
<input type="hidden" name="_csrf" value="${token}"><input type="hidden" name="return" value="${escapeHtml(returnTo)}">
<label for="key">Your ops key</label><input id="key" name="key" type="password" autocomplete="current-password" required>
<p class="muted">The console keeps a session under the key’s name and scopes; the key itself is not kept.</p>
<button type="submit">Sign in</button></form></div>`,
    });
  }

  add(routes.signInPage, (req, res) => {
    if (consoleSessionOf(res)) {
      res.redirect(303, safeReturn(req.query.return));
      return;
    }
    signInPage(req, res, 200);
  });

  add(routes.signInWithKey, readForm, async (req, res) => {
    // A sign-in acts as nobody until it succeeds: a refusal is not audited under the session the browser still holds.
    clearActor(res.locals);
    // No body, or not a form (a POST without one, `text/plain`): nothing was read, as a form without its fields.
    const body = (req.body ?? {}) as Record<string, unknown>;
    // The form's token against each value of its cookie (a planted one beside it does not shadow it).
    const submitted = typeof body._csrf === 'string' ? body._csrf : undefined;
    const fromThisPage = cookieValuesOf(req, cookies.preSignIn).some((pre) => sameToken(pre, submitted));
    if (config.oidc || !fromThisPage || !sameOrigin(req, deps.publicUrl)) {
      await failed(req, res, () =>
        signInPage(req, res, 403, 'This sign-in form was not sent from this page. Try again.'),
      );
      return;
    }
    const presented = typeof body.key === 'string' && /^[\x21-\x7e]{1,512}$/.test(body.key) ? body.key : undefined;
    if (presented === undefined) {
      await failed(req, res, () => signInPage(req, res, 401, 'That key is not one of this walletflow’s ops keys.'));
      return;
    }
    // A wrong key is a guess: counted by the ops keys' guard, once for both doors (a right key is never held back).
    const checked = await deps.keys.check(req.ip, presented);
    if (checked.kind === 'limited') {
      res.setHeader('Retry-After', String(Math.ceil(checked.waitMs / 1000)));
      signInPage(req, res, 429, 'Too many wrong keys from this address. Wait a minute and try again.');
      return;
    }
    if (checked.kind === 'wrong') {
      signInPage(req, res, 401, 'That key is not one of this walletflow’s ops keys.');
      return;
    }
    const key = checked.key;
    await signedIn(
      req,
      res,
      { personId: keyPersonId(key), personName: key.name, via: 'key', scopes: key.scopes },
      deps.grants.ofKey(key),
      String(body.return ?? CONSOLE_PATH),
    );
  });

  add(routes.signInWithProvider, async (req, res) => {
    // An image, a script, a fetch or a frame of this address (Sec-Fetch-Dest), or a HEAD: a page elsewhere, not a
    // person, so nothing begins and nothing counts (a page with 120 images of it spent the starts of everyone behind
    // the address of the office that opened it).
    // From another site, only a person's click (Sec-Fetch-User): a page that sends a window it opened there again and
    // again makes navigations of no person's. And no prefetch, prerender or link preview: nobody asked yet.
    const dest = req.get('sec-fetch-dest');
    const site = req.get('sec-fetch-site');
    if (
      req.method !== 'GET' ||
      (dest !== undefined && dest !== 'document') ||
      ((site === 'cross-site' || site === 'same-site') && req.get('sec-fetch-user') !== '?1') ||
      isSpeculative(req)
    ) {
      signInPage(req, res, 400, 'Start signing in from the sign-in page.');
      return;
    }
    // Every other start counts (it writes a sign-in under way, and sends the browser to the provider), against a looser
    // limit of its own.
    const start = await deps.signInStarts.take(rateKeyOf(req.ip));
    if (!start.allowed) {
      res.setHeader('Retry-After', String(start.retryAfterSeconds));
      signInPage(
        req,
        res,
        429,
        `Too many sign-ins started from this address. Wait ${start.retryAfterSeconds} seconds and try again.`,
      );
      return;
    }
    if (!config.oidc) {
      signInPage(req, res, 404, 'No identity provider is configured: sign in with an ops key.');
      return;
    }
    let configuration: oidc.Configuration;
    try {
      configuration = await provider();
    } catch (error) {
      deps.logger.error({ err: (error as Error).message }, 'console: the identity provider could not be reached');
      res.setHeader('Retry-After', String(PROVIDER_DOWN_RETRY_AFTER_SECONDS));
      signInPage(req, res, 503, 'The identity provider cannot be reached just now. Try again in a minute.');
      return;
    }
    // The provider's answer comes back from another site, without this browser's (SameSite=Strict)
    // session cookie: the browser's earlier session ends here, at the start, when a person navigated
    // to it (an image or a prefetch of this address from a sibling subdomain ends nothing).
    if (isPersonsNavigation(req)) await sessions.endSessionsOfCookies(cookieValuesOf(req, cookies.session));
    // Someone signed out in this browser: the provider may still know them, and the next person at the desk must not
    // be signed in under their name.
    await sendToProvider(req, res, configuration, {
      returnTo: safeReturn(req.query.return),
      freshLogin: cookieValuesOf(req, cookies.signedOut).length > 0,
    });
  });

  /**
   * The cookie of the sign-in under way whose state is `state` (a random token, base64url): its first 22 characters
   * (128 bits) name it, anything else a name no sign-in has.
   */
  const stateCookieName = (state: string) =>
    `${cookies.signInState}_${/^[A-Za-z0-9_-]{22,}$/.test(state) ? state.slice(0, 22) : 'none'}`;

  /**
   * Begins a sign-in under way and sends the browser to the provider. A fresh login asks the provider to ask who the
   * person is (`prompt=login`) and to say when they logged in (`max_age=0`: the ID token's auth_time), which the
   * callback checks.
   */
  async function sendToProvider(
    req: Request,
    res: Response,
    configuration: oidc.Configuration,
    sign: { returnTo: string; freshLogin: boolean },
  ): Promise<void> {
    const state = oidc.randomState();
    const nonce = oidc.randomNonce();
    const codeVerifier = oidc.randomPKCECodeVerifier();
    await sessions.beginSignIn({ state, nonce, ...sign });
    // The callback arrives as a navigation from the provider's site: the state's cookie is Lax.
    // A cookie of its own for each sign-in under way (named by its state): two started in one browser (two tabs, a
    // double click, console tabs restored after a sign-out) each finish, where one name kept only the last.
    setCookie(res, stateCookieName(state), `${state}.${codeVerifier}`, {
      ...cookieOptions,
      path: `${CONSOLE_PATH}/oidc`,
      sameSite: 'Lax',
      maxAgeSeconds: SIGN_IN_TTL_MS / 1000,
    });
    const url = oidc.buildAuthorizationUrl(configuration, {
      redirect_uri: redirectUri(req),
      scope: scopesToAsk(configuration, {
        groupsClaim: config.oidc?.groupsClaim ?? 'groups',
        scopes: config.oidc?.scopes,
      }),
      code_challenge: await oidc.calculatePKCECodeChallenge(codeVerifier),
      code_challenge_method: 'S256',
      state,
      nonce,
      ...(sign.freshLogin ? { prompt: 'login', max_age: '0' } : {}),
    });
    consoleHeaders(res);
    res.redirect(303, url.href);
  }

  add(routes.providerCallbackHead, refuseHead);

  add(routes.providerCallback, async (req, res) => {
    // A sign-in, though a GET: audited as the writes are, whatever it answers; as nobody until it says who (not the
    // session the browser still holds, whose cookie a same-site provider's redirect carries).
    auditAsAct(res);
    clearActor(res.locals);
    const settings = config.oidc;
    const state = typeof req.query.state === 'string' ? req.query.state : undefined;
    // The state's cookie whose state is the one the provider sent back (a planted one beside it does not shadow it).
    const bound =
      cookieValuesOf(req, stateCookieName(state ?? '')).find(
        (value) => state !== undefined && sameToken(value.split('.')[0] ?? '', state),
      ) ?? '';
    const [boundState, codeVerifier] = bound.split('.');
    // The state must be the one this browser started (a callback pasted into another browser, or
    // forged by a site, starts nothing), and is used once.
    const started =
      settings && state && boundState && codeVerifier && sameToken(boundState, state)
        ? await sessions.takeSignIn(state)
        : null;
    if (started) res.locals[SIGN_IN_RETURN] = started.returnTo;
    if (!settings || !started || !codeVerifier) {
      await failed(req, res, () =>
        signInPage(
          req,
          res,
          400,
          'This sign-in could not be finished (it expired, was used, or started in another browser). Sign in again.',
        ),
      );
      return;
    }
    let claims: oidc.IDToken;
    let userInfo: Record<string, unknown> = {};
    let configuration: oidc.Configuration;
    try {
      configuration = await provider();
      const tokens = await oidc.authorizationCodeGrant(configuration, new URL(req.originalUrl, origin(req)), {
        pkceCodeVerifier: codeVerifier,
        expectedState: state,
        expectedNonce: started.nonce,
        idTokenExpected: true,
      });
      claims = tokens.claims()!;
      // Providers that keep groups out of the ID token give them at the userinfo endpoint.
      if (claims[settings.groupsClaim] === undefined)
        userInfo = await oidc.fetchUserInfo(configuration, tokens.access_token, claims.sub);
    } catch (error) {
      // The provider away for a moment (no answer, or a 5xx) is not a bad sign-in: 503, and not counted against the
      // address (an office behind one would be held back for the provider's outage).
      if (providerUnavailable(error)) {
        deps.logger.error({ err: (error as Error).message }, 'console: the identity provider could not be reached');
        res.setHeader('Retry-After', String(PROVIDER_DOWN_RETRY_AFTER_SECONDS));
        signInPage(req, res, 503, 'The identity provider cannot be reached just now. Sign in again in a minute.');
        return;
      }
      // The provider's own word, where it sent one (invalid_scope: a scope it lists but refuses this client; see
      // CONSOLE_OIDC_SCOPES).
      deps.logger.warn(
        { err: (error as Error).message, providerError: (error as { error?: unknown }).error },
        'console: an OpenID Connect sign-in failed',
      );
      await failed(req, res, () =>
        signInPage(req, res, 400, 'The identity provider’s answer could not be accepted. Sign in again.'),
      );
      return;
    }
    // The subject is who the person is, in every audit row: printable, no spaces or brackets, short enough to fit them.
    if (!/^[\x21-\x27\x2a-\x7e]{1,100}$/.test(claims.sub)) {
      deps.logger.warn(
        { subjectLength: claims.sub.length },
        'console: the identity provider named a subject walletflow cannot record',
      );
      await failed(req, res, () =>
        signInPage(req, res, 400, 'The identity provider’s answer could not be accepted. Sign in again.'),
      );
      return;
    }
    const authTime = loginTimeOf(claims.auth_time);
    if (authTime === null) {
      deps.logger.warn('console: the identity provider said a login happened at no time walletflow can record');
      await failed(req, res, () =>
        signInPage(req, res, 400, 'The identity provider’s answer could not be accepted. Sign in again.'),
      );
      return;
    }
    const displayName =
      [claims.name, claims.preferred_username, claims.email, userInfo.name].find(
        (value): value is string => typeof value === 'string' && value.length > 0,
      ) ?? claims.sub;
    const personName = personActorName(displayName, claims.sub);
    // A login from before the person signed out, or from before this browser asked for a fresh one, is not taken as
    // theirs: a shared desk's browser whose provider still knows the person who left (its marker cookie gone, or a
    // provider that did not ask who is there).
    const personId = `oidc:${claims.sub}`;
    const { signedOutAt, signedOutLoginAuthTime, now } = await sessions.signOutOf(personId);
    const freshSince = [signedOutAt, started.freshLoginSince]
      .filter((time): time is Date => time !== null)
      .reduce<Date | null>((latest, time) => (latest && latest >= time ? latest : time), null);
    if (freshSince && !loginIsFresh(authTime, freshSince, now.getTime(), signedOutLoginAuthTime)) {
      // Audited under the login the provider answered with (whoever left it there), with no scope.
      setActor(res.locals, { kind: 'person', name: personName, scopes: new Set() });
      if (started.freshLoginSince === null) {
        // Not asked for yet (nothing in this browser said someone signed out): asked for now.
        deps.logger.info({ personId }, 'console: a login from before the person signed out; asking for a fresh one');
        await sendToProvider(req, res, configuration, { returnTo: started.returnTo, freshLogin: true });
        return;
      }
      if (authTime !== undefined) {
        deps.logger.warn(
          { personId, authTime, freshSince: freshSince.toISOString() },
          'console: the identity provider answered a fresh-login request with an earlier login',
        );
        await failed(req, res, () =>
          signInPage(
            req,
            res,
            401,
            'Your identity provider signed you in with a login from before someone signed out here, without asking who you are. Sign out at the identity provider, then sign in again.',
          ),
        );
        return;
      }
      // The provider was asked for a fresh login and did not say when it happened (no auth_time): taken as asked.
      deps.logger.warn({ personId }, 'console: the identity provider did not say when the person logged in');
    }
    const groupsValue = claims[settings.groupsClaim] ?? userInfo[settings.groupsClaim];
    const groups = Array.isArray(groupsValue)
      ? groupsValue.filter((group): group is string => typeof group === 'string')
      : typeof groupsValue === 'string'
        ? [groupsValue]
        : [];
    const scopes = scopesOfGroups(settings.roles, groups);
    // The provider's word now, for the person's other sessions too: a group it no longer gives them is gone from
    // each (a session left with none ends). The provider's groups, not those with a role here: a process started
    // before a role was given to a group (a rolling restart) must not take that group from the sessions of others.
    // A provider that sends no groups claim says the person has none (some leave an empty claim out).
    const narrowed = await sessions.narrowToGroups(personId, issuerOfRecord(settings.issuer), groups);
    if (narrowed > 0)
      deps.logger.info({ personId, narrowed }, 'console: a sign-in narrowed the person’s other sessions');
    if (scopes.size === 0) {
      // Refused, and audited under who they are.
      setActor(res.locals, { kind: 'person', name: personName, scopes });
      deps.logger.warn(
        { person: personName, groups },
        'console: signed in at the provider, but no group of theirs has a console role',
      );
      sendConsolePage(res, 403, {
        title: 'No access',
        body: notice(
          `${shownPersonName(displayName)}: your account has no role in this console (CONSOLE_OIDC_ROLES). Ask your administrator.`,
          'error',
        ),
      });
      return;
    }
    if (signedOutAt) await sessions.forgetSignOut(personId, signedOutAt);
    await signedIn(
      req,
      res,
      { personId, personName, via: 'oidc', scopes },
      deps.grants.ofGroups(groups),
      started.returnTo,
      { signInState: state, loginAuthTime: authTime },
    );
  });

  add(routes.signOut, async (_req, res) => {
    // A live session, or this browser's own that had ended by time (the person comes back to a desk and signs out):
    // either way every session of the person ends, in every browser.
    const live = consoleSessionOf(res);
    const person = live ?? endedSessionOf(res);
    if (person && !live) {
      // Audited under whose sessions it ends (with no scope: the session is over), as a live one's sign-out is.
      setActor(res.locals, {
        kind: person.via === 'key' ? 'key' : 'person',
        name: person.personName,
        scopes: new Set(),
      });
    }
    if (person) {
      const ended = await sessions.endEverySessionOf(person.personId, { remember: person.via === 'oidc' });
      deps.logger.info({ person: person.personId, sessions: ended }, 'console: signed out everywhere');
    }
    clearCookie(res, cookies.session, cookieOptions);
    // Until someone signs in again here, a sign-in through the provider asks it for a fresh login (a shared desk). Lax:
    // the start is also a person's click on a link from another site (the provider's app list), which a Strict cookie
    // would not come with.
    setCookie(res, cookies.signedOut, SIGNED_OUT, { ...cookieOptions, sameSite: 'Lax', maxAgeSeconds: 30 * 24 * 3600 });
    res.redirect(303, `${CONSOLE_PATH}/sign-in`);
  });
}
