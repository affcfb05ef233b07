// Standalone login through the connect service (OAuth 2.0 authorization code with one-time
// password): /connect/start spends a login token (an ops login URL's or a partner-signed one: the
// only sources of a partner user id), stores a single-use state, sets it in a cookie and redirects
// to the wallet's login page; /connect/callback checks the state against that cookie, exchanges the
// code and stores the link's tokens, never moving a link that belongs to another partner user.
import { LOST_CONNECTION_RETRY_AFTER_SECONDS, lostConnectionOf, overloadOf } from '../../lib/admission.ts';
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Router } from 'express';
import { type ErrorRequestHandler, type Request, type Response } from 'express';
import { z } from 'zod';
import type { Database } from '../../lib/database.ts';
import { LinkOwnedError, LinkUnlinkedSinceError, saveLinkWithTokens } from '../../links/link-record.ts';
import { isEmbeddedPartnerUserId } from '../../domain/link.ts';
import { readLoginToken, spendLoginGrant, type LoginRefusal } from '../../links/login-grants.ts';
import type { Logger } from '../../lib/logger.ts';
import { STANDALONE_REFRESH_LIFETIME_MS } from '../../links/token-expiry.ts';
import type { TokenStore } from '../../links/token-store.ts';
import { isCredentialsRefusal, isWalletError, retryDelayOf, type WalletClient } from '../../wallet/index.ts';
import { clientErrorOf } from '../http/client-errors.ts';
import { pageCsp, renderPage, type PageContent } from './connect-pages.ts';
import { limitRequests, rateLimitedPageAnswer, type RateLimiter } from '../http/rate-limit.ts';
import { refuseHead, routesOn, strictRouter } from '../http/route-registration.ts';
import {
  defineRoute,
  header,
  headRefusedAnswers,
  htmlAnswer,
  redirectAnswer,
  type AnyRouteSpec,
} from '../http/route-spec.ts';

export const LOGIN_STATE_TTL_MS = 10 * 60_000;

export interface ConnectDependencies {
  database: Database;
  tokens: TokenStore;
  wallet: Pick<WalletClient, 'authorizeUrl' | 'exchangeCode' | 'getProfile'>;
  logger: Logger;
  /** Where to send the user after a successful link (with ?linkId=…); absent: a success page. */
  returnUrl?: string | undefined;
  /** Requests per client address (PUBLIC_RATE_LIMIT_PER_MINUTE); absent: unlimited. */
  rateLimiter?: RateLimiter;
  /** LOGIN_SIGNING_KEY: verifies partner-signed login tokens; absent: only ops login URLs work. */
  loginSigningKey?: Buffer | undefined;
  /** true: the login cookie is Secure (PUBLIC_URL is https); absent: Secure when the request came over HTTPS. */
  secureCookies?: boolean | undefined;
  now?: () => number;
}

/** The cookie that binds a login's state to the browser that started it. */
export const LOGIN_COOKIE = 'walletflow_login';

const printable = (max: number) =>
  z.string().regex(new RegExp(`^[\\x21-\\x7e]{1,${max}}$`), `must be 1 to ${max} printable ASCII characters`);

/**
 * GET /connect/start: a login token (contract-decisions section 12). A bare partnerUserId is
 * refused: the browser's query string never says who is logging in.
 */
export const startQuerySchema = z
  .object({
    login: z
      .string({ error: 'is required: open the login link the partner app gave you' })
      .regex(/^[\x21-\x7e]{1,4096}$/, 'must be a login token'),
    partnerUserId: z.never({ error: 'is not accepted: a login starts from a login link' }).optional(),
  })
  .loose();

/** GET /connect/callback: what the connect service sends back (a code, or an OAuth error). */
export const callbackQuerySchema = z.object({
  state: printable(512).optional(),
  code: printable(2048).optional(),
  error: z.string().max(200).optional(),
  error_description: z.string().max(2000).optional(),
  // Stored (the masked user id) or compared: printable text only, never NUL or a lone surrogate.
  userId: z
    .string()
    .regex(/^[\x20-\x7e]{0,64}$/)
    .optional(),
  profileId: z
    .string()
    .regex(/^[\x21-\x7e]{0,64}$/)
    .optional(),
});

const failurePage = htmlAnswer('an unexpected failure (logged)');
/** Too many logins at once, or the database's connection lost for a moment: nothing to do but start again. */
const busyPage = htmlAnswer(
  'busy, or our records not reachable for a moment: start the login again after Retry-After',
  {
    'Retry-After': header('seconds to wait'),
  },
);

/** A HEAD of a route whose GET spends something single-use: answered 405, nothing spent. */
const headRefused = (path: '/connect/start' | '/connect/callback', operationId: string, what: string) =>
  defineRoute({
    method: 'head',
    path,
    operationId,
    tag: 'connect',
    summary: `A link preview, a scanner or a prefetch: never uses up ${what}`,
    access: 'public',
    responses: headRefusedAnswers('only a GET uses it'),
  });

const routes = {
  // Before the GETs, which Express would otherwise let answer HEAD too: a mail scanner's HEAD of a login link spent it.
  connectStartHead: headRefused('/connect/start', 'connectStartHead', 'a login token'),
  connectCallbackHead: headRefused('/connect/callback', 'connectCallbackHead', 'a login’s state'),
  connectStart: defineRoute({
    method: 'get',
    path: '/connect/start',
    operationId: 'connectStart',
    tag: 'connect',
    summary:
      'Start a standalone login from a login token: a single-use state (10 minutes) bound to a cookie, then the wallet’s login page',
    access: 'public',
    query: {
      schema: startQuerySchema,
      descriptions: {
        login:
          'a login token: from POST /ops/links/login-urls, or an HS256 JWT signed with LOGIN_SIGNING_KEY (`sub` = partner user id, `exp` ≤ 10 minutes, optional `mobile`); single use',
        partnerUserId: 'refused (400): the partner user id comes only from a login token',
      },
    },
    responses: {
      '302': redirectAnswer(
        'to the connect service’s login page; sets the `walletflow_login` cookie the callback requires',
      ),
      '400': htmlAnswer('no login token, or one that is not valid, used or expired; a bare partnerUserId'),
      '429': rateLimitedPageAnswer,
      '500': failurePage,
      '503': busyPage,
    },
  }),
  connectCallback: defineRoute({
    method: 'get',
    path: '/connect/callback',
    operationId: 'connectCallback',
    tag: 'connect',
    summary: 'Where the connect service returns the user: checks the state, exchanges the code, stores the link',
    access: 'public',
    query: { schema: callbackQuerySchema },
    responses: {
      '200': htmlAnswer('linked; the page names the link (no CONNECT_RETURN_URL)', {
        'X-Link-Id': header('the new link’s id'),
      }),
      '303': redirectAnswer('linked: to CONNECT_RETURN_URL with `?linkId=…&status=linked`'),
      '400': htmlAnswer(
        'not linked: a missing, unknown, used or expired state; the user cancelled; the wallet refused the code',
      ),
      '403': htmlAnswer(
        'not linked: the account that logged in does not have the mobile number the login was pinned to',
      ),
      '409': htmlAnswer(
        'not linked: the wallet is linked to another partner user, or its link was unlinked after this login began',
      ),
      '429': rateLimitedPageAnswer,
      '500': failurePage,
      '502': htmlAnswer('not linked: the wallet service did not answer in time'),
      '503': busyPage,
    },
  }),
};

/** The standalone login's routes, as the document lists them. */
export const connectRoutes: readonly AnyRouteSpec[] = Object.values(routes);

const hashState = (state: string) => createHash('sha256').update(state, 'utf8').digest('hex');

/** The login cookie's value, if the request carries one. */
function loginCookieOf(req: Request): string | undefined {
  for (const part of (req.get('cookie') ?? '').split(';')) {
    const [name, ...value] = part.trim().split('=');
    if (name === LOGIN_COOKIE) return value.join('=');
  }
  return undefined;
}

const sameText = (a: string, b: string) => {
  const left = createHash('sha256').update(a).digest();
  const right = createHash('sha256').update(b).digest();
  return timingSafeEqual(left, right);
};

const refusedLoginPages: Record<LoginRefusal, PageContent> = {
  invalid: {
    tone: 'error',
    title: 'This login link is not valid',
    paragraphs: ['Please start the login again from the partner app.'],
  },
  used: {
    tone: 'error',
    title: 'This login link has already been used',
    paragraphs: ['Each login link works once. Please start the login again from the partner app.'],
  },
  expired: {
    tone: 'error',
    title: 'This login link has expired',
    paragraphs: ['Login links work for 10 minutes. Please start the login again from the partner app.'],
  },
};
function page(res: Response, status: number, content: PageContent): void {
  const nonce = randomBytes(16).toString('base64');
  res.setHeader('Content-Security-Policy', pageCsp(nonce));
  res.status(status).type('html').setHeader('Cache-Control', 'no-store').send(renderPage(content, nonce));
}

/** OAuth error codes are [a-z_]; anything else is not echoed. */
const safeErrorCode = (value: string) => (/^[a-z_]{1,64}$/.test(value) ? value : 'invalid_error');

const errorExplanations: Record<string, string> = {
  login_required: 'The wallet login was not completed, so your wallet is not linked.',
  access_denied: 'You cancelled the wallet login, so your wallet is not linked.',
};

/** When a login refused for our own client credentials (CONNECT_CLIENT_SECRET) may be tried again. */
const CREDENTIALS_REFUSED_RETRY_AFTER_SECONDS = 300;

export function connectRouter(deps: ConnectDependencies): Router {
  const router = strictRouter();
  const add = routesOn(router);
  const now = deps.now ?? Date.now;

  if (deps.rateLimiter) {
    router.use(
      '/connect',
      limitRequests(deps.rateLimiter, (_req, res, retryAfterSeconds) =>
        page(res, 429, {
          tone: 'error',
          title: 'Too many attempts',
          paragraphs: [`Please wait ${retryAfterSeconds} second${retryAfterSeconds === 1 ? '' : 's'} and try again.`],
        }),
      ),
    );
  }

  for (const head of [routes.connectStartHead, routes.connectCallbackHead]) add(head, refuseHead);

  add(routes.connectStart, async (req, res) => {
    const query = startQuerySchema.safeParse(req.query);
    if (!query.success) {
      page(res, 400, {
        tone: 'error',
        title: 'This login link is not valid',
        paragraphs: query.error.issues.map((issue) => `${issue.path.join('.')} ${issue.message}.`),
      });
      return;
    }
    // The token read first, without the database (a forged one costs no statement); then the link spent with the login
    // under way stored, in one transaction: a refusal in between (a connection refused under load: 503, "start the
    // login again") leaves the link unspent for that try.
    const read = await readLoginToken(query.data.login, { signingKey: deps.loginSigningKey, now: now() });
    const state = randomBytes(32).toString('base64url');
    const grant =
      read.kind === 'refused'
        ? read.refusal
        : await deps.database.$transaction(async (tx) => {
            const spent = await spendLoginGrant(tx, read, { now: now() });
            if (!spent.ok) return spent;
            await tx.loginState.create({
              data: {
                stateHash: hashState(state),
                partnerUserId: spent.partnerUserId,
                mobile: spent.mobile ?? null,
                expiresAt: new Date(now() + LOGIN_STATE_TTL_MS),
              },
            });
            return spent;
          });
    if (!grant.ok) {
      deps.logger.warn({ reason: grant.reason }, 'connect start with an unusable login token');
      page(res, 400, refusedLoginPages[grant.reason]);
      return;
    }
    // The callback must come back to this browser: the state is also its cookie (HttpOnly; Lax is
    // sent on the wallet's top-level redirect back to us).
    const cookie = [
      `${LOGIN_COOKIE}=${state}`,
      'Path=/connect',
      `Max-Age=${LOGIN_STATE_TTL_MS / 1000}`,
      'HttpOnly',
      'SameSite=Lax',
    ];
    if (deps.secureCookies ?? req.secure) cookie.push('Secure');
    res.append('Set-Cookie', cookie.join('; '));
    res.setHeader('Cache-Control', 'no-store');
    res.redirect(302, deps.wallet.authorizeUrl({ ...(grant.mobile ? { mobile: grant.mobile } : {}), state }));
  });

  /** One mobile number however it is written (+63 917…, 0917…): the last 10 digits. */
  const sameMobile = (a: string, b: string) => a.replace(/\D/g, '').slice(-10) === b.replace(/\D/g, '').slice(-10);

  add(routes.connectCallback, async (req, res) => {
    const query = callbackQuerySchema.safeParse(req.query);
    if (!query.success || !query.data.state) {
      page(res, 400, {
        tone: 'error',
        title: 'This login cannot be completed',
        paragraphs: ['The answer from the wallet is missing its login reference. Please start the login again.'],
      });
      return;
    }
    // A state that did not start in this browser (a login page forwarded to someone else) is not
    // spent: it stays usable by the browser that holds its cookie, until it expires.
    const cookieState = loginCookieOf(req);
    if (!cookieState || !sameText(cookieState, query.data.state)) {
      deps.logger.warn(
        { cookie: cookieState ? 'other' : 'missing' },
        'connect callback from a browser that did not start the login',
      );
      page(res, 400, {
        tone: 'error',
        title: 'This login cannot be completed here',
        paragraphs: [
          'This login was started in another browser. Please start the login again from the partner app, in this browser.',
        ],
      });
      return;
    }
    res.append('Set-Cookie', `${LOGIN_COOKIE}=; Path=/connect; Max-Age=0; HttpOnly; SameSite=Lax`);
    const stateHash = hashState(query.data.state);
    // Consume the state atomically: exactly one callback can win it.
    const consumed = await deps.database.loginState.updateMany({
      where: { stateHash, consumedAt: null, expiresAt: { gt: new Date(now()) } },
      data: { consumedAt: new Date(now()), outcome: 'CALLBACK' },
    });
    if (consumed.count !== 1) {
      const known = await deps.database.loginState.findUnique({ where: { stateHash } });
      const reason = !known ? 'unknown' : known.consumedAt ? 'used' : 'expired';
      deps.logger.warn({ reason }, 'connect callback with an unusable state');
      page(res, 400, {
        tone: 'error',
        title: reason === 'expired' ? 'This login has expired' : 'This login cannot be completed',
        paragraphs: [
          reason === 'used'
            ? 'This login was already completed or abandoned. Please start the login again.'
            : reason === 'expired'
              ? 'Logins must be completed within 10 minutes. Please start the login again.'
              : 'We did not start this login. Please start the login again from the partner app.',
        ],
      });
      return;
    }
    const login = await deps.database.loginState.findUniqueOrThrow({ where: { stateHash } });
    const partnerUserId = login.partnerUserId;
    /** A login that links nothing: its state's outcome (`ERROR:<what>`) and its LOGIN_FAILED event, together. */
    const linkedNothing = (what: string, detail: string) =>
      deps.database.$transaction([
        deps.database.loginState.update({ where: { stateHash }, data: { outcome: `ERROR:${what}`.slice(0, 64) } }),
        deps.database.linkEvent.create({ data: { partnerUserId, type: 'LOGIN_FAILED', detail: detail.slice(0, 500) } }),
      ]);

    if (query.data.error !== undefined) {
      const code = safeErrorCode(query.data.error);
      await linkedNothing(code, code);
      page(res, 400, {
        tone: 'error',
        title: 'Your wallet was not linked',
        paragraphs: [
          errorExplanations[code] ?? `The wallet login failed (${code}).`,
          'You can start the login again at any time.',
        ],
      });
      return;
    }
    if (!query.data.code) {
      await deps.database.loginState.update({ where: { stateHash }, data: { outcome: 'ERROR:missing_code' } });
      page(res, 400, {
        tone: 'error',
        title: 'Your wallet was not linked',
        paragraphs: ['The wallet did not send a login code. Please start the login again.'],
      });
      return;
    }
    // A login begun for an embedded-app user's id before such a login was refused (domain/link.ts): its code is not
    // exchanged (no tokens issued to drop), and nothing is linked.
    if (isEmbeddedPartnerUserId(partnerUserId)) {
      deps.logger.warn('connect login refused: its partner user id is an embedded-app user’s (wallet:…)');
      await linkedNothing(
        'reserved_id',
        'the partner user id is an embedded-app user’s (wallet:…), which no standalone login binds',
      );
      page(res, 400, {
        tone: 'error',
        title: 'Your wallet was not linked',
        paragraphs: ['This login cannot link a wallet. Please start the login again from the partner app.'],
      });
      return;
    }

    try {
      const exchanged = await deps.wallet.exchangeCode(query.data.code);
      const tokens = exchanged.data;
      // The profile, not the browser's query string, says whose tokens these are.
      const profile = await deps.wallet.getProfile(tokens.accessToken);
      const profileId = profile.data.profileId;
      if (query.data.profileId && query.data.profileId !== profileId) {
        await deps.database.linkEvent.create({
          data: { partnerUserId, type: 'LOGIN_FAILED', detail: 'profileId mismatch' },
        });
        page(res, 400, {
          tone: 'error',
          title: 'Your wallet was not linked',
          paragraphs: ['The login answer did not match the wallet account. Please start again.'],
        });
        return;
      }
      // A login pinned to a mobile number links only the account that has it: the
      // wallet's login page only pre-fills the number, and anyone can type another.
      if (login.mobile !== null) {
        const shown = (profile.data.contact ?? [])
          .filter((contact) => contact.type === 'MSISDN' || contact.type === 'MSISD')
          .map((contact) => contact.value);
        if (!shown.some((mobile) => sameMobile(mobile, login.mobile!))) {
          const detail =
            shown.length === 0
              ? 'the login was pinned to a mobile number the wallet did not show (no contact scope)'
              : "the account that logged in does not have the login's mobile number";
          await linkedNothing('mobile_mismatch', detail);
          page(res, 403, {
            tone: 'error',
            title: 'Your wallet was not linked',
            paragraphs: [
              `This login was meant for the wallet account with the mobile number ending ${login.mobile.slice(-4)}, and another account logged in. Nothing was linked.`,
              'Please start the login again and log in with that account.',
            ],
          });
          return;
        }
      }
      const issuedAt = now();
      const { linkId } = await saveLinkWithTokens(deps.database, deps.tokens, {
        partnerUserId,
        profileId,
        maskedUserId: query.data.userId ?? null,
        kind: 'STANDALONE',
        scopes: tokens.scope ? tokens.scope.split(' ').filter(Boolean) : [],
        requestReferenceNo: exchanged.requestReferenceNo,
        // A link staff unlinked after this login began stays unlinked: an older login never undoes a revoke.
        loginBegunAt: login.createdAt,
        tokens: {
          accessToken: tokens.accessToken,
          refreshToken: tokens.refreshToken ?? '',
          accessTokenExpiresAt: tokens.expiresAt,
          refreshTokenExpiresAt: new Date(issuedAt + STANDALONE_REFRESH_LIFETIME_MS),
        },
      });
      await deps.database.loginState.update({ where: { stateHash }, data: { outcome: 'LINKED' } });
      if (deps.returnUrl) {
        const target = new URL(deps.returnUrl);
        target.searchParams.set('linkId', linkId);
        target.searchParams.set('status', 'linked');
        res.redirect(303, target.toString());
        return;
      }
      res.setHeader('X-Link-Id', linkId);
      page(res, 200, {
        tone: 'success',
        title: 'Your wallet is linked',
        paragraphs: [
          query.data.userId
            ? `Wallet account ${query.data.userId} is now connected.`
            : 'Your wallet account is now connected.',
          `Link reference: ${linkId}`,
          'You can close this page.',
        ],
      });
    } catch (error) {
      if (error instanceof LinkUnlinkedSinceError) {
        deps.logger.warn({ linkId: error.linkId }, 'connect login refused: the link was unlinked after it began');
        await linkedNothing('unlinked_since', `the link was unlinked after this login began (link ${error.linkId})`);
        page(res, 409, {
          tone: 'error',
          title: 'Your wallet was not linked',
          paragraphs: [
            'This wallet was unlinked here after this login began, so it was not linked again.',
            'If you want it linked, please start a new login.',
          ],
        });
        return;
      }
      if (error instanceof LinkOwnedError) {
        deps.logger.warn(
          { linkId: error.linkId },
          'connect login refused: the wallet is linked to another partner user',
        );
        await linkedNothing('linked_elsewhere', `the wallet is linked to another partner user (link ${error.linkId})`);
        page(res, 409, {
          tone: 'error',
          title: 'This wallet is already linked',
          paragraphs: [
            'This wallet account is already linked to another account here, so it was not linked again.',
            'If that is not right, contact support: only our staff can move a wallet between accounts.',
          ],
        });
        return;
      }
      // Too many requests at once (docs/architecture.md, admission), or the database connection lost: answered 503
      // with Retry-After by onError below (nothing could be written here either).
      if (overloadOf(error) || lostConnectionOf(error)) throw error;
      // The wallet asked us to slow down (its 429): nothing was linked, and the person is told when to start again.
      const rateLimited = isWalletError(error) && error.httpStatus === 429;
      // The wallet refused this partner's own credentials (the code exchange's client secret, the profile's client
      // token): no fault of the person's or of this login, and not theirs to mend by starting again at once.
      const ourCredentials = isWalletError(error) && isCredentialsRefusal(error);
      const code = rateLimited ? 'WALLET_RATE_LIMITED' : isWalletError(error) ? error.code : 'INTERNAL';
      (ourCredentials ? deps.logger.error : deps.logger.warn).call(
        deps.logger,
        { code, requestReferenceNo: isWalletError(error) ? error.requestReferenceNo : undefined },
        ourCredentials
          ? "connect callback failed: the wallet refused this partner's client credentials (check CONNECT_CLIENT_ID and CONNECT_CLIENT_SECRET)"
          : 'connect callback failed',
      );
      await linkedNothing(code, `code exchange: ${code}`);
      if (rateLimited) {
        const seconds = Math.ceil((retryDelayOf(error) ?? 5000) / 1000);
        res.setHeader('Retry-After', String(seconds));
        page(res, 503, {
          tone: 'error',
          title: 'Your wallet was not linked',
          paragraphs: [
            `The wallet service is busy just now, and nothing was linked. Please start the login again in ${seconds} seconds.`,
          ],
        });
        return;
      }
      if (ourCredentials) {
        // Not soon: a person must mend the configuration (the route's 503 says when to come back).
        res.setHeader('Retry-After', String(CREDENTIALS_REFUSED_RETRY_AFTER_SECONDS));
        page(res, 503, {
          tone: 'error',
          title: 'Your wallet was not linked',
          paragraphs: [
            'We could not complete the login with the wallet just now, for a reason on our side, and nothing was linked. Please try again later; if it goes on, contact support.',
          ],
        });
        return;
      }
      // Not the wallet's answer (a fault of ours): recorded above, and answered by the router's error handler, a 500
      // logged as one, never the wallet blamed for it.
      if (!isWalletError(error)) throw error;
      const refused = error.outcome === 'rejected';
      page(res, refused ? 400 : 502, {
        tone: 'error',
        title: 'Your wallet was not linked',
        paragraphs: [
          refused
            ? 'The wallet refused this login (it may have expired or been used already). Please start the login again.'
            : 'The wallet service did not answer in time. Please start the login again in a moment.',
        ],
      });
    }
  });

  // Under /connect a page, never a problem document: unknown paths and methods, requests the
  // framework could not read (their 4xx), and failures (500, logged).
  router.use('/connect', (_req, res) => {
    page(res, 404, {
      tone: 'error',
      title: 'Not found',
      paragraphs: ['There is no such page. Please start the login again from the partner app.'],
    });
  });
  const onError: ErrorRequestHandler = (error: unknown, req, res, _next) => {
    const busy = overloadOf(error);
    if (busy) {
      res.setHeader('Retry-After', String(busy.retryAfterSeconds));
      page(res, 503, {
        tone: 'error',
        title: 'Busy right now',
        paragraphs: ['Many people are logging in at the same time. Please start the login again in a few seconds.'],
      });
      return;
    }
    // The database connection was lost mid-statement (a failover, a restart): a login started again is always safe.
    const lost = lostConnectionOf(error);
    if (lost) {
      deps.logger.warn(
        { method: req.method, path: req.path, reason: lost },
        'connect route lost its database connection',
      );
      res.setHeader('Retry-After', String(LOST_CONNECTION_RETRY_AFTER_SECONDS));
      page(res, 503, {
        tone: 'error',
        title: 'Not available just now',
        paragraphs: ['We could not reach our records for a moment. Please start the login again in a few seconds.'],
      });
      return;
    }
    const refused = clientErrorOf(error);
    if (!refused) deps.logger.error({ err: error, method: req.method, path: req.path }, 'connect route failed');
    page(res, refused?.status ?? 500, {
      tone: 'error',
      title: refused ? 'This login link is not valid' : 'Something went wrong',
      paragraphs: [refused ? 'Please start the login again from the partner app.' : 'Please try again in a moment.'],
    });
  };
  router.use('/connect', onError);
  return router;
}
