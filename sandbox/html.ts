// Server-rendered HTML for the sandbox's pages: one mobile-friendly layout (escaping is lib/html.ts,
// shared with the API's pages).
import { escapeHtml } from '../lib/html.ts';

/** A complete page; `body` must already be escaped. */
export function page(title: string, body: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<style>
  body { font-family: system-ui, sans-serif; margin: 0; background: #f3f5f8; color: #1d2430; }
  main { max-width: 28rem; margin: 0 auto; padding: 1.25rem; }
  h1 { font-size: 1.35rem; }
  form, .card { background: #fff; border-radius: .75rem; padding: 1rem; margin: 0 0 1rem; box-shadow: 0 1px 3px rgba(0,0,0,.12); }
  label { display: block; font-weight: 600; margin: .75rem 0 .25rem; }
  input { box-sizing: border-box; width: 100%; font-size: 1rem; padding: .7rem; border: 1px solid #a9b3c1; border-radius: .5rem; }
  input[readonly] { background: #e9edf2; color: #4a5565; }
  button { font-size: 1rem; padding: .75rem 1rem; border: 0; border-radius: .5rem; margin: 1rem .5rem 0 0; cursor: pointer; }
  button.primary { background: #0b5fff; color: #fff; }
  button.secondary { background: #e1e6ee; color: #1d2430; }
  .error { background: #fde8e8; color: #8a1111; padding: .75rem; border-radius: .5rem; }
  .hint { background: #fff6d6; padding: .75rem; border-radius: .5rem; }
  code { background: #e9edf2; padding: 0 .25rem; border-radius: .25rem; }
  table { width: 100%; border-collapse: collapse; }
  td, th { text-align: left; padding: .4rem; border-bottom: 1px solid #e1e6ee; vertical-align: top; }
</style>
</head>
<body><main>
${body}
</main></body>
</html>
`;
}
