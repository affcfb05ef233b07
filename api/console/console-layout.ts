// The ops console's pages: one layout (a skip link, the navigation the person's scopes allow, who
// is signed in and the sign-out, the page), its stylesheet and script served from memory under
// /console/assets with their content hash in the name (cached for good; a page, never cached,
// names the current ones), and the pieces pages are made of (ids with a copy button, states as
// badges, tables). Every value is escaped; the script runs under the response's CSP nonce and
// nothing inline does.
import { createHash, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { Response, Router } from 'express';
import { escapeHtml } from '../../lib/html.ts';
import type { OpsScope } from '../../lib/ops-keys.ts';
import { strictRouter } from '../http/route-registration.ts';

export const CONSOLE_PATH = '/console';

/** The sign-in page's address that returns to `returnTo` (a console page) once signed in. */
export const signInAddress = (returnTo: string): string =>
  `${CONSOLE_PATH}/sign-in?return=${encodeURIComponent(returnTo)}`;
const ASSETS_PATH = `${CONSOLE_PATH}/assets`;

interface Asset {
  url: string;
  body: Buffer;
  type: string;
}

function load(file: string, type: string): Asset {
  const body = readFileSync(new URL(`./assets/${file}`, import.meta.url));
  const hash = createHash('sha256').update(body).digest('hex').slice(0, 16);
  const [name, extension] = file.split('.');
  return { url: `${ASSETS_PATH}/${name}.${hash}.${extension}`, body, type };
}

const stylesheet = load('console.css', 'text/css; charset=utf-8');
const script = load('console.js', 'text/javascript; charset=utf-8');
const assetsByUrl = new Map([stylesheet, script].map((asset) => [asset.url, asset]));

/** GET (and HEAD) of the current stylesheet and script; anything else falls through. */
export function consoleAssetsRouter(): Router {
  const router = strictRouter();
  router.use(ASSETS_PATH, (req, res, next) => {
    const asset = assetsByUrl.get(`${ASSETS_PATH}${req.path}`);
    if ((req.method !== 'GET' && req.method !== 'HEAD') || !asset) {
      next();
      return;
    }
    res.setHeader('Cache-Control', 'public, max-age=31536000, immutable');
    res.type(asset.type).send(asset.body);
  });
  return router;
}

/**
 * The console's Content-Security-Policy: scripts only with this response's nonce (the one script
 * file), the stylesheet from this origin, forms and pushed updates to this origin only, never
 * framed.
 */
export function consoleCsp(nonce: string): string {
  return [
    "default-src 'none'",
    `script-src 'nonce-${nonce}'`,
    "style-src 'self'",
    "img-src 'self'",
    "connect-src 'self'",
    "form-action 'self'",
    "frame-ancestors 'none'",
    "base-uri 'none'",
  ].join('; ');
}

/**
 * The headers of every console answer: never cached or framed, its CSP; a referrer only to this
 * origin (with no referrer at all, browsers send `Origin: null` on the console's own forms, and the
 * Origin check could not tell them from a forgery).
 */
export function consoleHeaders(res: Response, nonce?: string): void {
  res.setHeader('Cache-Control', 'no-store');
  res.setHeader('Referrer-Policy', 'same-origin');
  res.setHeader('X-Content-Type-Options', 'nosniff');
  res.setHeader('Content-Security-Policy', consoleCsp(nonce ?? randomBytes(16).toString('base64')));
}

/** The pages of the navigation, and the scope each needs to be shown (as its route needs it). */
export const consoleSections = [
  { key: 'home', path: '/console', label: 'Home', scope: 'read' },
  { key: 'search', path: '/console/search', label: 'Search', scope: 'read' },
  { key: 'review', path: '/console/review', label: 'Review', scope: 'read' },
  { key: 'batches', path: '/console/batches', label: 'Batches', scope: 'read' },
  { key: 'accounts', path: '/console/accounts', label: 'Accounts', scope: 'read' },
  { key: 'webhooks', path: '/console/webhooks', label: 'Webhooks', scope: 'read' },
  { key: 'links', path: '/console/links', label: 'Links', scope: 'read' },
  { key: 'audit', path: '/console/audit', label: 'Audit', scope: 'read' },
] as const satisfies ReadonlyArray<{ key: string; path: string; label: string; scope: OpsScope }>;

export type ConsoleSection = (typeof consoleSections)[number]['key'];

/** Who is signed in, as the layout shows them. */
export interface SignedInPerson {
  name: string;
  scopes: ReadonlySet<OpsScope>;
  csrfToken: string;
}

export interface ConsolePage {
  title: string;
  section?: ConsoleSection;
  /** Absent: the signed-out layout (the sign-in page, a message). */
  person?: SignedInPerson;
  body: string;
}

function renderPage(page: ConsolePage, nonce: string): string {
  const person = page.person;
  const nav = person
    ? `<nav aria-label="Console"><ul>${consoleSections
        .filter((section) => person.scopes.has(section.scope))
        .map(
          (section) =>
            `<li><a href="${section.path}"${section.key === page.section ? ' aria-current="page"' : ''}>${section.label}</a></li>`,
        )
        .join('')}</ul></nav>
<div class="who"><span>Signed in as <strong>${escapeHtml(person.name)}</strong></span>
<form method="post" action="/console/sign-out">${csrfField(person)}<button type="submit">Sign out</button></form></div>`
    : '';
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(page.title)} · walletflow console</title>
<link rel="stylesheet" href="${stylesheet.url}">
<script src="${script.url}" nonce="${nonce}" defer></script>
</head>
<body>
<a class="skip" href="#main">Skip to the page</a>
<header class="top"><div class="bar"><a class="brand" href="/console">walletflow console</a>${nav}</div></header>
<main id="main" tabindex="-1">
<h1>${escapeHtml(page.title)}</h1>
${page.body}
</main>
<div id="console-status" class="sr-only" role="status" aria-live="polite"></div>
</body>
</html>`;
}

/** A page, with a fresh nonce for its script. */
export function sendConsolePage(res: Response, status: number, page: ConsolePage): void {
  const nonce = randomBytes(16).toString('base64');
  consoleHeaders(res, nonce);
  res.status(status).type('html').send(renderPage(page, nonce));
}

// ---- the pieces pages are made of ------------------------------------------------------------

/** The hidden CSRF field every state-changing form carries. */
export const csrfField = (person: Pick<SignedInPerson, 'csrfToken'>): string =>
  `<input type="hidden" name="_csrf" value="${escapeHtml(person.csrfToken)}">`;

/** An id in monospace, with a button that copies it. */
export const idCell = (id: string, label = 'id'): string =>
  `<span class="id">${escapeHtml(id)}</span><button type="button" class="copy" data-copy="${escapeHtml(id)}" aria-label="Copy ${escapeHtml(label)} ${escapeHtml(id)}">copy</button>`;

const goodStates = new Set(['APPROVED', 'SUCCEEDED', 'COMPLETED', 'DELIVERED', 'ACTIVE', 'RUNNING']);
const badStates = new Set(['DECLINED', 'REJECTED', 'FAILED', 'CANCELLED', 'REAUTH_REQUIRED', 'UNLINKED']);
const waitingStates = new Set(['NEEDS_REVIEW', 'AWAITING_APPROVAL', 'PAUSED', 'RECONCILING', 'PENDING']);

/** A state as a badge (its colour says done, refused or waiting; the word says which). */
export function stateBadge(state: string): string {
  const tone = goodStates.has(state)
    ? ' good'
    : badStates.has(state)
      ? ' bad'
      : waitingStates.has(state)
        ? ' wait'
        : '';
  return `<span class="badge${tone}">${escapeHtml(state)}</span>`;
}

/** An amount as the API writes it: `100.50 PHP`. */
export const money = (amount: { currency: string; value: string }): string =>
  `${escapeHtml(amount.value)} ${escapeHtml(amount.currency)}`;

/**
 * A table of rows: each cell already HTML; a caption names it for screen readers. A table wider
 * than the screen scrolls inside its box, which is a named region the keyboard can reach (Tab,
 * then the arrow keys), as a box without a focusable cell could not be scrolled otherwise.
 */
export function table(
  caption: string,
  head: readonly string[],
  rows: readonly (readonly string[])[],
  numeric: ReadonlySet<number> = new Set(),
): string {
  if (rows.length === 0) return `<p class="muted">${escapeHtml(caption)}: none.</p>`;
  const th = head
    .map((cell, index) => `<th scope="col"${numeric.has(index) ? ' class="num"' : ''}>${escapeHtml(cell)}</th>`)
    .join('');
  const body = rows
    .map(
      (row) =>
        `<tr>${row.map((cell, index) => `<td${numeric.has(index) ? ' class="num"' : ''}>${cell}</td>`).join('')}</tr>`,
    )
    .join('');
  // A wide table scrolls inside its box (never the page); the box takes the keyboard's focus so it can be scrolled
  // without a mouse.
  return `<div class="scroll" tabindex="0" role="region" aria-label="${escapeHtml(caption)}"><table><caption class="sr-only">${escapeHtml(caption)}</caption><thead><tr>${th}</tr></thead><tbody>${body}</tbody></table></div>`;
}

/** A time as people read it, in the partner's time zone, with the exact instant for machines. */
export function when(iso: string | Date | null, timeZone: string): string {
  if (iso === null) return '';
  const at = typeof iso === 'string' ? new Date(iso) : iso;
  const text = new Intl.DateTimeFormat('en-GB', { timeZone, dateStyle: 'medium', timeStyle: 'medium' }).format(at);
  return `<time datetime="${at.toISOString()}">${escapeHtml(text)}</time>`;
}

/** A notice at the top of a page: what was done, or why not. */
export const notice = (text: string, tone: 'ok' | 'error' | 'info' = 'info'): string =>
  `<div class="notice${tone === 'info' ? '' : ` ${tone}`}" role="${tone === 'error' ? 'alert' : 'status'}">${escapeHtml(text)}</div>`;

export { escapeHtml };
