// Server-rendered pages for people (the connect callback's outcome): small, mobile-first, every
// echoed value escaped, the one inline style allowed by the response's CSP nonce.
import { escapeHtml } from '../../lib/html.ts';

export interface PageContent {
  title: string;
  /** Plain text paragraphs; escaped here. */
  paragraphs: string[];
  tone: 'success' | 'error' | 'info';
}

/** The Content-Security-Policy of a page: nothing but its own style (by the response's nonce). */
export function pageCsp(nonce: string): string {
  return [
    "default-src 'none'",
    `style-src 'nonce-${nonce}'`,
    "form-action 'none'",
    "frame-ancestors 'none'",
    "base-uri 'none'",
  ].join('; ');
}

export function renderPage(content: PageContent, nonce: string): string {
  const color = { success: '#0a7a3d', error: '#b3261e', info: '#1f4e99' }[content.tone];
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(content.title)} · walletflow</title>
<style nonce="${nonce}">
  body { font-family: system-ui, sans-serif; margin: 0; padding: 24px 16px; background: #f6f7f9; color: #1b1d21; }
  main { max-width: 480px; margin: 0 auto; background: #fff; border-radius: 12px; padding: 24px; box-shadow: 0 1px 3px rgba(0,0,0,.08); }
  h1 { font-size: 1.3rem; color: ${color}; margin-top: 0; }
  p { line-height: 1.5; }
</style>
</head>
<body>
<main>
<h1 id="title">${escapeHtml(content.title)}</h1>
${content.paragraphs.map((paragraph) => `<p>${escapeHtml(paragraph)}</p>`).join('\n')}
</main>
</body>
</html>
`;
}
