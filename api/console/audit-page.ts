// The audit in the console: who did what, when (ops_action: every write to the ops API and to the
// console, whatever it answered), newest first, a page at a time; filtered by person (a key's or a
// person's name, or a person's identity), by action (a kind, or a method and path prefix) and by
// day (SETTLEMENT_TZ). Each page looks through a bounded number of acts (audit/ops-actions.ts):
// a filter that matches rarely gives a short page and the way further back.
import type { Router } from 'express';
import {
  isOpsActionKind,
  listOpsActions,
  opsActionKinds,
  OPS_ACTIONS_SCANNED_PER_PAGE,
  type OpsActionQuery,
} from '../../audit/ops-actions.ts';
import { settlementDateSchema } from '../../domain/ledger.ts';
import { settlementDay } from '../../ledger/settlement.ts';
import { defineRoute, htmlAnswer, type AnyRouteSpec } from '../http/route-spec.ts';
import { consoleRoutesOn, personOf } from './console-auth.ts';
import { CONSOLE_PATH, escapeHtml, idCell, notice, sendConsolePage, table, when } from './console-layout.ts';
import type { ConsoleServices } from './console-services.ts';
import { card, consoleUrl, pager, queryText } from './page-pieces.ts';

export type AuditPageDependencies = Pick<ConsoleServices, 'database' | 'timeZone'>;

const routes = {
  audit: defineRoute({
    method: 'get',
    path: '/console/audit',
    operationId: 'consoleAudit',
    tag: 'console',
    summary:
      'Who did what, when: every audited write of the ops API and the console, by person, action and day, a page at a time',
    access: { consoleScope: 'read' },
    responses: { '200': htmlAnswer('the page'), '400': htmlAnswer('a filter that cannot be read') },
  }),
};

export const auditRoutes: readonly AnyRouteSpec[] = Object.values(routes);

/** Acts per page. */
const PAGE_SIZE = 50;

const methods = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/** `POST /ops/fundings` (a method, then a path prefix) or a path prefix alone. */
function actionOf(text: string): { method?: string; pathPrefix: string } | null {
  const [first = '', ...rest] = text.split(/\s+/);
  const method = first.toUpperCase();
  if (methods.has(method))
    return rest.length <= 1 && (rest[0] ?? '/').startsWith('/') ? { method, pathPrefix: rest[0] ?? '/' } : null;
  return text.startsWith('/') && !/\s/.test(text) ? { pathPrefix: text } : null;
}

/** An answer's status as a word a person reads, with its number. */
function answerOf(status: number): string {
  if (status === 0) return '<span class="badge wait">client left</span>';
  const tone = status < 400 ? ' good' : ' bad';
  return `<span class="badge${tone}">${status}</span>`;
}

export function addAuditRoutes(router: Router, deps: AuditPageDependencies): void {
  const add = consoleRoutesOn(router);

  add(routes.audit, async (req, res) => {
    const person = personOf(res);
    const who = queryText(req, 'person', 128);
    const kind = queryText(req, 'kind', 40);
    const actionText = queryText(req, 'action', 200);
    const dayText = queryText(req, 'day', 10);
    const cursor = queryText(req, 'cursor', 200);
    const problems: string[] = [];
    const action = actionText === undefined ? undefined : actionOf(actionText);
    if (actionText !== undefined && !action)
      problems.push('An action is a path prefix (/ops/fundings) or a method and one (POST /console/fundings).');
    if (kind !== undefined && !isOpsActionKind(kind)) problems.push('That kind of act is not one of the list.');
    const day = dayText === undefined ? undefined : settlementDateSchema.safeParse(dayText);
    if (day && !day.success) problems.push('A day is YYYY-MM-DD.');
    const query: OpsActionQuery = {
      person: who,
      action: kind !== undefined && isOpsActionKind(kind) ? { kind } : (action ?? undefined),
      ...(day?.success ? { day: settlementDay(day.data, deps.timeZone) } : {}),
      cursor,
      limit: PAGE_SIZE,
    };
    const page = problems.length > 0 ? null : await listOpsActions(deps.database, query);
    const filters = { person: who, kind, action: actionText, day: dayText };
    const form = `<form method="get" action="${CONSOLE_PATH}/audit" role="search" class="filters">
<label for="audit-person">Person (a key’s name, a person’s name or identity)</label><input id="audit-person" name="person" type="search" maxlength="128" value="${escapeHtml(who ?? '')}">
<label for="audit-kind">Kind of act</label><select id="audit-kind" name="kind"><option value="">Any</option>${Object.entries(
      opsActionKinds,
    )
      .map(
        ([value, { label }]) =>
          `<option value="${value}"${value === kind ? ' selected' : ''}>${escapeHtml(label)}</option>`,
      )
      .join('')}</select>
<label for="audit-action">Or an action: method and path prefix</label><input id="audit-action" name="action" type="search" maxlength="200" placeholder="POST /ops/fundings" value="${escapeHtml(actionText ?? '')}">
<label for="audit-day">Day (${escapeHtml(deps.timeZone)})</label><input id="audit-day" name="day" type="date" value="${escapeHtml(day?.success ? day.data : '')}">
<div class="actions"><button type="submit">Filter</button> <a href="${CONSOLE_PATH}/audit">Clear</a></div></form>`;
    let list = '';
    if (page?.kind === 'invalid-cursor')
      list = notice('That page is not one this console gave: start again from the first.', 'error');
    else if (page) {
      const tz = deps.timeZone;
      list = `${table(
        'Audited acts, newest first',
        ['When', 'Who', 'Where', 'Action', 'Answer', 'Request id'],
        page.items.map((row) => [
          when(row.at, tz),
          row.keyName
            ? `<a href="${escapeHtml(consoleUrl(`${CONSOLE_PATH}/audit`, { person: row.keyName }))}">${escapeHtml(row.keyName)}</a>${row.actor ? ` <span class="muted">(as ${escapeHtml(row.actor)})</span>` : ''}`
            : `<span class="muted">${row.channel === 'console' && row.actor ? escapeHtml(row.actor) : 'no session or valid key'}${row.client ? `, from ${escapeHtml(row.client === '*' ? 'any address' : row.client)}` : ''}</span>`,
          escapeHtml(row.channel === 'console' ? 'console' : 'ops API'),
          row.summary
            ? `${row.count.toLocaleString('en')} requests past the audit’s budget that minute, counted, not recorded one by one`
            : `<code>${escapeHtml(row.method)} ${escapeHtml(row.path)}</code>`,
          row.summary ? '' : answerOf(row.status),
          row.requestId ? idCell(row.requestId, 'request id') : '',
        ]),
      )}${page.searchedAll ? `<p class="muted">No more matches among the ${OPS_ACTIONS_SCANNED_PER_PAGE.toLocaleString('en')} acts looked through${day?.success ? ' on that day' : ''}.</p>` : ''}${pager(
        page.nextCursor ? consoleUrl(`${CONSOLE_PATH}/audit`, { ...filters, cursor: page.nextCursor }) : null,
        page.searchedAll ? 'Look further back' : 'Older',
      )}`;
    }
    sendConsolePage(res, problems.length > 0 ? 400 : 200, {
      title: 'Audit',
      section: 'audit',
      person,
      body: `${problems.map((problem) => notice(problem, 'error')).join('')}${card('audit-filters', 'Filter', form)}${card('audit-acts', 'Who did what, when', list)}`,
    });
  });
}
