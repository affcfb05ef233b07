// One batch in the console: what it is (who uploaded it, from which source, its total), its
// progress as a live region the server pushes every second until the batch has ended (the bar,
// done of total, the rate, the time left, who approved it, the items counted and summed by state),
// the buttons the person's scopes and the batch's state allow, and its items a page at a time,
// filtered by status. Reads go through the batch service, exactly as GET /ops/funding-batches/…
// does.
import {
  batchItemStatuses,
  batchStates,
  type BatchItemView,
  type BatchState,
  type BatchView,
} from '../../domain/funding-batch.ts';
import { escapeHtml } from '../../lib/html.ts';
import {
  CONSOLE_PATH,
  csrfField,
  idCell,
  money,
  notice,
  stateBadge,
  table,
  when,
  type SignedInPerson,
} from './console-layout.ts';

/** The batch's moves, as their routes name them, and what the page says once one is done. */
export const batchMoves = ['approve', 'reject', 'pause', 'resume', 'cancel'] as const;
export type BatchMove = (typeof batchMoves)[number];

/** What the batch page says after a write sent the person back to it (`?did=`): fixed words only. */
export const doneNotices = {
  created: 'The batch is stored and its total is held.',
  existing: 'This form had already been sent: this is the batch it made. Nothing new was stored.',
  approve: 'You approved the batch: it runs now.',
  reject: 'You rejected the batch: no item will start, and its hold is released.',
  pause: 'You paused the batch: no new item starts; items already started finish.',
  resume: 'You resumed the batch: its items start again.',
  cancel:
    'You cancelled the batch: items not yet started are cancelled and their share released; items already started finish.',
  // Temporal could not start the batch's runner just now (lib/workflow-unavailable.ts): what is stored stands, the
  // sweep starts the runner.
  'stored-waiting':
    'The batch is stored and its total is held, but walletflow could not start its run just now, or did not hear that it started (its workflows did not answer): the counts below say whether any item has started. If none has, it starts on its own at the next sweep, within minutes. Do not upload the file again: that would make a second batch.',
  'approve-waiting':
    'You approved the batch, but walletflow could not start its run just now, or did not hear that it started (its workflows did not answer): the counts below say whether any item has started. If none has, it starts on its own at the next sweep, within minutes; your approval stands.',
} as const;
export type DoneNotice = keyof typeof doneNotices;

export const batchPath = (batchId: string): string => `${CONSOLE_PATH}/batches/${batchId}`;
export const batchLivePath = (batchId: string): string => `${CONSOLE_PATH}/live/batches/${batchId}`;

const unfinishedStatuses = ['PENDING', 'CREATING', 'EXECUTING', 'RECONCILING'] as const;
const endedStates: ReadonlySet<BatchState> = new Set(['COMPLETED', 'CANCELLED', 'REJECTED']);

/** Items not final and not in review: a cancelled batch's started items still finish. */
const unfinishedOf = (batch: BatchView): number =>
  unfinishedStatuses.reduce((sum, status) => sum + (batch.counts[status] ?? 0), 0);

/** True once nothing about the batch will change any more: its live region stops. */
export const batchHasEnded = (batch: BatchView): boolean => endedStates.has(batch.state) && unfinishedOf(batch) === 0;

/** Seconds as people say them: `45 s`, `3 min 20 s`, `2 h 5 min`. */
export function duration(seconds: number): string {
  const whole = Math.max(0, Math.round(seconds));
  if (whole < 60) return `${whole} s`;
  if (whole < 3600) return `${Math.floor(whole / 60)} min ${whole % 60} s`;
  return `${Math.floor(whole / 3600)} h ${Math.floor((whole % 3600) / 60)} min`;
}

export const sourceText = (batch: Pick<BatchView, 'source'>): string =>
  batch.source.type === 'TREASURY' ? 'The treasury' : `${escapeHtml(batch.source.partnerUserId)}’s balance`;

/** Why no time left is shown while items wait. */
const waitingWords: Record<BatchState, string> = {
  AWAITING_APPROVAL: 'nothing starts before it is approved',
  RUNNING: 'time left not known yet',
  PAUSED: 'paused: no new item starts',
  COMPLETED: 'nothing left to do',
  CANCELLED: 'items already started are finishing',
  REJECTED: 'nothing starts',
};

/** Every state and status the counts table may hold, in the order a batch moves through them. */
const countOrder = [...batchItemStatuses];

/**
 * The live region's render: the same HTML on the page and in every push. `shown` is the state the
 * page was drawn in; when the batch has moved on, the region says so (the buttons are the page's,
 * drawn for that state).
 */
export function renderProgress(batch: BatchView, shown: BatchState | undefined, timeZone: string): string {
  const total = batch.total.count;
  const unfinished = unfinishedOf(batch);
  const done = total - unfinished;
  const percent = total === 0 ? 100 : Math.floor((done / total) * 100);
  const rate = batch.itemsPerSecond === null ? 'no rate yet' : `${batch.itemsPerSecond} items a second`;
  const left =
    batch.etaSeconds !== null
      ? `about ${duration(batch.etaSeconds)} left`
      : unfinished === 0
        ? 'nothing left to do'
        : waitingWords[batch.state];
  const moved =
    shown !== undefined && shown !== batch.state
      ? notice(`The batch is now ${batch.state}. Reload the page for what you may do with it now.`)
      : '';
  const approval = batch.approvedBy
    ? escapeHtml(batch.approvedBy)
    : batch.state === 'AWAITING_APPROVAL'
      ? 'waiting for another person’s approval'
      : batch.state === 'REJECTED'
        ? 'nobody: it was rejected'
        : // Never started and not approved: it ended while it waited (cancelled).
          batch.startedAt === null
          ? 'nobody: it ended before approval'
          : 'no approval was needed';
  // Three narrow columns that fit any screen: no scrolling box, so nothing in this region takes the
  // focus (it is drawn again every second, and a focused element would be lost with it).
  const counts = `<table class="counts"><caption class="sr-only">Items by state</caption><thead><tr><th scope="col">State</th><th scope="col" class="num">Items</th><th scope="col" class="num">Amount</th></tr></thead><tbody>${countOrder
    .filter((status) => batch.counts[status] !== undefined)
    .map(
      (status) =>
        `<tr><td>${stateBadge(status)}</td><td class="num">${batch.counts[status]}</td><td class="num">${batch.amounts[status] ? money(batch.amounts[status]) : ''}</td></tr>`,
    )
    .join('')}</tbody></table>`;
  return `${moved}<dl class="facts">
<dt>State</dt><dd>${stateBadge(batch.state)}</dd>
<dt>Approved by</dt><dd>${approval}</dd>
<dt>Started</dt><dd>${batch.startedAt ? when(batch.startedAt, timeZone) : 'not yet'}</dd>
<dt>Completed</dt><dd>${batch.completedAt ? when(batch.completedAt, timeZone) : 'not yet'}</dd>
</dl>
<progress max="${total}" value="${done}" aria-label="Items done">${percent}%</progress>
<p class="progress-line"><strong>${done} of ${total} items done (${percent}%)</strong>: ${rate}, ${left}.</p>
${counts}`;
}

/** A move's button, in a form of its own (POST, the CSRF field; a question before an act that cannot be undone). */
function moveButton(
  batchId: string,
  move: BatchMove,
  person: SignedInPerson,
  label: string,
  question?: string,
): string {
  const confirm = question ? ` data-confirm="${escapeHtml(question)}"` : '';
  const tone = question ? ' class="danger"' : move === 'approve' ? '' : ' class="secondary"';
  return `<form method="post" action="${batchPath(batchId)}/${move}"${confirm}>${csrfField(person)}<button type="submit"${tone}>${label}</button></form>`;
}

/** The buttons this person may press for the batch in its state; none they may not. */
export function renderActions(batch: BatchView, person: SignedInPerson, isMaker: boolean): string {
  const buttons: string[] = [];
  const notes: string[] = [];
  const id = batch.batchId;
  if (batch.state === 'AWAITING_APPROVAL' && person.scopes.has('approve')) {
    // Maker-checker: the one who uploaded it never approves it (compared by identity, as the service does).
    if (isMaker) notes.push('You uploaded this batch: another person with the approve scope approves or rejects it.');
    else {
      buttons.push(moveButton(id, 'approve', person, 'Approve'));
      buttons.push(
        moveButton(
          id,
          'reject',
          person,
          'Reject',
          `Reject the batch “${batch.name}”? No item will start, and its hold is released.`,
        ),
      );
    }
  }
  if (person.scopes.has('fund')) {
    if (batch.state === 'RUNNING') buttons.push(moveButton(id, 'pause', person, 'Pause'));
    if (batch.state === 'PAUSED') buttons.push(moveButton(id, 'resume', person, 'Resume'));
    if (batch.state === 'AWAITING_APPROVAL' || batch.state === 'RUNNING' || batch.state === 'PAUSED') {
      buttons.push(
        moveButton(
          id,
          'cancel',
          person,
          'Cancel the batch',
          `Cancel the batch “${batch.name}”? Items not yet started will not start; this cannot be undone.`,
        ),
      );
    }
  }
  return `${notes.map((text) => `<p class="muted">${escapeHtml(text)}</p>`).join('')}${buttons.length > 0 ? `<div class="actions">${buttons.join('')}</div>` : ''}`;
}

export interface ItemsPage {
  items: BatchItemView[];
  nextCursor: string | null;
  /** The filter and the page shown. */
  status: BatchItemView['status'] | undefined;
  cursor: string | undefined;
}

/** The items table with its status filter and its pages (cursor: the last reference shown). */
export function renderItems(batchId: string, page: ItemsPage): string {
  const base = batchPath(batchId);
  const query = (cursor?: string) => {
    const params = new URLSearchParams();
    if (page.status) params.set('status', page.status);
    if (cursor) params.set('cursor', cursor);
    const text = params.toString();
    return `${base}${text ? `?${text}` : ''}#items`;
  };
  const options = [
    `<option value="">Every status</option>`,
    ...batchItemStatuses.map(
      (status) => `<option value="${status}"${status === page.status ? ' selected' : ''}>${status}</option>`,
    ),
  ].join('');
  const rows = page.items.map((item) => [
    `<span class="id">${escapeHtml(item.reference)}</span>`,
    idCell(item.fundingId, `funding id of ${item.reference}`),
    stateBadge(item.status),
    item.errorCode ? `<code>${escapeHtml(item.errorCode)}</code>` : '',
    money(item.amount),
  ]);
  const pager = [
    page.cursor ? `<a href="${escapeHtml(query())}">First page</a>` : '',
    page.nextCursor ? `<a href="${escapeHtml(query(page.nextCursor))}">Next page</a>` : '',
  ].filter(Boolean);
  return `<form method="get" action="${base}#items" class="actions filter">
<div><label for="item-status">Status</label><select id="item-status" name="status">${options}</select></div>
<button type="submit" class="secondary">Show</button>
</form>
${page.items.length === 0 ? `<p class="muted">${page.status ? `No item is ${escapeHtml(page.status)}${page.cursor ? ' past this page' : ''}.` : 'No items on this page.'}</p>` : table(`Items${page.status ? ` ${page.status}` : ''}, by reference`, ['Reference', 'Funding id', 'Status', 'Error', 'Amount'], rows, new Set([4]))}
${pager.length > 0 ? `<nav class="pager" aria-label="Pages of items">${pager.join('')}</nav>` : ''}`;
}

/** The whole page's body. */
export function renderBatchPage(
  batch: BatchView,
  person: SignedInPerson,
  items: ItemsPage,
  timeZone: string,
  isMaker: boolean,
  message?: string,
): string {
  const id = batch.batchId;
  return `${message ?? ''}<section class="card" aria-labelledby="h-batch"><h2 id="h-batch">The batch</h2>
<dl class="facts">
<dt>Id</dt><dd>${idCell(id, 'batch id')}</dd>
<dt>Uploaded by</dt><dd>${escapeHtml(batch.createdBy)}</dd>
<dt>Uploaded</dt><dd>${when(batch.createdAt, timeZone)}</dd>
<dt>Paid from</dt><dd>${sourceText(batch)}</dd>
<dt>Total</dt><dd>${batch.total.count} items, ${money(batch.total.amount)}</dd>
</dl>
${renderActions(batch, person, isMaker)}
<p class="report-link"><a href="${batchPath(id)}/report" download>Download the report</a> <span class="muted">(CSV: one line per item, with its funding id, status and error)</span></p>
</section>
<section class="card" aria-labelledby="h-progress"><h2 id="h-progress">Progress</h2>
<div id="batch-progress" data-live="${escapeHtml(`${batchLivePath(id)}?shown=${batch.state}`)}">${renderProgress(batch, batch.state, timeZone)}</div>
</section>
<section class="card" id="items" aria-labelledby="h-items"><h2 id="h-items">Items</h2>
${renderItems(id, items)}
</section>`;
}

export const isBatchState = (value: unknown): value is BatchState =>
  typeof value === 'string' && (batchStates as readonly string[]).includes(value);
