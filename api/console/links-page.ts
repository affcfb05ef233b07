// Links in the console: a partner user's linked wallets (GET /ops/links?partnerUserId=…'s list)
// and their state, a link with its token expiry (never a token) and its history a page at a
// time; a person with the `accounts` scope revokes one through the same unlink the ops API's
// DELETE /ops/links/{linkId} uses (its tokens deleted, the link kept UNLINKED with its history).
import { idSchema } from '../../domain/ids.ts';
import type { Router } from 'express';
import { unlink } from '../../links/link-record.ts';
import { findLinks, linkEvents, linkView, type LinkSearch } from '../../links/link-view.ts';
import { defineRoute, htmlAnswer, redirectAnswer, type AnyRouteSpec } from '../http/route-spec.ts';
import { consoleRoutesOn, personOf } from './console-auth.ts';
import {
  CONSOLE_PATH,
  csrfField,
  escapeHtml,
  idCell,
  notice,
  sendConsolePage,
  stateBadge,
  table,
  when,
} from './console-layout.ts';
import type { ConsoleServices } from './console-services.ts';
import {
  card,
  consoleUrl,
  doneNotice,
  facts,
  linkedId,
  may,
  pager,
  queryText,
  segment,
  sendBack,
  sendNotFound,
} from './page-pieces.ts';

export type LinksPageDependencies = Pick<ConsoleServices, 'database' | 'tokens' | 'timeZone'>;

const linkIdParameter = { linkId: { schema: idSchema, description: 'the link’s id' } };

const routes = {
  links: defineRoute({
    method: 'get',
    path: '/console/links',
    operationId: 'consoleLinks',
    tag: 'console',
    summary:
      'A partner user’s linked wallets (?partnerUserId=…, or ?profileId=… for the wallet’s profile id) and their state',
    access: { consoleScope: 'read' },
    responses: { '200': htmlAnswer('the page') },
  }),
  link: defineRoute({
    method: 'get',
    path: '/console/links/{linkId}',
    operationId: 'consoleLink',
    tag: 'console',
    summary: 'A link: state, kind, scopes, token expiry (never a token), its history a page at a time',
    access: { consoleScope: 'read' },
    params: linkIdParameter,
    responses: { '200': htmlAnswer('the page'), '404': htmlAnswer('no such link') },
  }),
  revoke: defineRoute({
    method: 'post',
    path: '/console/links/{linkId}/unlink',
    operationId: 'consoleUnlink',
    tag: 'console',
    summary:
      'Revoke a link: its tokens are deleted; the link stays, UNLINKED, with its history (DELETE /ops/links/{linkId}’s unlink)',
    access: { consoleScope: 'accounts' },
    params: linkIdParameter,
    responses: { '303': redirectAnswer('unlinked: back to the link'), '404': htmlAnswer('no such link') },
  }),
};

export const linksRoutes: readonly AnyRouteSpec[] = Object.values(routes);

/** History entries per page. */
const PAGE_SIZE = 25;

const linkPath = (linkId: string) => `${CONSOLE_PATH}/links/${linkId}`;
const printable = /^[\x21-\x7e]{1,128}$/;

export function addLinksRoutes(router: Router, deps: LinksPageDependencies): void {
  const add = consoleRoutesOn(router);
  const tz = deps.timeZone;

  add(routes.links, async (req, res) => {
    const person = personOf(res);
    const partnerUserId = queryText(req, 'partnerUserId', 128);
    const profileId = queryText(req, 'profileId', 64);
    const search: LinkSearch | null =
      partnerUserId !== undefined && printable.test(partnerUserId)
        ? { partnerUserId }
        : profileId !== undefined && printable.test(profileId)
          ? { profileId }
          : null;
    const links = search ? await findLinks(deps.database, search) : [];
    const form = `<form method="get" action="${CONSOLE_PATH}/links" role="search"><label for="links-user">Partner user id</label>
<input id="links-user" name="partnerUserId" type="search" maxlength="128" value="${escapeHtml(partnerUserId ?? '')}" required><div class="actions"><button type="submit">Show their links</button></div></form>`;
    const whose = search
      ? 'partnerUserId' in search
        ? `partner user ${search.partnerUserId}`
        : `wallet profile ${search.profileId}`
      : '';
    const results = search
      ? card(
          'links',
          `Links of ${whose}, newest first`,
          `${table(
            `Links of ${whose}`,
            ['Link', 'State', 'Kind', 'Partner user', 'Wallet profile', 'Scopes', 'Linked'],
            links.map((link) => [
              linkedId(linkPath(link.linkId), link.linkId, 'link id'),
              stateBadge(link.status),
              escapeHtml(link.kind),
              linkedId(
                `${CONSOLE_PATH}/accounts/${segment(link.partnerUserId)}`,
                link.partnerUserId,
                'partner user id',
              ),
              idCell(link.profileId, 'profile id'),
              escapeHtml(link.scopes.join(', ')),
              when(link.createdAt, tz),
            ]),
          )}${'partnerUserId' in search ? `<p><a href="${CONSOLE_PATH}/accounts/${escapeHtml(segment(search.partnerUserId))}">Their partner account</a></p>` : ''}`,
        )
      : '';
    const refused = (partnerUserId !== undefined || profileId !== undefined) && !search;
    sendConsolePage(res, refused ? 400 : 200, {
      title: 'Links',
      section: 'links',
      person,
      body: `${refused ? notice('A partner user id is 1 to 128 printable characters without spaces.', 'error') : ''}${card('find-links', 'Find a user’s links', form)}${results}`,
    });
  });

  add(routes.link, async (req, res) => {
    const person = personOf(res);
    const id = idSchema.safeParse(req.params.linkId);
    const link = id.success ? await linkView(deps.database, id.data) : null;
    if (!link) {
      sendNotFound(res, person, 'links', `link ${req.params.linkId}`);
      return;
    }
    const cursor = queryText(req, 'cursor', 200);
    const history = await linkEvents(deps.database, link.linkId, { limit: PAGE_SIZE, cursor });
    const revoke =
      may(person, 'accounts') && link.status !== 'UNLINKED'
        ? `<div class="actions"><form method="post" action="${linkPath(link.linkId)}/unlink" data-confirm="Revoke this link? Its tokens are deleted: the user must link their wallet again.">${csrfField(person)}<button type="submit" class="danger">Revoke link</button></form></div>`
        : '';
    const body = [
      doneNotice(req, res, {
        unlinked: 'Revoked: the link’s tokens are deleted and it is UNLINKED; its history stays.',
      }),
      card(
        'link',
        'The link',
        `${facts([
          ['Link id', idCell(link.linkId, 'link id')],
          ['State', stateBadge(link.status)],
          ['Kind', escapeHtml(link.kind)],
          [
            'Partner user',
            linkedId(
              `${CONSOLE_PATH}/links?partnerUserId=${encodeURIComponent(link.partnerUserId)}`,
              link.partnerUserId,
              'partner user id',
            ),
          ],
          ['Wallet profile id', idCell(link.profileId, 'profile id')],
          ['Wallet user', link.maskedUserId ? escapeHtml(link.maskedUserId) : '<span class="muted">not known</span>'],
          ['Scopes', escapeHtml(link.scopes.join(', ') || 'none')],
          [
            'Access token expires',
            link.tokens ? when(link.tokens.accessTokenExpiresAt, tz) : '<span class="muted">no tokens</span>',
          ],
          [
            'Refresh token expires',
            link.tokens?.refreshTokenExpiresAt
              ? when(link.tokens.refreshTokenExpiresAt, tz)
              : '<span class="muted">—</span>',
          ],
          [
            'Tokens refreshed',
            link.tokens?.refreshedAt
              ? `${when(link.tokens.refreshedAt, tz)} (version ${link.tokens.version})`
              : '<span class="muted">never</span>',
          ],
          ['Linked', when(link.createdAt, tz)],
        ])}${revoke}`,
      ),
      card(
        'history',
        'History, newest first',
        history === null
          ? notice('That page is not one this console gave: start again from the first.', 'error')
          : `${table(
              'The link’s history',
              ['When', 'What', 'By', 'Request-Reference-No', 'Detail'],
              history.items.map((event) => [
                when(event.at, tz),
                escapeHtml(event.type),
                escapeHtml(event.actor ?? 'the user or walletflow'),
                event.requestReferenceNo ? idCell(event.requestReferenceNo, 'Request-Reference-No') : '',
                escapeHtml(event.detail ?? ''),
              ]),
            )}${pager(history.nextCursor ? consoleUrl(linkPath(link.linkId), { cursor: history.nextCursor }) : null, 'Older')}`,
      ),
    ].join('\n');
    sendConsolePage(res, 200, { title: 'Link', section: 'links', person, body });
  });

  add(routes.revoke, async (req, res) => {
    const person = personOf(res);
    const id = idSchema.safeParse(req.params.linkId);
    if (!id.success || !(await unlink(deps.database, deps.tokens, id.data, person.name))) {
      sendNotFound(res, person, 'links', `link ${req.params.linkId}`);
      return;
    }
    sendBack(res, linkPath(id.data), 'unlinked');
  });
}
