// The partner's ledger in the console (contract-decisions section 10): find a partner user's
// account (or a system account), see its balance, what is held on it and by which fundings, and
// its entries a page at a time; adjust it (the `accounts` scope) through the very adjustment the
// ops API makes (ledger/adjustments.ts: one Idempotency-Key per form, so a form sent twice posts
// once); and download a day's settlement report as CSV (GET /ops/settlements/{date}?format=csv's):
// the first download of a day, a form a person sends (a POST), starts its run, never a GET (which a
// browser may make on its own: a prefetch, a HEAD); while it goes, a page shows its progress,
// pushed (a live region), and the download link once it is done.
import { randomUUID } from 'node:crypto';
import type { Response, Router } from 'express';
import { idempotencyKeySchema } from '../../domain/funding.ts';
import {
  accountOfPathSegment,
  createAdjustmentSchema,
  settlementDateSchema,
  systemAccounts,
} from '../../domain/ledger.ts';
import { acceptedCurrency } from '../../domain/money.ts';
import { fundingsHoldingOn } from '../../fundings/funding-lookup.ts';
import { adjustmentScopes, isAdjustableAccount } from '../../ledger/adjustments.ts';
import { isEntriesCursor } from '../../ledger/ledger.ts';
import { lastWholeDay } from '../../ledger/settlement.ts';
import type { SettlementRun } from '../../ledger/settlement-runs.ts';
import { refusalWords, startedWords, WorkflowUnavailableError } from '../../lib/workflow-unavailable.ts';
import { clientGone } from '../http/client-gone.ts';
import {
  defineRoute,
  htmlAnswer,
  redirectAnswer,
  retryAfterHeader,
  textSchema,
  type AnyRouteSpec,
} from '../http/route-spec.ts';
import { accountPathSchema } from '../ops/accounts-routes.ts';
import { sendSettlementCsv } from '../ops/settlement-routes.ts';
import { consoleRoutesOn, personOf } from './console-auth.ts';
import {
  consoleHeaders,
  CONSOLE_PATH,
  csrfField,
  escapeHtml,
  idCell,
  money,
  notice,
  sendConsolePage,
  stateBadge,
  table,
  when,
  type SignedInPerson,
} from './console-layout.ts';
import type { ConsoleServices } from './console-services.ts';
import {
  card,
  consoleUrl,
  facts,
  formField,
  doneAddress,
  doneOf,
  linkedId,
  may,
  pager,
  queryText,
  segment,
  sendRefused,
} from './page-pieces.ts';
import { ledgerEntriesTable } from './record-pieces.ts';

export type AccountsPageDependencies = Pick<
  ConsoleServices,
  'database' | 'ledger' | 'adjust' | 'settlements' | 'csvStreams' | 'liveStreams' | 'timeZone' | 'now'
>;

const accountParameter = {
  account: { schema: accountPathSchema, description: '`TREASURY` (or another system account), else a partner user id' },
};

const routes = {
  accounts: defineRoute({
    method: 'get',
    path: '/console/accounts',
    operationId: 'consoleAccounts',
    tag: 'console',
    summary: 'Find a partner user’s account; the system accounts; the day’s settlement report',
    access: { consoleScope: 'read' },
    responses: { '200': htmlAnswer('the page'), '303': redirectAnswer('to the account asked for') },
  }),
  account: defineRoute({
    method: 'get',
    path: '/console/accounts/{account}',
    operationId: 'consoleAccount',
    tag: 'console',
    summary:
      'An account: balance, held, available, the fundings holding on it, its entries a page at a time, the adjustment form',
    access: { consoleScope: 'read' },
    params: accountParameter,
    responses: { '200': htmlAnswer('the page'), '400': htmlAnswer('not an account') },
  }),
  adjustAccount: defineRoute({
    method: 'post',
    path: '/console/accounts/{account}/adjustments',
    operationId: 'consoleAdjustAccount',
    tag: 'console',
    summary:
      'Adjust a partner user’s account or the treasury (POST /ops/accounts/{account}/adjustments’s rules; the form’s own Idempotency-Key)',
    access: { consoleScope: 'accounts' },
    params: accountParameter,
    responses: {
      '303': redirectAnswer('posted (or already posted by this form): back to the account'),
      '400': htmlAnswer('a bad amount or reason'),
      '403': htmlAnswer('the treasury, by a person without the admin role beside accounts; nothing stored'),
      '422': htmlAnswer('refused; nothing stored'),
    },
  }),
  settlement: defineRoute({
    method: 'get',
    path: '/console/settlements',
    operationId: 'consoleSettlement',
    tag: 'console',
    summary:
      'A day’s settlement report as CSV (?date=YYYY-MM-DD, the day in SETTLEMENT_TZ); while the day’s run goes, a page with its progress; with neither, a page with the form that starts it. Never starts one (a GET a browser may make on its own: a prefetch, a HEAD)',
    access: { consoleScope: 'read' },
    responses: {
      '200': {
        description: 'the CSV file, or the page following the run or offering to start it',
        content: { 'text/csv': { jsonSchema: textSchema }, 'text/html': { jsonSchema: textSchema } },
      },
      '400': htmlAnswer('no date, or not one'),
      '422': htmlAnswer('a day that has not begun'),
    },
  }),
  settle: defineRoute({
    method: 'post',
    path: '/console/settlements',
    operationId: 'consoleSettle',
    tag: 'console',
    summary:
      'Settle a day (the form’s date, YYYY-MM-DD in SETTLEMENT_TZ): its report as CSV, the first time by a run this starts; a run that outlasts the wait is followed on its page',
    access: { consoleScope: 'read' },
    responses: {
      '200': { description: 'the CSV file', content: { 'text/csv': { jsonSchema: textSchema } } },
      '303': redirectAnswer('to the page following the run'),
      '400': htmlAnswer('no date, or not one'),
      '422': htmlAnswer('a day that has not begun'),
      '503': htmlAnswer(
        'the day’s run is recorded but Temporal cannot start it just now: nothing checked yet; opening the report again starts it',
        { 'Retry-After': retryAfterHeader },
      ),
    },
  }),
  settlementLive: defineRoute({
    method: 'get',
    path: '/console/live/settlements/{date}',
    operationId: 'consoleSettlementLive',
    tag: 'console',
    summary: 'A day’s settlement run’s progress, pushed every second until its report is ready (Server-Sent Events)',
    access: { consoleScope: 'read' },
    params: { date: { schema: settlementDateSchema, description: 'the day, YYYY-MM-DD' } },
    responses: {
      '200': { description: 'an event stream', content: { 'text/event-stream': { jsonSchema: textSchema } } },
      '400': htmlAnswer('not a date'),
    },
  }),
};

export const accountsRoutes: readonly AnyRouteSpec[] = Object.values(routes);

/** Entries per page. */
const PAGE_SIZE = 50;
/** How often a settlement run's progress is pushed while its page is open. */
const SETTLEMENT_PROGRESS_EVERY_MS = 1000;

const settlementPath = (date: string) => `${CONSOLE_PATH}/settlements?date=${date}`;

/**
 * The form that settles a day (a POST: a run is work, started only by a person's form, never by a GET the browser makes
 * on its own).
 */
function settleForm(person: { csrfToken: string }, date: string, timeZone: string, button: string): string {
  return `<form method="post" action="${CONSOLE_PATH}/settlements">${csrfField(person)}<label for="settlement-date">Day (${escapeHtml(timeZone)})</label>
<input id="settlement-date" name="date" type="date" value="${escapeHtml(date)}" required>
<p class="muted">The day’s approved fundings and succeeded payments against the wallet’s records and the ledger, one line each, as CSV. A day is settled once, the first time its report is asked for (a page follows a big day’s run); today’s report is the day so far.</p>
<div class="actions"><button type="submit">${escapeHtml(button)}</button></div></form>`;
}

/** The live region of a day's settlement: the run's progress, or the download once its report is ready. */
function renderSettlement(answer: { kind: 'report' | 'running'; run: SettlementRun }, date: string): string {
  const { run } = answer;
  if (answer.kind === 'report') {
    return `<p class="progress-line"><strong>The report of ${date} is ready</strong>: ${run.summary ? run.summary.fundings.total.count + run.summary.payments.total.count : run.checked} fundings and payments checked.</p>
<p><a class="button" href="${escapeHtml(settlementPath(date))}" download>Download CSV</a></p>`;
  }
  const percent = run.total === 0 ? 0 : Math.floor((run.checked / run.total) * 100);
  return `<progress max="${Math.max(run.total, 1)}" value="${run.checked}" aria-label="Fundings and payments checked">${percent}%</progress>
<p class="progress-line"><strong>${run.checked} of ${run.total} fundings and payments checked (${percent}%)</strong>: each against the wallet and the ledger. The download appears here when the report is ready; you may leave this page and come back.</p>`;
}
/** Fundings listed as holding money on an account, newest first. */
const HOLDS_SHOWN = 20;

const accountPath = (segmentValue: string) => `${CONSOLE_PATH}/accounts/${segment(segmentValue)}`;

/** The adjustment form: a new Idempotency-Key for each form shown, so sending it twice posts once. */
function adjustmentForm(person: Parameters<typeof csrfField>[0], segmentValue: string): string {
  return `<form method="post" action="${escapeHtml(accountPath(segmentValue))}/adjustments" class="adjust" data-confirm="Post this adjustment to the ledger? It cannot be undone (a correction is another adjustment).">
${csrfField(person)}<input type="hidden" name="idempotencyKey" value="${randomUUID()}">
<label for="adjust-amount">Amount in ${acceptedCurrency} (a minus sign debits the account: -25.00)</label>
<input id="adjust-amount" name="amount" type="text" inputmode="decimal" pattern="-?[0-9]+(\\.[0-9]{1,2})?" autocomplete="off" required>
<label for="adjust-reason">Reason</label>
<textarea id="adjust-reason" name="reason" maxlength="500" required></textarea>
<div class="actions"><button type="submit">Post adjustment</button></div>
</form>`;
}

export function addAccountsRoutes(router: Router, deps: AccountsPageDependencies): void {
  const add = consoleRoutesOn(router);

  add(routes.accounts, (req, res) => {
    const person = personOf(res);
    const asked = queryText(req, 'partnerUserId', 128);
    if (asked !== undefined && accountPathSchema.safeParse(asked).success) {
      res.redirect(303, accountPath(asked));
      return;
    }
    // The last whole day: today's report would be the day so far.
    const yesterday = lastWholeDay(deps.now?.() ?? new Date(), deps.timeZone);
    const body = [
      asked !== undefined ? notice('A partner user id is 1 to 128 printable characters without spaces.', 'error') : '',
      card(
        'find-account',
        'A partner user’s account',
        `<form method="get" action="${CONSOLE_PATH}/accounts" role="search"><label for="account-user">Partner user id</label>
<input id="account-user" name="partnerUserId" type="search" maxlength="128" required><div class="actions"><button type="submit">Open the account</button></div></form>`,
      ),
      card(
        'system-accounts',
        'System accounts',
        `<ul>${systemAccounts.map((account) => `<li><a href="${accountPath(account)}">${account}</a></li>`).join('')}</ul>`,
      ),
      card('settlement', 'Settlement report', settleForm(person, yesterday, deps.timeZone, 'Download CSV')),
    ].join('\n');
    sendConsolePage(res, asked !== undefined ? 400 : 200, { title: 'Accounts', section: 'accounts', person, body });
  });

  add(routes.account, async (req, res) => {
    const person = personOf(res);
    const parsed = accountPathSchema.safeParse(req.params.account);
    if (!parsed.success) {
      sendRefused(res, 400, {
        person,
        section: 'accounts',
        title: 'Not an account',
        message: 'An account is TREASURY, another system account, or a partner user id.',
        back: { href: `${CONSOLE_PATH}/accounts`, label: 'Accounts' },
      });
      return;
    }
    const account = accountOfPathSegment(parsed.data);
    const partnerUserId = account.startsWith('USER:') ? account.slice(5) : null;
    const cursor = queryText(req, 'cursor', 64);
    const validCursor = cursor !== undefined && isEntriesCursor(cursor) ? cursor : undefined;
    const holds = isAdjustableAccount(account)
      ? fundingsHoldingOn(deps.database, partnerUserId, HOLDS_SHOWN)
      : Promise.resolve(null);
    const [view, currencies, entries, holding] = await Promise.all([
      deps.ledger.account(deps.database, account, acceptedCurrency),
      deps.ledger.currenciesOf(deps.database, account),
      deps.ledger.accountEntries(deps.database, {
        account,
        currency: acceptedCurrency,
        limit: PAGE_SIZE,
        ...(validCursor ? { cursor: validCursor } : {}),
      }),
      holds,
    ]);
    const tz = deps.timeZone;
    const done = doneOf(req, res);
    // Only an adjustment's id is echoed back (a crafted link cannot put words in the notice).
    const adjustmentText = queryText(req, 'adjustment', 20);
    const adjustment = adjustmentText !== undefined && /^\d+$/.test(adjustmentText) ? adjustmentText : undefined;
    const body = [
      done === 'adjusted' ? notice(`Adjustment ${adjustment ?? ''} posted under your name.`, 'ok') : '',
      done === 'already'
        ? notice(
            `This form was already sent: adjustment ${adjustment ?? ''} stands, and nothing was posted again.`,
            'ok',
          )
        : '',
      cursor !== undefined && !validCursor
        ? notice('That page of entries is not one this console gave: here is the newest.', 'error')
        : '',
      card(
        'account',
        account,
        `${facts([
          [
            'Account',
            partnerUserId === null ? escapeHtml(account) : `USER: ${idCell(partnerUserId, 'partner user id')}`,
          ],
          ['Balance (posted)', money(view.balance)],
          ['Held (fundings not final)', money(view.held)],
          ['Available', `<strong>${money(view.available)}</strong>`],
          ...(view.floor !== null
            ? ([['May go down to', `${escapeHtml(view.floor)} ${acceptedCurrency}`]] as const)
            : []),
          ...(currencies.some((currency) => currency !== acceptedCurrency)
            ? ([
                [
                  'Other currencies on record',
                  escapeHtml(currencies.filter((currency) => currency !== acceptedCurrency).join(', ')),
                ],
              ] as const)
            : []),
        ])}${partnerUserId === null ? '' : `<p><a href="${CONSOLE_PATH}/links?partnerUserId=${escapeHtml(encodeURIComponent(partnerUserId))}">Their linked wallets</a></p>`}`,
      ),
      isAdjustableAccount(account) && adjustmentScopes(account).every((scope) => may(person, scope))
        ? card('adjust', 'Adjust', adjustmentForm(person, parsed.data))
        : '',
      holding === null
        ? ''
        : card(
            'holds',
            'Held by',
            `${table(
              'Fundings holding money on this account, newest first',
              ['Funding', 'State', 'Amount', 'Requested'],
              holding.map((funding) => [
                linkedId(`${CONSOLE_PATH}/fundings/${funding.fundingId}`, funding.fundingId, 'funding id'),
                stateBadge(funding.status),
                money(funding.amount),
                when(funding.createdAt, tz),
              ]),
              new Set([2]),
            )}${holding.length === HOLDS_SHOWN ? `<p class="muted">The newest ${HOLDS_SHOWN} are shown.</p>` : ''}`,
          ),
      card(
        'entries',
        `Entries (${acceptedCurrency}), newest first`,
        `${ledgerEntriesTable(entries.items, tz, { withAccount: false })}${pager(entries.nextCursor ? consoleUrl(accountPath(parsed.data), { cursor: entries.nextCursor }) : null, 'Older entries')}`,
      ),
    ].join('\n');
    sendConsolePage(res, 200, { title: `Account ${account}`, section: 'accounts', person, body });
  });

  add(routes.adjustAccount, async (req, res) => {
    const person = personOf(res);
    const parsed = accountPathSchema.safeParse(req.params.account);
    const back = { href: accountPath(req.params.account), label: 'Back to the account' };
    const refuse = (status: number, message: string) =>
      sendRefused(res, status, {
        person,
        section: 'accounts',
        title: 'Not adjusted',
        message: `${message} Nothing was posted.`,
        back,
      });
    if (!parsed.success) {
      refuse(400, 'That is not an account.');
      return;
    }
    const lacking = adjustmentScopes(accountOfPathSegment(parsed.data)).filter((scope) => !may(person, scope));
    if (lacking.length > 0) {
      refuse(403, `Adjusting this account needs the ${lacking.join(' and ')} role.`);
      return;
    }
    const key = idempotencyKeySchema.safeParse(formField(req, 'idempotencyKey'));
    if (!key.success) {
      refuse(400, 'This form has no valid key: reload the page and fill it in again.');
      return;
    }
    const body = createAdjustmentSchema.safeParse({
      amount: { currency: acceptedCurrency, value: (formField(req, 'amount') ?? '').trim() },
      reason: formField(req, 'reason'),
    });
    if (!body.success) {
      refuse(400, `${body.error.issues.map((issue) => issue.message).join('; ')}.`);
      return;
    }
    const result = await deps.adjust({
      idempotencyKey: key.data,
      account: accountOfPathSegment(parsed.data),
      body: body.data,
      actor: person.name,
    });
    switch (result.kind) {
      case 'created':
      case 'existing':
        res.redirect(
          303,
          doneAddress(res, accountPath(parsed.data), {
            done: result.kind === 'created' ? 'adjusted' : 'already',
            adjustment: result.adjustment.adjustmentId,
          }),
        );
        return;
      case 'invalid-account':
        refuse(400, 'Only a partner user’s account or TREASURY can be adjusted.');
        return;
      case 'currency-refused':
      case 'insufficient-funds':
        refuse(422, `${result.detail}.`);
        return;
      case 'key-reused':
        refuse(422, 'This form was already sent with another amount or reason: reload the page for a fresh form.');
        return;
    }
  });

  /** A day's report as CSV (to a HEAD only its headers: csvStreams reads nothing for one). */
  const sendReport = async (res: Response, run: SettlementRun): Promise<void> => {
    consoleHeaders(res);
    await sendSettlementCsv(res, deps.csvStreams, deps.settlements, run);
  };

  const progressPage = (
    res: Response,
    person: SignedInPerson,
    answer: { kind: 'report' | 'running'; run: SettlementRun },
    date: string,
  ): void => {
    const body = card(
      'settlement-run',
      `Settling ${date}`,
      `<div id="settlement-progress" data-live="${escapeHtml(`${CONSOLE_PATH}/live/settlements/${date}`)}">${renderSettlement(answer, date)}</div>`,
    );
    sendConsolePage(res, 200, { title: `Settlement of ${date}`, section: 'accounts', person, body });
  };

  // A GET never starts a run (a prefetch, a HEAD, an image would): the report, the run's progress, or the form that
  // starts it.
  add(routes.settlement, async (req, res) => {
    const person = personOf(res);
    const date = settlementDateSchema.safeParse(queryText(req, 'date', 10));
    const back = { href: `${CONSOLE_PATH}/accounts`, label: 'Accounts' };
    if (!date.success) {
      sendRefused(res, 400, {
        person,
        section: 'accounts',
        title: 'No report',
        message: 'Choose a day (YYYY-MM-DD) for the settlement report.',
        back,
      });
      return;
    }
    const answer = await deps.settlements.current(date.data);
    switch (answer.kind) {
      case 'not-started':
        sendRefused(res, 422, {
          person,
          section: 'accounts',
          title: 'No report yet',
          message: `${date.data} has not begun in ${deps.timeZone}: there is nothing to settle yet.`,
          back,
        });
        return;
      case 'report':
        await sendReport(res, answer.run);
        return;
      case 'running':
        progressPage(res, person, answer, date.data);
        return;
      case 'none':
        sendConsolePage(res, 200, {
          title: `Settlement of ${date.data}`,
          section: 'accounts',
          person,
          body: card(
            'settlement',
            `Settlement of ${date.data}`,
            `<p>${escapeHtml(date.data)} has not been settled yet.</p>\n${settleForm(person, date.data, deps.timeZone, 'Settle and download CSV')}`,
          ),
        });
        return;
    }
  });

  // A person's form (its CSRF token checked): settles the day, the first time by a run this starts.
  add(routes.settle, async (req, res) => {
    const person = personOf(res);
    const date = settlementDateSchema.safeParse(formField(req, 'date'));
    const back = { href: `${CONSOLE_PATH}/accounts`, label: 'Accounts' };
    if (!date.success) {
      sendRefused(res, 400, {
        person,
        section: 'accounts',
        title: 'No report',
        message: 'Choose a day (YYYY-MM-DD) for the settlement report.',
        back,
      });
      return;
    }
    let answer: Awaited<ReturnType<typeof deps.settlements.settle>>;
    try {
      answer = await deps.settlements.settle(date.data, { requestedBy: person.name, signal: clientGone(res) });
    } catch (error) {
      if (!(error instanceof WorkflowUnavailableError)) throw error;
      // The day's run is recorded but Temporal could not start it: this page, reloaded, starts it.
      res.setHeader('Retry-After', String(error.refusal.retryAfterSeconds));
      const message = `The settlement of ${date.data} could not start just now (${refusalWords[error.refusal.reason]}): ${startedWords(error.refusal, 'nothing has been checked yet.')} Its run is recorded: send the form again in ${error.refusal.retryAfterSeconds} seconds to start it.`;
      sendRefused(res, 503, { person, section: 'accounts', title: 'Not started yet', message, back });
      return;
    }
    if (answer.kind === 'not-started') {
      sendRefused(res, 422, {
        person,
        section: 'accounts',
        title: 'No report yet',
        message: `${date.data} has not begun in ${deps.timeZone}: there is nothing to settle yet.`,
        back,
      });
      return;
    }
    if (answer.kind === 'report') {
      await sendReport(res, answer.run);
      return;
    }
    // A big day: its page follows the run (a GET, which only reads it).
    res.redirect(303, settlementPath(date.data));
  });

  add(routes.settlementLive, async (req, res) => {
    const person = personOf(res);
    const date = settlementDateSchema.safeParse(req.params.date);
    if (!date.success) {
      sendRefused(res, 400, {
        person,
        section: 'accounts',
        title: 'Not a day',
        message: 'A day is YYYY-MM-DD.',
        back: { href: `${CONSOLE_PATH}/accounts`, label: 'Accounts' },
      });
      return;
    }
    await deps.liveStreams.stream(
      req,
      res,
      async () => {
        // Only reads the run: a stream the page opens by itself starts nothing.
        const answer = await deps.settlements.current(date.data);
        if (answer.kind === 'not-started') return { html: notice('That day has not begun.', 'error'), done: true };
        // No run of the day is working now, and none that finished serves it (today's run that ended after midnight
        // covers the day so far only): the form settles it; a reload would not (a GET starts nothing).
        if (answer.kind === 'none')
          return {
            html: `${notice(`No settlement of ${date.data} is running now: send the form to settle it.`, 'error')}
${settleForm(person, date.data, deps.timeZone, 'Settle and download CSV')}`,
            done: true,
          };
        return { html: renderSettlement(answer, date.data), done: answer.kind === 'report' };
      },
      SETTLEMENT_PROGRESS_EVERY_MS,
    );
  });
}
