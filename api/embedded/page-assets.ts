// The landing pages' scripts: the files in ./assets/, read once when this module loads and served
// from memory at /app/assets/<name>.<hash>.js, where <hash> is the start of the file's SHA-256.
//
// Caching: a script's URL changes whenever its content does, so the answer may be cached for a
// year and marked immutable (the web view fetches each script once, not once per page), and a
// page never runs a stale script: the page (never cached: no-store) names the current hash. Any
// other name or hash is not served here (the landing router's 404). A changed file is seen on the
// next start, like a changed .ts file.
//
// Headers: JavaScript's content type with charset, nosniff (also set by helmet for every answer),
// and helmet's Cross-Origin-Resource-Policy: same-origin (no other site may load the file).
import { strictRouter } from '../http/route-registration.ts';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { Router } from 'express';

export const ASSETS_PATH = '/app/assets';

/** The scripts in ./assets/ (without .js): one per kind of page that runs one. */
export type PageScript = 'loading' | 'home' | 'progress';

const pageScripts: readonly PageScript[] = ['loading', 'home', 'progress'];

interface Asset {
  url: string;
  body: Buffer;
}

/** A year, the longest a cache is asked to keep anything; immutable: no revalidation on reload. */
const IMMUTABLE = 'public, max-age=31536000, immutable';

function load(name: PageScript): Asset {
  const body = readFileSync(new URL(`./assets/${name}.js`, import.meta.url));
  const hash = createHash('sha256').update(body).digest('hex').slice(0, 16);
  return { url: `${ASSETS_PATH}/${name}.${hash}.js`, body };
}

const assets = new Map<PageScript, Asset>(pageScripts.map((name) => [name, load(name)]));
const byUrl = new Map<string, Asset>([...assets.values()].map((asset) => [asset.url, asset]));

/** The URL a page's <script src> names for this script (with its content hash). */
export function scriptUrl(name: PageScript): string {
  const asset = assets.get(name);
  if (!asset) throw new Error(`no page script ${name}`);
  return asset.url;
}

/**
 * GET (and HEAD) of the current scripts' URLs; anything else falls through. Middleware, like the
 * docs' static files, not a route: files are not operations of the OpenAPI document.
 */
export function pageAssetsRouter(): Router {
  const router = strictRouter();
  router.use(ASSETS_PATH, (req, res, next) => {
    const asset = byUrl.get(`${ASSETS_PATH}${req.path}`);
    if ((req.method !== 'GET' && req.method !== 'HEAD') || !asset) {
      next();
      return;
    }
    res.setHeader('Cache-Control', IMMUTABLE);
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.type('text/javascript; charset=utf-8').send(asset.body);
  });
  return router;
}
