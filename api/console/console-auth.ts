// Who is signed in to the console, on every request under /console: the session cookie (HttpOnly,
// SameSite=Strict; where PUBLIC_URL is https `__Host-`, Secure and Path=/, else Path=/console)
// names a server-side session (access/console-sessions.ts), which holds only while what its sign-in rests on holds
// (console-grants.ts: the ops key, or the person's groups), and whose person becomes the
// request's actor (api/http/actor.ts), so the same scope checks as the ops API apply, route by
// route. Reading a session is not using it: only what a person does counts as their act (a page
// they navigate to, by Fetch Metadata; a form sent with its CSRF token: countAsUse, on every
// console route but the streams a page opens by itself). Every
// state-changing request must carry the session's CSRF token (the synchronizer pattern;
// SameSite=Strict and the Origin check are a second and third line). A request without a live
// session goes to the sign-in page; a stream without one is told it ended.
import type { Request, RequestHandler, Response, Router } from 'express';
import { scopesNowOf, setActor, setScopesNow } from '../http/actor.ts';
import { refuseHead, routesOn, type AddRoute } from '../http/route-registration.ts';
import type { AnyRouteSpec } from '../http/route-spec.ts';
import {
  sameToken,
  type ConsoleSessions,
  type ConsoleSessionView,
  type EndedConsoleSession,
} from '../../access/console-sessions.ts';
import type { ConsoleGrants } from './console-grants.ts';
import type { OpsScope } from '../../lib/ops-keys.ts';
import { CONSOLE_PATH, notice, sendConsolePage, signInAddress, type SignedInPerson } from './console-layout.ts';
import { sendEndedStream } from './live-events.ts';

/**
 * The console's cookies' names: the session's; the sign-in form's own CSRF token (double submit:
 * before any session exists); the state of an OpenID Connect sign-in and its PKCE verifier
 * (`<state>.<verifier>`), bound to the browser that started it. Where the cookies are Secure
 * (PUBLIC_URL is https: production) each name has the `__Host-` prefix, so a browser takes such a
 * cookie only from this host itself, Secure, with Path=/ and no Domain: no page of another host (a
 * sibling subdomain's, over https too) can plant one. (`__Secure-` kept out only http pages.)
 */
const HOST_PREFIX = '__Host-';

export interface ConsoleCookieNames {
  session: string;
  preSignIn: string;
  signInState: string;
  /** Set by a sign-out: the next sign-in through the provider from this browser asks it for a fresh login. */
  signedOut: string;
}

export function consoleCookieNames(secure: boolean): ConsoleCookieNames {
  const prefix = secure ? HOST_PREFIX : '';
  return {
    session: `${prefix}walletflow_console`,
    preSignIn: `${prefix}walletflow_console_pre`,
    signInState: `${prefix}walletflow_console_state`,
    signedOut: `${prefix}walletflow_console_out`,
  };
}

/**
 * Values read of one cookie name, at most: a browser sends several only when another site of the domain planted some.
 */
const MAX_VALUES_OF_A_NAME = 4;

/**
 * Every well-formed value the request carries under `name`, in the order sent (distinct). A
 * browser sends several under one name when another site of the domain set one for the parent
 * domain or a longer path (only where the name has no `__Host-` prefix: on plain http); which is
 * ours is for the caller to find (never the first by default: the browser puts a longer path
 * first). More than MAX_VALUES_OF_A_NAME: none. Planted ones sent first could otherwise push the
 * browser's own out of what is read, and leave a planted live session the only one.
 */
export function cookieValuesOf(req: Request, name: string): string[] {
  const values: string[] = [];
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const [key, ...rest] = part.trim().split('=');
    if (key !== name) continue;
    const value = rest.join('=');
    if (!/^[A-Za-z0-9_.-]{16,200}$/.test(value) || values.includes(value)) continue;
    if (values.length === MAX_VALUES_OF_A_NAME) return [];
    values.push(value);
  }
  return values;
}

export interface CookieOptions {
  secure: boolean;
  path?: string;
  sameSite?: 'Strict' | 'Lax';
  maxAgeSeconds?: number;
}

export function setCookie(res: Response, name: string, value: string, options: CookieOptions): void {
  const attributes = [
    `${name}=${value}`,
    // A `__Host-` cookie is taken only with Path=/.
    `Path=${name.startsWith(HOST_PREFIX) ? '/' : (options.path ?? CONSOLE_PATH)}`,
    'HttpOnly',
    `SameSite=${options.sameSite ?? 'Strict'}`,
  ];
  if (options.maxAgeSeconds !== undefined) attributes.push(`Max-Age=${options.maxAgeSeconds}`);
  if (options.secure) attributes.push('Secure');
  res.append('Set-Cookie', attributes.join('; '));
}

export const clearCookie = (res: Response, name: string, options: CookieOptions): void =>
  setCookie(res, name, '', { ...options, maxAgeSeconds: 0 });

const SESSION = 'consoleSession';
const ENDED = 'consoleSessionEnded';
const TOUCH = 'consoleSessionTouch';
const COUNTED = 'consoleSessionCounted';

/**
 * What the request's session may do now (a long answer, a pushed update, asks again; never counted
 * as use): its scopes now, or null when it holds no more (signed out, idle, past its lifetime, its
 * sign-in no longer holding).
 */
export function consoleScopesNow(res: Response): Promise<ReadonlySet<OpsScope> | null> {
  return scopesNowOf(res.locals);
}

/** The request's console session (set by `readConsoleSession`), if one is live: its scopes are those it may use now. */
export function consoleSessionOf(res: Response): ConsoleSessionView | undefined {
  return res.locals[SESSION] as ConsoleSessionView | undefined;
}

/**
 * Whose session this browser's cookie named, when it was read now and found over: ended by time (idle, past its
 * lifetime), or on a sign-in that no longer holds. A sign-out from it still signs that person out everywhere.
 */
export function endedSessionOf(res: Response): EndedConsoleSession | undefined {
  return res.locals[ENDED] as EndedConsoleSession | undefined;
}

/** Whether this request counted as the person's act (a stream must not: live-region.ts checks). */
export const countedAsUse = (res: Response): boolean => res.locals[COUNTED] === true;

/** The signed-in person as pages show them; only after `requireSignedIn`. */
export function personOf(res: Response): SignedInPerson {
  const session = consoleSessionOf(res);
  if (!session) throw new Error('personOf: no console session (requireSignedIn did not run)');
  return { name: session.personName, scopes: session.scopes, csrfToken: session.csrfToken };
}

/**
 * The scopes a session may use now, by this process's settings (null: none, its sign-in holds no more). Found fewer
 * than stored by settings read after the person signed in (this process started since), they are stored so, for
 * good: a process not yet restarted with them, or a setting put back later, gives nothing back. A session signed in
 * after this process read its settings may rest on newer, wider ones (a key added or given a new secret on a process
 * started later, in a rolling restart): it is refused here, for this request only.
 */
async function scopesLeft(
  sessions: Pick<ConsoleSessions, 'narrow'>,
  grants: ConsoleGrants,
  settingsReadAt: () => Promise<Date | null>,
  session: ConsoleSessionView,
): Promise<ReadonlySet<OpsScope> | null> {
  const scopes = grants.scopesNow(session);
  if (!scopes || scopes.size < session.scopes.size) {
    const readAt = await settingsReadAt();
    if (readAt !== null && session.signedInAt < readAt) await sessions.narrow(session.id, scopes);
  }
  return scopes;
}

/**
 * When this process read its settings (OPS_API_KEYS, CONSOLE_OIDC_*: when it started), by the database's clock, as
 * sessions' sign-ins are kept; null while the database cannot say. Its start stands for its settings being at least
 * as new as a sign-in before it: a process of an older release started during a rollout, after people signed in on
 * the new one with a key only the new one has, ends those sessions for good (they sign in again: the safe way).
 */
function settingsReadAtOf(sessions: Pick<ConsoleSessions, 'databaseTime'>) {
  // A monotonic clock: a step of the process's wall clock does not move when it started.
  const startedAt = performance.now();
  let readAt: Date | null = null;
  const read = async (): Promise<Date | null> => {
    if (readAt) return readAt;
    // Asked twice: a process's first question may wait seconds for a connection to be opened (under load), and where
    // in that wait the clock was read is not known, so its answer may date the start seconds early (a session signed
    // in just before it then counts as after it, refused only per request) or late (one signed in just after it, on a
    // process with newer settings, ended for good). The second, on the connection then open, is answered at once: its
    // clock less the time since the start is the start, early by no more than that answer's way back.
    try {
      await sessions.databaseTime();
      const now = await sessions.databaseTime();
      readAt = new Date(now.getTime() - (performance.now() - startedAt));
    } catch {
      return null;
    }
    return readAt;
  };
  // Asked at once, as the process starts (asked again at a narrowing while the database could not say).
  void read();
  return read;
}

/**
 * Reads the session cookie: a live session whose sign-in still holds becomes the request's actor,
 * with the scopes it may use now. Where several cookies share the session's name (one planted by a
 * sibling subdomain), each is read: one live session among them is taken; two or more (someone
 * else's beside this browser's) are none, never a guess between two people. A request another
 * site's page made (sentByAnotherPage) has none, whatever cookie the browser sent with it. Nothing
 * here counts as the person's act.
 */
export function readConsoleSession(
  sessions: ConsoleSessions,
  grants: ConsoleGrants,
  names: ConsoleCookieNames,
  publicUrl?: string,
): RequestHandler {
  const settingsReadAt = settingsReadAtOf(sessions);
  return async (req, res, next) => {
    if (sentByAnotherPage(req, publicUrl)) {
      next();
      return;
    }
    const live: Array<{ value: string; stored: ConsoleSessionView; scopes: ReadonlySet<OpsScope> }> = [];
    const ended: EndedConsoleSession[] = [];
    const values = cookieValuesOf(req, names.session);
    for (const value of values) {
      const { session: stored, ended: endedNow } = await sessions.readOrEnded(value);
      const scopes = stored ? await scopesLeft(sessions, grants, settingsReadAt, stored) : null;
      if (stored && scopes) live.push({ value, stored, scopes });
      // Ended by time, or live by time on a sign-in that no longer holds (the key's secret changed since, the
      // provider's groups no longer give a role): over either way, for good, and whose it was is known.
      else if (stored) ended.push({ personId: stored.personId, personName: stored.personName, via: stored.via });
      if (endedNow) ended.push(endedNow);
    }
    // The browser's one session, over: whose it was, for a sign-out (never a guess between two).
    if (values.length === 1 && ended.length === 1) res.locals[ENDED] = ended[0];
    const only = live.length === 1 ? live[0] : undefined;
    if (only) {
      const { value, stored, scopes } = only;
      const session: ConsoleSessionView = { ...stored, scopes };
      res.locals[SESSION] = session;
      setScopesNow(res.locals, async () => {
        const again = await sessions.read(value);
        return again ? scopesLeft(sessions, grants, settingsReadAt, again) : null;
      });
      res.locals[TOUCH] = () => sessions.touch(stored);
      setActor(res.locals, { kind: session.via === 'key' ? 'key' : 'person', name: session.personName, scopes });
    }
    next();
  };
}

const CSRF_PASSED = 'consoleCsrfPassed';

/**
 * Whether another site's page made the request, as the browser says (Fetch Metadata: not `same-origin` and not `none`;
 * without it, an Origin that is not ours), other than a person's own GET navigation from it (a click on a link on a
 * sibling subdomain's page, which SameSite=Strict lets carry the cookie: `Sec-Fetch-User: ?1`). Such a request never
 * acts under the person's session: a sibling's page could otherwise have their browser send writes (refused for their
 * form token, yet audited under their name and past the budget of unnamed refusals), or open streams, by an image or
 * by navigating a window of its own again and again, that end the person's own, or ask for exports, all in their
 * name. The console's own pages send only same-origin requests.
 */
export function sentByAnotherPage(req: Request, publicUrl: string | undefined): boolean {
  const site = req.get('sec-fetch-site');
  if (site !== undefined) {
    if (site === 'same-origin' || site === 'none') return false;
    return !(
      req.method === 'GET' &&
      req.get('sec-fetch-mode') === 'navigate' &&
      req.get('sec-fetch-dest') === 'document' &&
      req.get('sec-fetch-user') === '?1'
    );
  }
  const origin = req.get('origin');
  return origin !== undefined && origin !== ourOrigin(req, publicUrl);
}

/**
 * Whether a GET is a person's own navigation to a page, as the browser says it (Fetch Metadata):
 * a document navigated to (`Sec-Fetch-Mode: navigate`, `Sec-Fetch-Dest: document`) from a console
 * page or typed, a bookmark (`Sec-Fetch-Site: same-origin` or `none`), and not a prefetch or a
 * prerender (`Sec-Purpose`, `Purpose`, `X-Purpose`, `X-Moz`). Not: an image, a frame, a script's
 * fetch, a link from a sibling subdomain, a HEAD. A request without these headers is not one: every
 * browser the console supports (current ones) sends them; a script or an older browser's request
 * never keeps a session alive (docs/console.md).
 */
export function isPersonsNavigation(req: Request): boolean {
  if (req.method !== 'GET') return false;
  return (
    req.get('sec-fetch-mode') === 'navigate' &&
    req.get('sec-fetch-dest') === 'document' &&
    ['same-origin', 'none'].includes(req.get('sec-fetch-site') ?? '') &&
    !isSpeculative(req)
  );
}

/** A prefetch, a prerender or a link preview, as the browser says (`Sec-Purpose`, `Purpose`, `X-Purpose`, `X-Moz`). */
export function isSpeculative(req: Request): boolean {
  const purpose = [req.get('sec-purpose'), req.get('purpose'), req.get('x-purpose'), req.get('x-moz')]
    .filter((value) => value !== undefined)
    .join(' ');
  return /prefetch|prerender|preview/i.test(purpose);
}

/** The person acted (a page they navigated to, a form that passed its CSRF check): the idle time-out starts again. */
export async function personActed(res: Response): Promise<void> {
  const touch = res.locals[TOUCH] as (() => Promise<void>) | undefined;
  if (touch) await touch();
  res.locals[COUNTED] = true;
}

/**
 * What counts as a person's act, on every console route but the streams: a page they navigated to
 * (isPersonsNavigation), or a form sent with its session's CSRF token (requireCsrf passed it; a form
 * with a file counts once its own reader checked its token: `personActed`). Nothing else (a
 * prefetch, an image, a HEAD, a page's own requests) keeps a session alive.
 */
const countAsUse: RequestHandler = async (req, res, next) => {
  if (isPersonsNavigation(req) || (req.method === 'POST' && res.locals[CSRF_PASSED] === true)) await personActed(res);
  next();
};

/** Whether a route answers a stream the page opens by itself (Server-Sent Events): never the person's act. */
export const opensByItself = (spec: Pick<AnyRouteSpec, 'responses'>): boolean =>
  Object.values(spec.responses).some((answer) => answer.content !== undefined && 'text/event-stream' in answer.content);

/**
 * A HEAD of a stream is refused (405, `Allow: GET`): Express lets a GET's handler answer a HEAD, and a stream's would
 * hold one of the process's stream slots and read the database at every push for its whole life (Node drops what it
 * writes, so its client never fills), and end the person's oldest stream in their place.
 */
const refuseHeadOfStream: RequestHandler = (req, res, next) => {
  if (req.method === 'HEAD') refuseHead(req, res, next);
  else next();
};

/**
 * Adds console routes: each with its scope check first (routesOn), then, for the streams a page
 * opens by itself, the refusal of a HEAD, and for every other route, the count of the person's act.
 */
export const consoleRoutesOn = (router: Router): AddRoute =>
  routesOn(router, CONSOLE_PATH, (spec) => (opensByItself(spec) ? [refuseHeadOfStream] : [countAsUse]));

/** Paths reachable without a session: signing in, and the assets. */
const publicPaths = [/^\/sign-in(\/oidc)?$/, /^\/oidc\/callback$/];

/** Whether the request is for a path reachable without a session (signing in); such a route reads its own form. */
export const isPublicPath = (req: Request): boolean => publicPaths.some((path) => path.test(req.path));

/**
 * A sign-out whose session already ended (idle, past its lifetime) still signs out: it leaves the
 * browser's marker that makes the next sign-in ask the provider for a fresh login (sign-in.ts). Only
 * from a page of this console (Fetch Metadata, else an Origin of this host): another site's form
 * cannot clear a person's cookie. With a live session it needs the session's token like any write.
 */
const isSignOutWithoutSession = (req: Request, res: Response, publicUrl: string | undefined) =>
  req.method === 'POST' && req.path === '/sign-out' && !consoleSessionOf(res) && fromThisConsole(req, publicUrl);

/** A request a page of this console sent, as the browser says (Fetch Metadata, else an Origin that is ours). */
function fromThisConsole(req: Request, publicUrl: string | undefined): boolean {
  const site = req.get('sec-fetch-site');
  if (site !== undefined) return site === 'same-origin';
  return req.get('origin') === ourOrigin(req, publicUrl);
}

/**
 * Everything else needs a live session: a page asked for without one goes to the sign-in page
 * (and back here after it); a write without one is refused (401).
 */
export const requireSignedIn =
  (publicUrl: string | undefined): RequestHandler =>
  (req, res, next) => {
    if (isPublicPath(req) || consoleSessionOf(res) || isSignOutWithoutSession(req, res, publicUrl)) {
      next();
      return;
    }
    // A page's stream (EventSource asks for text/event-stream): told the session ended, so the browser stops asking and
    // the page says so.
    if (req.method === 'GET' && (req.get('accept') ?? '').includes('text/event-stream')) {
      sendEndedStream(res);
      return;
    }
    if (req.method === 'GET' || req.method === 'HEAD') {
      const returnTo = req.originalUrl.startsWith(CONSOLE_PATH) ? req.originalUrl : CONSOLE_PATH;
      res.redirect(303, signInAddress(returnTo));
      return;
    }
    sendConsolePage(res, 401, {
      title: 'Signed out',
      body: `${notice('Your session has ended: nothing was done. Sign in again.', 'error')}<p><a href="/console/sign-in">Sign in</a></p>`,
    });
  };

/** This console's origin: PUBLIC_URL's, else the request's own. */
const ourOrigin = (req: Request, publicUrl: string | undefined): string =>
  publicUrl ? new URL(publicUrl).origin : `${req.protocol}://${req.get('host') ?? ''}`;

/** The origin a browser names on a write must be ours (a third line behind the token and SameSite). */
function sameOrigin(req: Request, publicUrl: string | undefined): boolean {
  const origin = req.get('origin');
  return !origin || origin === ourOrigin(req, publicUrl);
}

/** The answer to a write without the session's CSRF token: 403, nothing done. */
export function sendCsrfRefusal(res: Response): void {
  sendConsolePage(res, 403, {
    title: 'Refused',
    body: notice(
      'This form was not sent from your console session (no valid CSRF token): nothing was done. Reload the page and try again.',
      'error',
    ),
  });
}

/**
 * Every state-changing request carries the CSRF token of its session (`_csrf` in the form) and, when
 * the browser says where it comes from, our origin: else 403 and nothing is done. The sign-in form
 * checks its own (pre-session) token. A form with a file (multipart/form-data) cannot be read here:
 * it is let through, once its origin is checked, only to the POST routes named in
 * `formsWithFiles` (full paths), whose handlers read it with `readUploadForm` (upload-form.ts),
 * which refuses it unless the token comes before the file. Anywhere else it has no token here and
 * is refused: the check fails closed.
 */
export function requireCsrf(publicUrl: string | undefined, formsWithFiles: readonly string[] = []): RequestHandler {
  return (req, res, next) => {
    if (
      req.method === 'GET' ||
      req.method === 'HEAD' ||
      isPublicPath(req) ||
      isSignOutWithoutSession(req, res, publicUrl)
    ) {
      next();
      return;
    }
    const session = consoleSessionOf(res);
    if (
      session &&
      req.method === 'POST' &&
      req.is('multipart/form-data') &&
      formsWithFiles.includes(`${req.baseUrl}${req.path}`) &&
      sameOrigin(req, publicUrl)
    ) {
      next();
      return;
    }
    const submitted =
      typeof (req.body as Record<string, unknown> | undefined)?._csrf === 'string'
        ? (req.body as Record<string, string>)._csrf
        : undefined;
    if (!session || !sameToken(session.csrfToken, submitted) || !sameOrigin(req, publicUrl)) {
      sendCsrfRefusal(res);
      return;
    }
    res.locals[CSRF_PASSED] = true;
    next();
  };
}

export { sameOrigin };
