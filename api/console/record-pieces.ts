// Tables a funding's and a payment's pages (and the webhooks and accounts pages) share: the wallet
// calls behind a record by Request-Reference-No, ledger entries with what moved them, and webhook
// deliveries with their last attempt. Never a body, a token, a secret or a whole code.
import type { WalletCallView } from '../../audit/wallet-call-log.ts';
import { LOGGED_COUNT_LIMIT, type WebhookDeliveryView } from '../../domain/webhook.ts';
import { actorNamedIn, isWalletUser } from '../../domain/actor.ts';
import type { LedgerEntryDetail } from '../../ledger/ledger.ts';
import { CONSOLE_PATH, escapeHtml, idCell, money, stateBadge, table, when } from './console-layout.ts';
import { card, linkedId, segment } from './page-pieces.ts';
import { reviewDetails, type ReviewShown } from './review-pieces.ts';

/** Who an event names as having acted, as the console shows it: a wallet user says so; none: walletflow itself. */
function byWhom(detail: string | null): string {
  const actor = actorNamedIn(detail);
  if (actor === null) return 'walletflow';
  return isWalletUser(actor) ? `wallet user ${actor}` : actor;
}

/** A funding's or a payment's history, as both pages show it below their facts. */
export interface RecordHistory {
  noun: 'funding' | 'payment';
  status: string;
  review: ReviewShown | null;
  events: ReadonlyArray<{ at: string; status: string; requestReferenceNo: string | null; detail: string | null }>;
  calls: readonly WalletCallView[];
  entries: readonly LedgerEntryDetail[];
  deliveries: readonly WebhookDeliveryView[];
}

/**
 * The cards below a funding's or a payment's facts: its review (when it has one, marked while it
 * waits), its timeline of events with who acted, the wallet calls behind it, its ledger entries
 * and its webhook deliveries.
 */
export function recordHistoryCards(record: RecordHistory, timeZone: string): string[] {
  return [
    record.review
      ? card('review', 'Review', reviewDetails(record.review, timeZone), record.status === 'NEEDS_REVIEW')
      : '',
    card(
      'timeline',
      'Timeline',
      table(
        `The ${record.noun}’s events, oldest first`,
        ['When', 'State', 'By', 'Request-Reference-No', 'What happened'],
        record.events.map((event) => [
          when(event.at, timeZone),
          stateBadge(event.status),
          escapeHtml(byWhom(event.detail)),
          event.requestReferenceNo ? idCell(event.requestReferenceNo, 'Request-Reference-No') : '',
          escapeHtml(event.detail ?? ''),
        ]),
      ),
    ),
    card('calls', 'Wallet calls', walletCallsTable(record.calls, timeZone)),
    card('ledger', 'Ledger entries', ledgerEntriesTable(record.entries, timeZone)),
    card('webhooks', 'Webhook deliveries', deliveriesTable(record.deliveries, timeZone)),
  ];
}

/** The wallet calls behind a record, oldest first: operation, status and outcome by Request-Reference-No. */
export function walletCallsTable(calls: readonly WalletCallView[], timeZone: string): string {
  return table(
    'Wallet calls, oldest first',
    ['When', 'Request-Reference-No', 'Operation', 'HTTP status', 'Outcome', 'Error code', 'Took'],
    calls.map((call) => [
      when(call.startedAt, timeZone),
      idCell(call.requestReferenceNo, 'Request-Reference-No'),
      `${escapeHtml(call.operation)} <span class="muted">${escapeHtml(call.method)}</span>`,
      call.httpStatus === null ? '<span class="muted">no answer</span>' : String(call.httpStatus),
      escapeHtml(call.outcome),
      escapeHtml(call.errorCode ?? ''),
      `${call.durationMs} ms`,
    ]),
    new Set([6]),
  );
}

/** An account's name as a link to its page (a user's account by its partner user id). */
export function accountLink(account: string): string {
  const target = account.startsWith('USER:') ? account.slice(5) : account;
  return `<a href="${CONSOLE_PATH}/accounts/${escapeHtml(segment(target))}">${escapeHtml(account)}</a>`;
}

/**
 * Ledger entries: when, what moved them (and who, for an adjustment), the account, the signed amount, held or posted.
 */
export function ledgerEntriesTable(
  entries: readonly LedgerEntryDetail[],
  timeZone: string,
  options: { withAccount?: boolean } = {},
): string {
  const withAccount = options.withAccount ?? true;
  return table(
    'Ledger entries',
    ['When', 'Kind', ...(withAccount ? ['Account'] : []), 'Amount', 'Held or posted', 'Reference', 'By, and why'],
    entries.map((entry) => [
      when(entry.at, timeZone),
      escapeHtml(entry.kind),
      ...(withAccount ? [accountLink(entry.account)] : []),
      money(entry.amount),
      entry.pending ? 'held' : 'posted',
      idCell(entry.reference, 'reference'),
      entry.actor
        ? `${escapeHtml(entry.actor)}${entry.reason ? `: ${escapeHtml(entry.reason)}` : ''}`
        : '<span class="muted">walletflow</span>',
    ]),
    new Set([withAccount ? 3 : 2]),
  );
}

/** How many attempts a delivery has had, as counted (LOGGED_COUNT_LIMIT and more: "1,000 or more"). */
export function attemptsLogged(delivery: Pick<WebhookDeliveryView, 'logged'>): string {
  return delivery.logged >= LOGGED_COUNT_LIMIT
    ? `${LOGGED_COUNT_LIMIT.toLocaleString('en-US')} or more`
    : String(delivery.logged);
}

/** Webhook deliveries: the event, the endpoint, the state, the attempts and the last answer. */
export function deliveriesTable(
  deliveries: readonly WebhookDeliveryView[],
  timeZone: string,
  options: { withEndpoint?: boolean } = {},
): string {
  const withEndpoint = options.withEndpoint ?? true;
  return table(
    'Webhook deliveries',
    ['Delivery', 'Event', ...(withEndpoint ? ['Endpoint'] : []), 'State', 'Attempts', 'Last answer', 'Created'],
    deliveries.map((delivery) => {
      const last = delivery.log.at(-1);
      return [
        linkedId(`${CONSOLE_PATH}/webhooks/deliveries/${delivery.id}`, delivery.id, 'delivery id'),
        `${escapeHtml(delivery.eventType)} ${idCell(delivery.eventId, 'event id')}`,
        ...(withEndpoint
          ? [linkedId(`${CONSOLE_PATH}/webhooks/${delivery.endpointId}`, delivery.endpointId, 'endpoint id')]
          : []),
        stateBadge(delivery.status),
        attemptsLogged(delivery),
        last
          ? `${last.statusCode === null ? escapeHtml(last.error ?? 'no answer') : `HTTP ${last.statusCode}`} ${when(last.at, timeZone)}`
          : '<span class="muted">not tried yet</span>',
        when(delivery.createdAt, timeZone),
      ];
    }),
  );
}
