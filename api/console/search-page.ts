// The console's search: one box that finds a funding, a payment, a batch, a link or a partner user
// by any id, an idempotency key, a batch item's reference, the wallet's transfer or payment id, or
// the last two digits of a cash-in code. Every lookup is one index lookup, or a page of an index
// range for those that can match many (a code's masked form, a reference in every batch); they run
// at once. A code is found by its masked form (`*****67`, as stored), never by opening a sealed one,
// and only its masked form is shown.
import type { Router } from 'express';
import { batchReferenceSchema } from '../../domain/funding-batch.ts';
import { userAccount } from '../../domain/ledger.ts';
import {
  batchesNamedBy,
  fundingsByBatchReference,
  fundingsByMaskedCode,
  fundingsNamedBy,
  maskedCodeQuery,
  type FundingHit,
} from '../../fundings/funding-lookup.ts';
import { findLinks, linkView } from '../../links/link-view.ts';
import type { ListPage } from '../../lib/list-page.ts';
import { paymentsNamedBy } from '../../payments/payment-lookup.ts';
import { defineRoute, htmlAnswer, type AnyRouteSpec } from '../http/route-spec.ts';
import { consoleRoutesOn, personOf } from './console-auth.ts';
import {
  CONSOLE_PATH,
  escapeHtml,
  idCell,
  money,
  notice,
  sendConsolePage,
  stateBadge,
  table,
  when,
} from './console-layout.ts';
import type { ConsoleServices } from './console-services.ts';
import { card, consoleUrl, linkedId, pager, queryText, segment } from './page-pieces.ts';
import { isUuid } from '../../domain/ids.ts';

export type SearchPageDependencies = Pick<ConsoleServices, 'database' | 'ledger' | 'timeZone'>;

const routes = {
  search: defineRoute({
    method: 'get',
    path: '/console/search',
    operationId: 'consoleSearch',
    tag: 'console',
    summary:
      'Find a funding, payment, batch, link or partner user by any id, key, reference, wallet id, or a cash-in code’s last two digits (?q=…)',
    access: { consoleScope: 'read' },
    responses: { '200': htmlAnswer('the page, with what was found') },
  }),
};

export const searchRoutes: readonly AnyRouteSpec[] = Object.values(routes);

/** Rows per page of a list that can match many (a masked code, a batch reference). */
const PAGE_SIZE = 20;
const printable = /^[\x21-\x7e]{1,128}$/;

const none = <Item>(): Promise<ListPage<Item>> => Promise.resolve({ kind: 'page', items: [], nextCursor: null });

function fundingRows(hits: readonly FundingHit[], timeZone: string): string[][] {
  return hits.map((hit) => [
    linkedId(`${CONSOLE_PATH}/fundings/${hit.fundingId}`, hit.fundingId, 'funding id'),
    stateBadge(hit.status),
    money(hit.amount),
    hit.recipient.type === 'CODE'
      ? `cash-in code <span class="id">${escapeHtml(hit.recipient.masked)}</span>`
      : `linked wallet ${escapeHtml(hit.recipient.linkId.slice(0, 8))}…`,
    hit.batchId
      ? `<a href="${CONSOLE_PATH}/batches/${escapeHtml(hit.batchId)}">batch</a>${hit.batchReference ? ` item ${escapeHtml(hit.batchReference)}` : ''}`
      : '',
    when(hit.createdAt, timeZone),
  ]);
}

const fundingHead = ['Funding', 'State', 'Amount', 'Recipient', 'Batch', 'Requested'];

export function addSearchRoutes(router: Router, deps: SearchPageDependencies): void {
  const add = consoleRoutesOn(router);

  add(routes.search, async (req, res) => {
    const person = personOf(res);
    const raw = (req.query as Record<string, unknown>).q;
    const q = queryText(req, 'q', 255);
    const tz = deps.timeZone;
    const form = `<form method="get" action="${CONSOLE_PATH}/search" role="search"><label for="search-q">Id, idempotency key, batch reference, wallet transfer or payment id, partner user id, or a cash-in code’s last two digits</label>
<input id="search-q" name="q" type="search" maxlength="255" value="${escapeHtml(q ?? '')}" autofocus required><div class="actions"><button type="submit">Search</button></div></form>`;
    if (q === undefined) {
      const refused = typeof raw === 'string' && raw.trim() !== '';
      sendConsolePage(res, refused ? 400 : 200, {
        title: 'Search',
        section: 'search',
        person,
        body: `${refused ? notice('Search for 1 to 255 printable characters.', 'error') : ''}${card('search', 'Find', form)}`,
      });
      return;
    }
    const masked = maskedCodeQuery(q);
    const reference = batchReferenceSchema.safeParse(q).success ? q : null;
    const codesCursor = queryText(req, 'codes', 200);
    const refsCursor = queryText(req, 'refs', 200);
    const asUser = printable.test(q) ? q : null;
    const [fundings, payments, byCode, byReference, link, usersLinks, profileLinks, accountCurrencies] =
      await Promise.all([
        fundingsNamedBy(deps.database, q),
        paymentsNamedBy(deps.database, q),
        masked
          ? fundingsByMaskedCode(deps.database, masked, { limit: PAGE_SIZE, cursor: codesCursor })
          : none<FundingHit>(),
        reference
          ? fundingsByBatchReference(deps.database, reference, { limit: PAGE_SIZE, cursor: refsCursor })
          : none<FundingHit>(),
        isUuid(q) ? linkView(deps.database, q.toLowerCase()) : Promise.resolve(null),
        asUser ? findLinks(deps.database, { partnerUserId: asUser }) : Promise.resolve([]),
        asUser && asUser.length <= 64 ? findLinks(deps.database, { profileId: asUser }) : Promise.resolve([]),
        asUser ? deps.ledger.currenciesOf(deps.database, userAccount(asUser)) : Promise.resolve([]),
      ]);
    const batches = await batchesNamedBy(
      deps.database,
      q,
      byReference.kind === 'page' ? byReference.items.flatMap((hit) => (hit.batchId ? [hit.batchId] : [])) : [],
    );
    const links = [...(link ? [link] : []), ...usersLinks, ...profileLinks].filter(
      (item, index, all) => all.findIndex((other) => other.linkId === item.linkId) === index,
    );
    const isUser = asUser !== null && (usersLinks.length > 0 || accountCurrencies.length > 0);
    const here = (cursors: { codes?: string | undefined; refs?: string | undefined }) =>
      consoleUrl(`${CONSOLE_PATH}/search`, { q, ...cursors });

    const sections: string[] = [];
    if (fundings.length > 0)
      sections.push(
        card('found-fundings', 'Fundings', table('Fundings found', fundingHead, fundingRows(fundings, tz))),
      );
    if (payments.length > 0) {
      sections.push(
        card(
          'found-payments',
          'Payments',
          table(
            'Payments found',
            ['Payment', 'Wallet payment id', 'State', 'Amount', 'Requested'],
            payments.map((hit) => [
              linkedId(`${CONSOLE_PATH}/payments/${hit.id}`, hit.id, 'payment id'),
              hit.paymentId ? idCell(hit.paymentId, 'wallet payment id') : '',
              stateBadge(hit.status),
              money(hit.amount),
              when(hit.createdAt, tz),
            ]),
          ),
        ),
      );
    }
    if (batches.length > 0) {
      sections.push(
        card(
          'found-batches',
          'Batches',
          table(
            'Batches found',
            ['Batch', 'Name', 'State', 'Items', 'Total', 'Created'],
            batches.map((batch) => [
              linkedId(`${CONSOLE_PATH}/batches/${batch.batchId}`, batch.batchId, 'batch id'),
              escapeHtml(batch.name),
              stateBadge(batch.state),
              String(batch.total.count),
              money(batch.total.amount),
              when(batch.createdAt, tz),
            ]),
          ),
        ),
      );
    }
    for (const [found, title, cursorName, other] of [
      [byCode, `Fundings to a cash-in code ${masked ?? ''}`, 'codes', { refs: refsCursor }],
      [byReference, `Batch items with the reference ${reference ?? ''}`, 'refs', { codes: codesCursor }],
    ] as const) {
      if (found.kind === 'invalid-cursor')
        sections.push(notice(`That page of “${title}” is not one this console gave: search again.`, 'error'));
      else if (found.items.length > 0) {
        const next = found.nextCursor ? here({ ...other, [cursorName]: found.nextCursor }) : null;
        sections.push(
          card(
            `found-${cursorName}`,
            `${title}, newest first`,
            `${table(title, fundingHead, fundingRows(found.items, tz))}${pager(next, 'More')}`,
          ),
        );
      }
    }
    if (links.length > 0) {
      sections.push(
        card(
          'found-links',
          'Links',
          table(
            'Links found',
            ['Link', 'State', 'Kind', 'Partner user', 'Wallet profile', 'Linked'],
            links.map((item) => [
              linkedId(`${CONSOLE_PATH}/links/${item.linkId}`, item.linkId, 'link id'),
              stateBadge(item.status),
              escapeHtml(item.kind),
              idCell(item.partnerUserId, 'partner user id'),
              idCell(item.profileId, 'profile id'),
              when(item.createdAt, tz),
            ]),
          ),
        ),
      );
    }
    if (isUser) {
      sections.push(
        card(
          'found-user',
          'Partner user',
          `<p>${idCell(asUser, 'partner user id')}: <a href="${CONSOLE_PATH}/accounts/${escapeHtml(segment(asUser))}">their account</a> · <a href="${escapeHtml(consoleUrl(`${CONSOLE_PATH}/links`, { partnerUserId: asUser }))}">their links</a> (${usersLinks.length})</p>`,
        ),
      );
    }
    const body = `${card('search', 'Find', form)}${sections.length > 0 ? sections.join('\n') : notice(`Nothing found for “${q}”. Ids and keys are matched whole; a cash-in code by its last two digits.`, 'info')}`;
    sendConsolePage(res, 200, { title: 'Search', section: 'search', person, body });
  });
}
