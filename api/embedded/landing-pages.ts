// The landing page's HTML, server-rendered for the wallet app's web view: mobile-first and
// portrait, nothing wider than the screen, no new tabs or windows, no camera or file inputs. Every
// value is escaped; the one inline style and the page's script (a file, page-assets.ts) carry the
// response's CSP nonce.
import type { Outcome } from './outcome-messages.ts';
import { escapeHtml } from '../../lib/html.ts';
import { scriptUrl, type PageScript } from './page-assets.ts';

export interface Layout {
  nonce: string;
  title: string;
  body: string;
  /** A self-refresh for browsers without script (seconds); absent: none. */
  noscriptRefreshSeconds?: number;
  /** Where that refresh goes; absent: the page's own address. */
  noscriptRefreshUrl?: string;
  /** The page's script, one of ./assets/ (loaded from this origin, never inline). */
  script?: PageScript;
}

/**
 * The Content-Security-Policy of every landing page response. A script runs only when its element
 * carries this response's nonce: the page's one <script src> of ./assets/, nothing inline and no
 * other file of this origin (no 'self'), so an injected element runs nothing.
 */
export function landingCsp(nonce: string): string {
  return [
    "default-src 'none'",
    `style-src 'nonce-${nonce}'`,
    `script-src 'nonce-${nonce}'`,
    "connect-src 'self'",
    "img-src 'self'",
    "form-action 'self'",
    "frame-ancestors 'none'",
    "base-uri 'none'",
  ].join('; ');
}

const styles = `
*, *::before, *::after { box-sizing: border-box; }
html { -webkit-text-size-adjust: 100%; }
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 0; padding: 16px 12px 32px; background: #f3f5f8; color: #1b1d21; overflow-wrap: anywhere; }
main { max-width: 480px; margin: 0 auto; }
header { padding: 4px 4px 12px; }
h1 { font-size: 1.4rem; margin: 0 0 4px; }
h2 { font-size: 1.05rem; margin: 0 0 8px; }
p { line-height: 1.45; margin: 0 0 8px; }
.card { background: #fff; border-radius: 14px; padding: 16px; margin-bottom: 12px; box-shadow: 0 1px 3px rgba(0,0,0,.08); }
.badge { display: inline-block; font-size: .8rem; font-weight: 600; border-radius: 999px; padding: 2px 10px; background: #e6f4ea; color: #0a7a3d; }
.badge.kyc0 { background: #fff4e5; color: #8a4b00; }
.hint { font-size: .92rem; color: #5b6270; }
label { display: block; font-weight: 600; margin-bottom: 6px; }
.amount { display: flex; align-items: center; gap: 8px; margin-bottom: 12px; }
.amount span { flex: none; font-weight: 600; color: #5b6270; }
input[type=text] { width: 100%; min-width: 0; font-size: 1.1rem; padding: 10px 12px; border: 1px solid #c4c9d2; border-radius: 10px; }
button, .button { display: block; width: 100%; font-size: 1rem; font-weight: 600; padding: 12px; border: 0; border-radius: 10px; background: #1f4e99; color: #fff; text-align: center; text-decoration: none; cursor: pointer; }
button.secondary { background: #0a7a3d; }
button[disabled] { opacity: .6; }
.error { color: #b3261e; }
.success h1, .success h2 { color: #0a7a3d; }
.error h1, .error h2 { color: #b3261e; }
.info h1, .info h2 { color: #1f4e99; }
.big { font-size: 1.8rem; font-weight: 700; margin: 4px 0; }
ul.activity { list-style: none; padding: 0; margin: 0; }
ul.activity li { display: flex; justify-content: space-between; gap: 8px; padding: 8px 0; border-top: 1px solid #eceef2; font-size: .95rem; }
ul.activity li:first-child { border-top: 0; }
.state { font-weight: 600; color: #5b6270; white-space: nowrap; }
.state.done { color: #0a7a3d; }
.state.refused { color: #b3261e; }
.spinner { width: 28px; height: 28px; border: 3px solid #c4d3ee; border-top-color: #1f4e99; border-radius: 50%; animation: spin 1s linear infinite; margin: 8px 0 12px; }
.final .big { font-size: 1.8rem; font-weight: 700; margin: 4px 0; }
ul.activity { list-style: none; padding: 0; margin: 0; }
ul.activity li { display: flex; justify-content: space-between; gap: 8px; padding: 8px 0; border-top: 1px solid #eceef2; font-size: .95rem; }
ul.activity li:first-child { border-top: 0; }
.state { font-weight: 600; color: #5b6270; white-space: nowrap; }
.state.done { color: #0a7a3d; }
.state.refused { color: #b3261e; }
.spinner { display: none; }
@keyframes spin { to { transform: rotate(360deg); } }
`;

export function renderLayout(layout: Layout): string {
  const target = layout.noscriptRefreshUrl === undefined ? '' : `;url=${escapeHtml(layout.noscriptRefreshUrl)}`;
  const refresh =
    layout.noscriptRefreshSeconds === undefined
      ? ''
      : `<noscript><meta http-equiv="refresh" content="${layout.noscriptRefreshSeconds}${target}"></noscript>\n`;
  const script =
    layout.script === undefined ? '' : `\n<script nonce="${layout.nonce}" src="${scriptUrl(layout.script)}"></script>`;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1, viewport-fit=cover">
<meta name="referrer" content="no-referrer">
${refresh}<title>${escapeHtml(layout.title)}</title>
<style nonce="${layout.nonce}">${styles}</style>
</head>
<body>
<main>
${layout.body}
</main>${script}
</body>
</html>
`;
}

export interface MessagePage {
  title: string;
  paragraphs: string[];
  tone: 'success' | 'error' | 'info';
}

/** A page with a heading and a few sentences (not found, used, expired, reopen from the wallet). */
export function messagePage(nonce: string, content: MessagePage): string {
  return renderLayout({
    nonce,
    title: content.title,
    body: `<section class="card ${content.tone}" id="message-card">
<h1 id="title">${escapeHtml(content.title)}</h1>
${content.paragraphs.map((paragraph) => `<p>${escapeHtml(paragraph)}</p>`).join('\n')}
</section>`,
  });
}

/**
 * Onboarding is still running: a spinner and a poll of /app/status that reloads when it ends
 * (assets/loading.js). This and the home page are also the answer to /app?sessionId=…: their
 * scripts take the used id out of the address first, so a reload or a later navigation asks for
 * /app (the web session's cookie), never for the id again (that would be 410).
 */
export function loadingPage(nonce: string): string {
  return renderLayout({
    nonce,
    title: 'Opening your account',
    noscriptRefreshSeconds: 2,
    noscriptRefreshUrl: '/app',
    body: `<section class="card info" id="loading" aria-busy="true">
<h1 id="title">Opening your account…</h1>
<div class="spinner" role="status" aria-label="Loading"></div>
<p>This takes a few seconds.</p>
</section>`,
    script: 'loading',
  });
}

export interface HomePage {
  firstName: string | null;
  kycStatus: string | null;
  csrfToken: string;
  withdrawFormKey: string;
  payFormKey: string;
  /** The user's partner balance, available to withdraw (PHP). */
  available: string;
  /** The most a withdrawal may be now (available and the limits), or why none can be made. */
  withdraw: { max: string | null; min: string; blocked: string | null };
  /** Recent withdrawals, deposits and payments, newest first. */
  activity: Array<{
    kind: 'withdrawal' | 'deposit' | 'payment';
    id: string;
    status: string;
    final: boolean;
    amount: string;
  }>;
  /** A refused amount, shown at its form. */
  error?: { form: 'withdraw' | 'deposit'; message: string; value: string };
}

/** A status in the user's words (the page's script uses the same words: assets/home.js). */
export function statusInWords(status: string): { text: string; tone: 'done' | 'refused' | 'working' } {
  if (status === 'APPROVED' || status === 'SUCCEEDED') return { text: 'Done', tone: 'done' };
  if (status === 'DECLINED') return { text: 'Declined', tone: 'refused' };
  if (status === 'REJECTED' || status === 'FAILED') return { text: 'Not done', tone: 'refused' };
  if (status === 'NEEDS_REVIEW') return { text: 'Being checked', tone: 'working' };
  return { text: 'In progress', tone: 'working' };
}

const activityLabels = {
  withdrawal: 'Withdrawal to wallet',
  deposit: 'Deposit from wallet',
  payment: 'Payment',
} as const;

function activityList(items: HomePage['activity']): string {
  if (items.length === 0) return '<p class="hint" id="activity-empty">Nothing yet.</p>';
  return `<ul class="activity" id="activity-list">
${items
  .map((item) => {
    const state = statusInWords(item.status);
    return `<li data-id="${escapeHtml(item.id)}" data-final="${item.final ? 'true' : 'false'}"><span>${activityLabels[item.kind]} · PHP ${escapeHtml(item.amount)}</span><span class="state ${state.tone}">${state.text}</span></li>`;
  })
  .join('\n')}
</ul>`;
}

function amountForm(options: {
  id: 'withdraw' | 'deposit';
  action: string;
  heading: string;
  hint: string;
  /** Shown instead of the form: nothing of this kind can be done now. */
  blocked?: string | null;
  button: string;
  buttonClass: string;
  csrfToken: string;
  formKey: string;
  error: HomePage['error'];
}): string {
  const error = options.error?.form === options.id ? options.error : undefined;
  if (options.blocked) {
    return `<section class="card" id="${options.id}">
<h2>${escapeHtml(options.heading)}</h2>
<p class="hint" id="${options.id}-blocked">${escapeHtml(options.blocked)}</p>
${error ? `<p class="error" id="${options.id}-error" role="alert">${escapeHtml(error.message)}</p>\n` : ''}</section>`;
  }
  return `<section class="card" id="${options.id}">
<h2>${escapeHtml(options.heading)}</h2>
<p class="hint">${escapeHtml(options.hint)}</p>
<form method="post" action="${options.action}" id="${options.id}-form">
<input type="hidden" name="csrf" value="${escapeHtml(options.csrfToken)}">
<input type="hidden" name="formKey" value="${escapeHtml(options.formKey)}">
<label for="${options.id}-amount">Amount</label>
<div class="amount"><span>PHP</span><input type="text" inputmode="decimal" autocomplete="off" name="amount" id="${options.id}-amount" placeholder="0.00" required maxlength="14" pattern="[0-9]{1,10}([.][0-9]{1,2})?" value="${escapeHtml(error?.value ?? '')}"${error ? ' aria-invalid="true"' : ''}></div>
${error ? `<p class="error" id="${options.id}-error" role="alert">${escapeHtml(error.message)}</p>\n` : ''}<button type="submit" class="${options.buttonClass}" id="${options.id}-submit">${escapeHtml(options.button)}</button>
</form>
</section>`;
}

/**
 * The user's money page: greeting, KYC status, partner balance, withdraw, deposit, recent activity (assets/home.js:
 * each form sent once, live states).
 */
export function homePage(nonce: string, content: HomePage): string {
  const greeting = content.firstName ? `Hello, ${content.firstName}` : 'Hello';
  const kyc =
    content.kycStatus === 'KYC1'
      ? `<p id="kyc"><span class="badge">Verified (KYC1)</span></p>`
      : content.kycStatus === 'KYC0'
        ? `<p id="kyc"><span class="badge kyc0">Not upgraded (KYC0)</span></p>
<p class="hint" id="kyc-hint">Upgrade your account in the wallet app to receive withdrawals.</p>`
        : '';
  return renderLayout({
    nonce,
    title: 'walletflow',
    body: `<header>
<h1 id="greeting">${escapeHtml(greeting)}</h1>
${kyc}
</header>
<section class="card" id="balance">
<h2>My balance</h2>
<p class="big" id="available">PHP ${escapeHtml(content.available)}</p>
<p class="hint">Available to withdraw to your wallet.</p>
</section>
${amountForm({
  id: 'withdraw',
  action: '/app/withdraw',
  heading: 'Withdraw to my wallet',
  hint: content.withdraw.max ? `From PHP ${content.withdraw.min} up to PHP ${content.withdraw.max}.` : '',
  blocked: content.withdraw.blocked,
  button: 'Withdraw',
  buttonClass: 'secondary',
  csrfToken: content.csrfToken,
  formKey: content.withdrawFormKey,
  error: content.error,
})}
${amountForm({
  id: 'deposit',
  action: '/app/deposit',
  heading: 'Deposit from my wallet',
  hint: 'Pay in from your wallet balance; it is added to your balance here.',
  button: 'Deposit',
  buttonClass: '',
  csrfToken: content.csrfToken,
  formKey: content.payFormKey,
  error: content.error,
})}
<section class="card" id="activity">
<h2>Recent</h2>
${activityList(content.activity)}
</section>`,
    script: 'home',
  });
}

/** A withdrawal or deposit on its way: the current outcome, polled until final (assets/progress.js). */
export function progressPage(nonce: string, content: { statusUrl: string; outcome: Outcome }): string {
  const { outcome } = content;
  return renderLayout({
    nonce,
    title: outcome.title,
    ...(outcome.final ? {} : { noscriptRefreshSeconds: 2 }),
    body: `<section class="card ${outcome.tone}${outcome.final ? ' final' : ''}" id="progress" data-state="${outcome.final ? 'final' : 'pending'}" data-status-url="${escapeHtml(content.statusUrl)}">
<h1 id="title">${escapeHtml(outcome.title)}</h1>
<div class="spinner" role="status" aria-label="Working"></div>
<p id="message" role="status">${escapeHtml(outcome.message)}</p>
</section>
<a class="button" href="/app" id="back">Back</a>`,
    script: 'progress',
  });
}
