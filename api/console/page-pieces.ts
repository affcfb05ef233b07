// What the console's record pages share beyond the layout (console-layout.ts): reading a query or a
// form field safely, facts as a definition list, a section card, the next page's link, the
// notice a page shows after a write sent the person back to it (POST, then a redirect: a reload
// never sends the form again; its address carries a proof that this session's write sent it
// there, so a link someone made cannot have a page say the reader did what they did not), the page
// that says why a write was refused (and the words for a resolution its workflow could not take),
// and the link to a workflow in the Temporal UI. Every value is escaped here or by the caller's
// pieces.
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Request, Response } from 'express';
import { personOf } from './console-auth.ts';
import type { OpsScope } from '../../lib/ops-keys.ts';
import { refusalWords, type WorkflowRefusal } from '../../lib/workflow-unavailable.ts';
import type { ConsoleServices } from './console-services.ts';
import {
  CONSOLE_PATH,
  escapeHtml,
  notice,
  sendConsolePage,
  type ConsoleSection,
  type SignedInPerson,
} from './console-layout.ts';

/** A query parameter as one string of printable characters, at most `max` long; else undefined. */
export function queryText(req: Request, name: string, max = 255): string | undefined {
  const value = (req.query as Record<string, unknown>)[name];
  if (typeof value !== 'string') return undefined;
  const trimmed = value.trim();
  // No control characters: they would only ever be a mistake or an attack in a search or a filter.
  return trimmed.length > 0 &&
    trimmed.length <= max &&
    ![...trimmed].some((char) => char.charCodeAt(0) < 0x20 || char.charCodeAt(0) === 0x7f)
    ? trimmed
    : undefined;
}

/** A form field as sent (a string), or undefined (absent, or sent twice). */
export function formField(req: Request, name: string): string | undefined {
  const value = (req.body as Record<string, unknown> | undefined)?.[name];
  return typeof value === 'string' ? value : undefined;
}

/** Whether the person may do what `scope` allows: a form they may not use is not shown. */
export const may = (person: SignedInPerson, scope: OpsScope): boolean => person.scopes.has(scope);

/** Facts about a record: each value already HTML. */
export function facts(rows: ReadonlyArray<readonly [string, string]>): string {
  return `<dl class="facts">${rows.map(([name, value]) => `<dt>${escapeHtml(name)}</dt><dd>${value}</dd>`).join('')}</dl>`;
}

/** A card with a heading (its id names the section for screen readers). */
export const card = (id: string, title: string, body: string, attention = false): string =>
  `<section class="card${attention ? ' attention' : ''}" aria-labelledby="h-${id}"><h2 id="h-${id}">${escapeHtml(title)}</h2>${body}</section>`;

/** A console URL with its query (empty values left out), escaped for an attribute by the caller's `escapeHtml`. */
export function consoleUrl(path: string, query: Record<string, string | undefined> = {}): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) if (value !== undefined && value !== '') params.set(name, value);
  const text = params.toString();
  return `${path}${text ? `?${text}` : ''}`;
}

/** The link to the next (older) page of a list, when there is one. */
export function pager(nextHref: string | null, label = 'Older'): string {
  return nextHref
    ? `<nav class="pager" aria-label="Pages"><a href="${escapeHtml(nextHref)}" rel="next">${escapeHtml(label)} →</a></nav>`
    : '';
}

/** A path segment of a console URL for a value (a partner user id may hold any printable character). */
export const segment = (value: string): string => encodeURIComponent(value);

/**
 * The proof an address a write sent the person to carries: its path and query, signed with the session's form token
 * (a secret of that session alone), so that no one else can make a link whose page says the reader did something.
 */
function doneProof(csrfToken: string, path: string, query: Readonly<Record<string, string>>): string {
  const fields = Object.entries(query)
    .filter(([name]) => name !== 'proof')
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([name, value]) => `${name}=${value}`);
  return createHmac('sha256', `console-done:${csrfToken}`)
    .update([path, ...fields].join('\n'))
    .digest('base64url')
    .slice(0, 22);
}

/** The address a write sends the person to: `path` with `query` (what was done), and its proof. */
export function doneAddress(res: Response, path: string, query: Record<string, string | undefined>): string {
  const values: Record<string, string> = {};
  for (const [name, value] of Object.entries(query)) if (value !== undefined && value !== '') values[name] = value;
  return consoleUrl(path, { ...values, proof: doneProof(personOf(res).csrfToken, path, values) });
}

/** After a write: back to the page it was made from, which says what was done (`done`). */
export function sendBack(
  res: Response,
  path: string,
  done: string,
  query: Record<string, string | undefined> = {},
): void {
  res.redirect(303, doneAddress(res, path, { ...query, done }));
}

/**
 * What this page's address says was done (its `name` parameter), only when this session's write sent the person here
 * (the address's proof holds): a link someone else made, or one from another session, says nothing.
 */
export function doneOf(req: Request, res: Response, name = 'done'): string | undefined {
  const value = queryText(req, name, 40);
  const proof = queryText(req, 'proof', 64);
  if (value === undefined || proof === undefined) return undefined;
  const query: Record<string, string> = {};
  for (const [field, text] of Object.entries(req.query as Record<string, unknown>)) {
    if (typeof text !== 'string') return undefined;
    if (field !== 'proof') query[field] = text;
  }
  const expected = Buffer.from(doneProof(personOf(res).csrfToken, req.originalUrl.split('?')[0]!, query));
  const given = Buffer.from(proof);
  return given.length === expected.length && timingSafeEqual(given, expected) ? value : undefined;
}

/** The notice for `?done=…` on a page this session's write sent the person back to; nothing otherwise. */
export function doneNotice(req: Request, res: Response, messages: Readonly<Record<string, string>>): string {
  const done = doneOf(req, res);
  const message = done !== undefined && Object.hasOwn(messages, done) ? messages[done] : undefined;
  return message ? notice(message, 'ok') : '';
}

/** A write refused: why, that nothing was done, and the way back. */
export function sendRefused(
  res: Response,
  status: number,
  page: {
    person: SignedInPerson;
    section?: ConsoleSection;
    title: string;
    message: string;
    back: { href: string; label: string };
    body?: string;
  },
): void {
  sendConsolePage(res, status, {
    title: page.title,
    ...(page.section ? { section: page.section } : {}),
    person: page.person,
    body: `${notice(page.message, 'error')}${page.body ?? ''}<p><a href="${escapeHtml(page.back.href)}">${escapeHtml(page.back.label)}</a></p>`,
  });
}

/** A page for a record that is not there. */
export function sendNotFound(res: Response, person: SignedInPerson, section: ConsoleSection, what: string): void {
  sendConsolePage(res, 404, {
    title: 'Not found',
    section,
    person,
    body: `${notice(`There is no ${what}.`, 'error')}<p><a href="${CONSOLE_PATH}/search">Search</a></p>`,
  });
}

/** The workflow's page in the Temporal UI (TEMPORAL_UI_URL), or its id alone when none is configured. */
export function workflowLink(
  temporalUi: ConsoleServices['temporalUi'],
  workflowId: string,
  runId?: string,
): string | null {
  if (!temporalUi) return null;
  const base = temporalUi.url.replace(/\/+$/, '');
  const run = runId ? `/${encodeURIComponent(runId)}` : '';
  return `${base}/namespaces/${encodeURIComponent(temporalUi.namespace)}/workflows/${encodeURIComponent(workflowId)}${run}`;
}

/** An id that opens its record's page, with a button that copies it (idCell's, as a link). */
export const linkedId = (href: string, id: string, label = 'id'): string =>
  `<a class="id" href="${escapeHtml(href)}">${escapeHtml(id)}</a><button type="button" class="copy" data-copy="${escapeHtml(id)}" aria-label="Copy ${escapeHtml(label)} ${escapeHtml(id)}">copy</button>`;

/**
 * A resolution the record's workflow could not take just now (lib/workflow-unavailable.ts), in
 * words: the record is still in review (or, after a time-out, may yet be resolved), and when to look again.
 */
export function resolutionNotTakenWords(record: 'funding' | 'payment', refusal: WorkflowRefusal): string {
  const why = refusalWords[refusal.reason];
  return refusal.mayHaveBeenTaken
    ? `The ${record}’s workflow did not confirm your resolution (${why}): it may still take it. Look at the ${record} again in ${refusal.retryAfterSeconds} seconds; if it is still in review, resolve it again.`
    : `Not resolved: the ${record}’s workflow cannot take a resolution just now (${why}). Nothing was done: the ${record} is still in review. Try again in ${refusal.retryAfterSeconds} seconds.`;
}
