// The console's home: today's fundings and payments by state with their amounts (the day in
// SETTLEMENT_TZ), the review queue, batches waiting for approval and those running with their
// progress, webhook endpoints that fail and their dead letters, and the treasury's available
// balance, each endpoint's address masked. It needs the read scope, as the ops API's routes it
// mirrors do. It keeps itself up to date (a live region: api/console/live-region.ts).
import type { Router } from 'express';
import { amountOf, moneyOf, type StatusTotal } from '../../domain/money.ts';
import type { BatchView } from '../../domain/funding-batch.ts';
import { fundingsInReview, fundingTotalsOn } from '../../fundings/funding-totals.ts';
import { settlementDay, settlementDayOf } from '../../ledger/settlement.ts';
import type { OpsScope } from '../../lib/ops-keys.ts';
import { sharedRead } from '../../lib/shared-read.ts';
import { paymentsInReview, paymentTotalsOn } from '../../payments/payment-totals.ts';
import { HEALTH_COUNT_LIMIT } from '../../webhooks/webhook-store.ts';
import type { ConsoleServices } from './console-services.ts';
import { defineRoute, htmlAnswer, textSchema, type AnyRouteSpec } from '../http/route-spec.ts';
import { consoleRoutesOn, personOf } from './console-auth.ts';
import { CONSOLE_PATH, escapeHtml, money, sendConsolePage, stateBadge, table } from './console-layout.ts';

export type HomeDependencies = Pick<
  ConsoleServices,
  'database' | 'batches' | 'ledger' | 'webhooks' | 'liveStreams' | 'timeZone' | 'now'
>;

const routes = {
  home: defineRoute({
    method: 'get',
    path: '/console',
    operationId: 'consoleHome',
    tag: 'console',
    summary: 'Home: today’s money, what waits for a person, batches, webhooks, the treasury',
    access: { consoleScope: 'read' },
    responses: { '200': htmlAnswer('the page') },
  }),
  homeLive: defineRoute({
    method: 'get',
    path: '/console/live/home',
    operationId: 'consoleHomeLive',
    tag: 'console',
    summary: 'The home page’s figures, pushed every few seconds (Server-Sent Events)',
    access: { consoleScope: 'read' },
    responses: {
      '200': { description: 'an event stream', content: { 'text/event-stream': { jsonSchema: textSchema } } },
    },
  }),
};

export const homeRoutes: readonly AnyRouteSpec[] = Object.values(routes);

/** How often the home's figures are sent again while it is open. */
const HOME_EVERY_MS = 5000;

function totalsTable<Status extends string>(caption: string, totals: Array<StatusTotal<Status>>): string {
  return table(
    caption,
    ['State', 'Count', 'Amount'],
    totals.map((total) => [
      stateBadge(total.status),
      String(total.count),
      money(amountOf(total.amount, total.currency)),
    ]),
    new Set([1, 2]),
  );
}

function batchProgress(batch: BatchView): string {
  const done =
    batch.total.count -
    ((batch.counts.PENDING ?? 0) +
      (batch.counts.CREATING ?? 0) +
      (batch.counts.EXECUTING ?? 0) +
      (batch.counts.RECONCILING ?? 0));
  const percent = batch.total.count === 0 ? 100 : Math.floor((done / batch.total.count) * 100);
  return `<progress max="100" value="${percent}" aria-label="${escapeHtml(batch.name)}: ${percent}% done">${percent}%</progress>
<span class="muted">${done} of ${batch.total.count} done${batch.itemsPerSecond ? `, ${batch.itemsPerSecond}/s` : ''}${batch.etaSeconds ? `, about ${batch.etaSeconds} s left` : ''}</span>`;
}

/**
 * What the treasury may still pay out, where it has a floor (TREASURY_LIMIT): its available balance
 * may go down to the floor, so a negative available balance is not, by itself, a problem.
 */
export function treasuryRoom(treasury: {
  available: { currency: string; value: string };
  floor: string | null;
}): string {
  if (treasury.floor === null) return '';
  const floor = moneyOf({ currency: treasury.available.currency, value: treasury.floor });
  const room = moneyOf(treasury.available).thousandths - floor.thousandths;
  return `<p class="muted">It may go down to ${money(amountOf(floor))}: ${money(amountOf(room, floor.currency))} more can be paid out.</p>`;
}

/**
 * What the home shows, read for the day of `date` (its fundings and payments: a scan of the day's rows outside batches,
 * 100,000 a day at volume). One read serves every home page of this process for most of a live round
 * (HOME_FRESH_SHARE); a page loaded reads them afresh.
 */
async function readFigures(deps: HomeDependencies, date: string) {
  const day = settlementDay(date, deps.timeZone);
  const [fundings, payments, fundingReviews, paymentReviews, awaiting, running, failing, treasury] = await Promise.all([
    fundingTotalsOn(deps.database, day),
    paymentTotalsOn(deps.database, day),
    fundingsInReview(deps.database),
    paymentsInReview(deps.database),
    deps.batches.list({ state: 'AWAITING_APPROVAL', limit: 20 }),
    deps.batches.list({ state: 'RUNNING', limit: 20 }),
    deps.webhooks.health(),
    deps.ledger.account(deps.database, 'TREASURY'),
  ]);
  return { day, fundings, payments, fundingReviews, paymentReviews, awaiting, running, failing, treasury };
}

type Figures = Awaited<ReturnType<typeof readFigures>>;

/**
 * How long one read of the figures serves the home pages after it, as a part of the live region's pace (HOME_EVERY_MS
 * here): under it, so a page is never pushed the same read twice, and ten pages open read the day once a round, not
 * ten times.
 */
const HOME_FRESH_SHARE = 0.8;

/** The figures, as the page and its live region show them, for a person with `scopes`. */
function renderFigures(figures: Figures, scopes: ReadonlySet<OpsScope>): string {
  const { day, fundings, payments, fundingReviews, paymentReviews, awaiting, running, failing, treasury } = figures;
  const reviews = fundingReviews + paymentReviews;
  // An endpoint counted past the limit adds the limit: the sum is then a bound the page says "more than" of.
  const deadLetters = failing.reduce((sum, endpoint) => sum + Math.min(endpoint.deadLetters, HEALTH_COUNT_LIMIT), 0);
  // A count past HEALTH_COUNT_LIMIT stopped there (webhook-store.ts): said as "more than".
  const countOf = (count: number) =>
    count > HEALTH_COUNT_LIMIT ? `more than ${HEALTH_COUNT_LIMIT.toLocaleString('en')}` : count.toLocaleString('en');
  const past = failing.some((endpoint) => endpoint.deadLetters > HEALTH_COUNT_LIMIT);
  const cards = [
    `<section class="card wide" aria-labelledby="h-fundings"><h2 id="h-fundings">Fundings today (${escapeHtml(day.date)})</h2>${totalsTable('Fundings today by state', fundings)}</section>`,
    `<section class="card wide" aria-labelledby="h-payments"><h2 id="h-payments">Payments today</h2>${totalsTable('Payments today by state', payments)}</section>`,
    `<section class="card${reviews > 0 ? ' attention' : ''}" aria-labelledby="h-review"><h2 id="h-review">Review queue</h2>
<p class="figure">${reviews}</p><p class="muted">${fundingReviews} funding${fundingReviews === 1 ? '' : 's'}, ${paymentReviews} payment${paymentReviews === 1 ? '' : 's'} wait for a person.</p>
<p><a href="${CONSOLE_PATH}/review">Open the review queue</a></p></section>`,
    `<section class="card${(awaiting?.items.length ?? 0) > 0 ? ' attention' : ''}" aria-labelledby="h-awaiting"><h2 id="h-awaiting">Batches awaiting approval</h2>${
      awaiting && awaiting.items.length > 0
        ? `<ul>${awaiting.items.map((batch) => `<li><a href="${CONSOLE_PATH}/batches/${batch.batchId}">${escapeHtml(batch.name)}</a>: ${money(batch.total.amount)}, ${batch.total.count} items, by ${escapeHtml(batch.createdBy)}</li>`).join('')}</ul>${scopes.has('approve') ? '' : '<p class="muted">Approving needs the approve scope.</p>'}`
        : '<p class="muted">None.</p>'
    }</section>`,
    `<section class="card" aria-labelledby="h-running"><h2 id="h-running">Running batches</h2>${
      running && running.items.length > 0
        ? running.items
            .map(
              (batch) =>
                `<div><a href="${CONSOLE_PATH}/batches/${batch.batchId}">${escapeHtml(batch.name)}</a>${batchProgress(batch)}</div>`,
            )
            .join('')
        : '<p class="muted">None.</p>'
    }</section>`,
    `<section class="card${failing.length > 0 ? ' attention' : ''}" aria-labelledby="h-webhooks"><h2 id="h-webhooks">Webhooks</h2>${
      failing.length > 0
        ? `<p>${past ? 'more than ' : ''}${deadLetters.toLocaleString('en')} dead letter${deadLetters === 1 ? '' : 's'}.</p>${table(
            'Failing webhook endpoints',
            ['Endpoint', 'Dead letters', 'Retrying'],
            failing.map((endpoint) => [
              `<a href="${CONSOLE_PATH}/webhooks/${endpoint.endpointId}">${escapeHtml(endpoint.maskedUrl)}</a>`,
              countOf(endpoint.deadLetters),
              countOf(endpoint.retrying),
            ]),
            new Set([1, 2]),
          )}`
        : '<p class="muted">Every endpoint is delivering.</p>'
    }</section>`,
    `<section class="card" aria-labelledby="h-treasury"><h2 id="h-treasury">Treasury</h2><p class="figure">${money(treasury.available)}</p><p class="muted">available (balance ${money(treasury.balance)}, held ${money(treasury.held)})</p>${treasuryRoom(treasury)}
<p><a href="${CONSOLE_PATH}/accounts/TREASURY">Its entries</a></p></section>`,
  ];
  return `<div class="grid">${cards.join('\n')}</div>`;
}

export function addHomeRoutes(router: Router, deps: HomeDependencies): void {
  const add = consoleRoutesOn(router);
  const figuresOf = sharedRead((date) => readFigures(deps, date), {
    freshMs: deps.liveStreams.paceOf(HOME_EVERY_MS) * HOME_FRESH_SHARE,
  });
  /** A page loaded reads afresh (it shows every write made before it); its live region's pushes share a read. */
  const figures = (scopes: ReadonlySet<OpsScope>, how: 'fresh' | 'shared') =>
    figuresOf[how](settlementDayOf(deps.now?.() ?? new Date(), deps.timeZone).date).then((read) =>
      renderFigures(read, scopes),
    );

  add(routes.home, async (_req, res) => {
    const person = personOf(res);
    sendConsolePage(res, 200, {
      title: 'Home',
      section: 'home',
      person,
      body: `<div id="home-figures" data-live="${CONSOLE_PATH}/live/home">${await figures(person.scopes, 'fresh')}</div>`,
    });
  });

  add(routes.homeLive, async (req, res) => {
    const person = personOf(res);
    await deps.liveStreams.stream(
      req,
      res,
      async () => ({ html: await figures(person.scopes, 'shared') }),
      HOME_EVERY_MS,
    );
  });
}
