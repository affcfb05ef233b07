// Ops routes for links: read a link (status, kind, scopes, token expiry; never tokens), read its
// wallet profile (fetched and decrypted on every request, by scope), and unlink it (its tokens are
// deleted; the link stays, UNLINKED, with its history); mint login URLs, the only way (with a
// partner-signed token) a standalone login learns which partner user it is for.
import { idSchema } from '../../domain/ids.ts';
import type { Router } from 'express';
import { z } from 'zod';
import {
  isUserTokenRejection,
  TokenRefreshBusy,
  TokenRefreshError,
  VaultError,
  type TokenVault,
} from '../../links/token-vault.ts';
import type { Database } from '../../lib/database.ts';
import { unlink } from '../../links/link-record.ts';
import type { TokenStore } from '../../links/token-store.ts';
import { isWalletError, profileByScope, retryDelayOf, type WalletClient } from '../../wallet/index.ts';
import { findLinks, linkProfileSchema, linkView, type LinkProfileView } from '../../links/link-view.ts';
import { loginUrlRequestSchema, mintLoginGrant } from '../../links/login-grants.ts';
import { sendProblem } from '../http/problem.ts';
import { refuseHead, routesOn, strictRouter } from '../http/route-registration.ts';
import {
  defineRoute,
  headRefusedAnswers,
  jsonAnswer,
  named,
  problemAnswer,
  retryAfterHeader,
  type AnyRouteSpec,
} from '../http/route-spec.ts';
import { validationProblem } from '../http/validation.ts';
import { opsKeyNameOf } from './ops-key.ts';
import { linkSchema } from '../../domain/link.ts';
import { malformedBodyCodes } from './ops-answers.ts';

/** Pre-signed identity document URLs are valid this long (interface): the answer says until when. */
const DOCUMENT_URL_LIFETIME_MS = 15 * 60_000;

/** A link id in a path: anything else is a bad request (400 INVALID_LINK_ID). */
export const linkIdSchema = idSchema;

/** 201 answer of POST /ops/links/login-urls: the URL to send the user to, single use. */
export const loginUrlSchema = z.object({ url: z.url(), expiresAt: z.iso.datetime() });

export interface OpsLinksDependencies {
  database: Database;
  tokens: TokenStore;
  /** PUBLIC_URL: where login URLs point; absent: the address this request came to. */
  publicUrl?: string | undefined;
  /** For GET /links/{linkId}/profile: the vault hands out (and refreshes) the link's user token. */
  profiles?: { vault: Pick<TokenVault, 'withUserToken'>; wallet: Pick<WalletClient, 'getProfile'>; now?: () => number };
}

/** GET /ops/links: find a user's links by exactly one of partnerUserId or profileId. */
export const linkSearchQuerySchema = z
  .object({
    partnerUserId: z
      .string()
      .regex(/^[\x21-\x7e]{1,128}$/, 'partnerUserId must be 1 to 128 printable characters')
      .optional(),
    profileId: z
      .string()
      .regex(/^[\x21-\x7e]{1,64}$/, 'profileId must be 1 to 64 printable characters')
      .optional(),
  })
  .strict()
  .refine(
    (query) => (query.partnerUserId === undefined) !== (query.profileId === undefined),
    'give exactly one of partnerUserId or profileId',
  );

export const linkListSchema = z.object({ items: z.array(linkSchema) });

const linkComponent = named('Link', linkSchema);
const linkIdParameter = {
  linkId: { schema: linkIdSchema, description: 'the link’s id (not a UUID: 400 `INVALID_LINK_ID`)' },
};
const notALinkId = problemAnswer('not a link id', ['INVALID_LINK_ID']);
const noSuchLink = problemAnswer('no such link', ['LINK_NOT_FOUND']);

const routes = {
  createLoginUrl: defineRoute({
    method: 'post',
    path: '/ops/links/login-urls',
    operationId: 'createLoginUrl',
    tag: 'links',
    summary:
      'A login URL for a partner user: single use, valid 10 minutes (scope accounts; the key’s name is recorded)',
    access: { opsScope: 'accounts' },
    body: {
      mediaType: 'application/json',
      schema: named('LoginUrlRequest', loginUrlRequestSchema),
      description: 'whose login, and optionally the mobile number the wallet’s login page is pinned to',
    },
    responses: {
      '201': jsonAnswer(named('LoginUrl', loginUrlSchema), 'the URL to send the user to'),
      '400': problemAnswer(
        'a malformed body, a partnerUserId of the embedded-app users’ wallet: namespace (wallet:{profileId}, which no standalone login binds), or a ledger account’s name (TREASURY, IN_FLIGHT, WALLET_CLEARING, MERCHANT_REVENUE, CAPITAL); nothing stored',
        ['VALIDATION_ERROR', ...malformedBodyCodes],
      ),
    },
  }),
  findLinks: defineRoute({
    method: 'get',
    path: '/ops/links',
    operationId: 'findLinks',
    tag: 'links',
    summary: 'A user’s links, by partner user id or by wallet profile id (exactly one)',
    access: { opsScope: 'read' },
    query: { schema: linkSearchQuerySchema },
    responses: {
      '200': jsonAnswer(named('LinkList', linkListSchema), 'the links, newest first (at most 100)'),
      '400': problemAnswer('neither or both of partnerUserId and profileId', ['VALIDATION_ERROR']),
    },
  }),
  getLink: defineRoute({
    method: 'get',
    path: '/ops/links/{linkId}',
    operationId: 'getLink',
    tag: 'links',
    summary: 'A link: status, kind, scopes and token expiry (never a token)',
    access: { opsScope: 'read' },
    params: linkIdParameter,
    responses: { '200': jsonAnswer(linkComponent, 'the link'), '400': notALinkId, '404': noSuchLink },
  }),
  unlink: defineRoute({
    method: 'delete',
    path: '/ops/links/{linkId}',
    operationId: 'unlink',
    tag: 'links',
    summary: 'Unlink: the tokens are deleted; the link stays, UNLINKED, with its history',
    access: { opsScope: 'accounts' },
    params: linkIdParameter,
    responses: { '200': jsonAnswer(linkComponent, 'the link, UNLINKED'), '400': notALinkId, '404': noSuchLink },
  }),
  // Before the GET, which Express would otherwise let answer HEAD too: a monitor's HEAD called the wallet (and could
  // refresh the user's tokens, or mark the link for a new login).
  getLinkProfileHead: defineRoute({
    method: 'head',
    path: '/ops/links/{linkId}/profile',
    operationId: 'headLinkProfile',
    tag: 'links',
    summary: 'A monitor or a link checker: never calls the wallet',
    access: { opsScope: 'read' },
    params: linkIdParameter,
    responses: headRefusedAnswers('only a GET reads the profile, from the wallet'),
  }),
  getLinkProfile: defineRoute({
    method: 'get',
    path: '/ops/links/{linkId}/profile',
    operationId: 'getLinkProfile',
    tag: 'links',
    summary: 'The user’s wallet profile by scope, fetched and decrypted on every request (never stored or cached)',
    access: { opsScope: 'read' },
    params: linkIdParameter,
    responses: {
      '200': jsonAnswer(named('LinkProfile', linkProfileSchema), 'the profile (`Cache-Control: no-store`)'),
      '400': notALinkId,
      '404': problemAnswer('no such link, or it has no tokens', ['LINK_NOT_FOUND']),
      '409': problemAnswer('the link was unlinked, or the user must log in again', [
        'LINK_UNLINKED',
        'REAUTH_REQUIRED',
      ]),
      '501': problemAnswer('profile reads are not configured', ['NOT_CONFIGURED']),
      '502': problemAnswer('the wallet service did not give the profile', ['WALLET_UNAVAILABLE']),
      // In place of the 503 every ops route may give (ops-answers.ts): this route has one more reason.
      '503': problemAnswer(
        'the user’s tokens could not be refreshed just now (the link stays usable), the wallet asked for fewer reads (its 429), or too many requests at once (OVERLOADED); each with Retry-After: try again then',
        ['TOKEN_REFRESH_FAILED', 'WALLET_RATE_LIMITED', 'OVERLOADED'],
        { 'Retry-After': retryAfterHeader },
      ),
    },
  }),
};

/** The links routes, as the document lists them. */
export const linksRoutes: readonly AnyRouteSpec[] = Object.values(routes);

export function opsLinksRouter(deps: OpsLinksDependencies): Router {
  const router = strictRouter();
  const add = routesOn(router, '/ops');

  add(routes.createLoginUrl, async (req, res) => {
    const parsed = loginUrlRequestSchema.safeParse(req.body);
    if (!parsed.success) {
      validationProblem(res, parsed.error);
      return;
    }
    // Where PUBLIC_URL is unset (a development host), the URL is built on the request's Host: one that names no URL
    // (`localhost:99999`) is refused before a grant is minted, which no one would receive.
    const url = URL.parse('/connect/start', deps.publicUrl ?? `${req.protocol}://${req.get('host') ?? 'localhost'}`);
    if (!url) {
      sendProblem(res, {
        status: 400,
        code: 'VALIDATION_ERROR',
        title: 'Bad Request',
        detail: 'the request’s Host header names no URL to build the login URL on (set PUBLIC_URL); nothing stored',
      });
      return;
    }
    const { token, expiresAt } = await mintLoginGrant(deps.database, {
      ...parsed.data,
      actor: opsKeyNameOf(res.locals),
    });
    url.searchParams.set('login', token);
    res.setHeader('Cache-Control', 'no-store');
    res
      .status(201)
      .json({ url: url.toString(), expiresAt: expiresAt.toISOString() } satisfies z.infer<typeof loginUrlSchema>);
  });

  add(routes.findLinks, async (req, res) => {
    const query = linkSearchQuerySchema.safeParse(req.query);
    if (!query.success) {
      validationProblem(res, query.error);
      return;
    }
    res.json({
      items: await findLinks(
        deps.database,
        query.data.partnerUserId !== undefined
          ? { partnerUserId: query.data.partnerUserId }
          : { profileId: query.data.profileId! },
      ),
    });
  });

  add(routes.getLink, async (req, res) => {
    const linkId = linkIdSchema.safeParse(req.params.linkId);
    if (!linkId.success) {
      sendProblem(res, { status: 400, code: 'INVALID_LINK_ID', title: 'Bad Request', detail: 'linkId must be a UUID' });
      return;
    }
    const view = await linkView(deps.database, linkId.data);
    if (!view) {
      sendProblem(res, { status: 404, code: 'LINK_NOT_FOUND', title: 'Not Found', detail: `no link ${linkId.data}` });
      return;
    }
    res.json(view);
  });

  // Never cached: every request fetches the profile again, so identity document URLs are always
  // fresh (valid 15 minutes from `fetchedAt`) and nothing of the profile is stored.
  add(routes.getLinkProfileHead, refuseHead);

  add(routes.getLinkProfile, async (req, res) => {
    const linkId = linkIdSchema.safeParse(req.params.linkId);
    if (!linkId.success) {
      sendProblem(res, { status: 400, code: 'INVALID_LINK_ID', title: 'Bad Request', detail: 'linkId must be a UUID' });
      return;
    }
    const profiles = deps.profiles;
    if (!profiles) {
      sendProblem(res, {
        status: 501,
        code: 'NOT_CONFIGURED',
        title: 'Not Implemented',
        detail: 'profile reads are not configured',
      });
      return;
    }
    const link = await deps.database.link.findUnique({ where: { id: linkId.data }, select: { status: true } });
    if (!link) {
      sendProblem(res, { status: 404, code: 'LINK_NOT_FOUND', title: 'Not Found', detail: `no link ${linkId.data}` });
      return;
    }
    const reauth = () =>
      sendProblem(res, {
        status: 409,
        code: 'REAUTH_REQUIRED',
        title: 'Conflict',
        detail:
          'the wallet no longer accepts this link’s tokens: the user must log in again (or reopen the app from the wallet)',
      });
    if (link.status === 'UNLINKED') {
      sendProblem(res, {
        status: 409,
        code: 'LINK_UNLINKED',
        title: 'Conflict',
        detail: `link ${linkId.data} was unlinked`,
      });
      return;
    }
    if (link.status === 'REAUTH_REQUIRED') {
      reauth();
      return;
    }
    try {
      const fetchedAt = (profiles.now ?? Date.now)();
      const profile = await profiles.vault.withUserToken(linkId.data, (token) => profiles.wallet.getProfile(token));
      const byScope = profileByScope(profile.data);
      res.setHeader('Cache-Control', 'no-store');
      const body: LinkProfileView = {
        linkId: linkId.data,
        fetchedAt: new Date(fetchedAt).toISOString(),
        requestReferenceNo: profile.requestReferenceNo,
        scopes: Object.keys(byScope) as LinkProfileView['scopes'],
        documentUrlsExpireAt: byScope.identity_document
          ? new Date(fetchedAt + DOCUMENT_URL_LIFETIME_MS).toISOString()
          : null,
        profile: byScope,
      };
      res.json(body);
    } catch (error) {
      if (error instanceof VaultError) {
        if (error.code === 'REAUTH_REQUIRED') reauth();
        else if (error.code === 'LINK_UNLINKED')
          sendProblem(res, {
            status: 409,
            code: 'LINK_UNLINKED',
            title: 'Conflict',
            detail: `link ${linkId.data} was unlinked`,
          });
        else
          sendProblem(res, {
            status: 404,
            code: 'LINK_NOT_FOUND',
            title: 'Not Found',
            detail: `link ${linkId.data} has no tokens`,
          });
        return;
      }
      // The user's token refused, not any 401: the partner's own client credentials refused is no word on the user.
      if (isUserTokenRejection(error)) {
        reauth();
        return;
      }
      if (error instanceof TokenRefreshBusy) {
        // A load refusal (invariant 11): the API's refresh line was full and nothing was sent.
        res.setHeader('Retry-After', String(Math.ceil(error.retryAfterMs / 1000)));
        sendProblem(res, {
          status: 503,
          code: 'OVERLOADED',
          title: 'Service Unavailable',
          detail: 'too many token refreshes at once: nothing was sent to the wallet; ask again after Retry-After',
        });
        return;
      }
      if (error instanceof TokenRefreshError) {
        // The link stays usable: the refresh failed for the client or the network, not the user. When to ask again: the
        // wallet's Retry-After (its 429), else a few seconds.
        res.setHeader('Retry-After', String(Math.ceil((retryDelayOf(error.walletError) ?? 5000) / 1000)));
        sendProblem(res, {
          status: 503,
          code: 'TOKEN_REFRESH_FAILED',
          title: 'Service Unavailable',
          detail: `the user's tokens could not be refreshed just now: ${error.walletError.code} (Request-Reference-No ${error.walletError.requestReferenceNo}); try again`,
        });
        return;
      }
      if (isWalletError(error) && error.httpStatus === 429) {
        // The wallet asked us to slow down: a burst of profile reads is told when to come back, not that it failed.
        res.setHeader('Retry-After', String(Math.ceil((retryDelayOf(error) ?? 5000) / 1000)));
        sendProblem(res, {
          status: 503,
          code: 'WALLET_RATE_LIMITED',
          title: 'Service Unavailable',
          detail: `the wallet service asked for fewer profile reads (429, Request-Reference-No ${error.requestReferenceNo}); ask again after Retry-After`,
        });
        return;
      }
      if (isWalletError(error)) {
        sendProblem(res, {
          status: 502,
          code: 'WALLET_UNAVAILABLE',
          title: 'Bad Gateway',
          detail: `the wallet service did not give the profile: ${error.code} (Request-Reference-No ${error.requestReferenceNo})`,
        });
        return;
      }
      throw error;
    }
  });

  add(routes.unlink, async (req, res) => {
    const linkId = linkIdSchema.safeParse(req.params.linkId);
    if (!linkId.success) {
      sendProblem(res, { status: 400, code: 'INVALID_LINK_ID', title: 'Bad Request', detail: 'linkId must be a UUID' });
      return;
    }
    if (!(await unlink(deps.database, deps.tokens, linkId.data, opsKeyNameOf(res.locals)))) {
      sendProblem(res, { status: 404, code: 'LINK_NOT_FOUND', title: 'Not Found', detail: `no link ${linkId.data}` });
      return;
    }
    res.json(await linkView(deps.database, linkId.data));
  });

  return router;
}
