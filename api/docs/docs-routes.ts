// The API documentation: the OpenAPI document at GET /docs/openapi.json and an interactive viewer
// at GET /docs (Swagger UI from the installed swagger-ui-dist package: no CDN, works offline). The
// viewer's page loads only its own scripts and styles, so its CSP needs no inline script.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import type { Router } from 'express';
import express, { type Response } from 'express';
import { routesOn, strictRouter } from '../http/route-registration.ts';
import { defineRoute, htmlAnswer, type AnyRouteSpec } from '../http/route-spec.ts';

export const DOCS_PATH = '/docs';
export const OPENAPI_PATH = `${DOCS_PATH}/openapi.json`;
const ASSETS_PATH = `${DOCS_PATH}/assets`;

const routes = {
  docsViewer: defineRoute({
    method: 'get',
    path: DOCS_PATH,
    operationId: 'docsViewer',
    tag: 'docs',
    summary: 'This documentation, in an interactive viewer (Swagger UI, served locally)',
    access: 'public',
    responses: { '200': htmlAnswer('the viewer page') },
  }),
  openApiDocument: defineRoute({
    method: 'get',
    path: OPENAPI_PATH,
    operationId: 'openApiDocument',
    tag: 'docs',
    summary: 'This OpenAPI 3.1 document',
    access: 'public',
    responses: {
      '200': { description: 'the document', content: { 'application/json': { jsonSchema: { type: 'object' } } } },
    },
  }),
};

/** The documentation's routes, as the document lists them. */
export const docsRoutes: readonly AnyRouteSpec[] = Object.values(routes);

/**
 * The files of swagger-ui-dist the page uses; nothing else of the package is served (its index.html loads a remote
 * example).
 */
const swaggerUiFiles = new Set([
  '/swagger-ui.css',
  '/swagger-ui-bundle.js',
  '/favicon-32x32.png',
  '/favicon-16x16.png',
]);

const swaggerUiDirectory = path.dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));

/**
 * The viewer's page: its own files only. Swagger UI sets element styles from script (allowed) and
 * its stylesheet's icons are data: URLs; "Try it out" calls this origin only.
 */
export const docsCsp = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "form-action 'none'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join('; ');

const viewerPage = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>walletflow API</title>
<link rel="stylesheet" href="${ASSETS_PATH}/swagger-ui.css">
<link rel="icon" type="image/png" href="${ASSETS_PATH}/favicon-32x32.png" sizes="32x32">
<link rel="icon" type="image/png" href="${ASSETS_PATH}/favicon-16x16.png" sizes="16x16">
</head>
<body>
<div id="swagger-ui"></div>
<script src="${ASSETS_PATH}/swagger-ui-bundle.js"></script>
<script src="${ASSETS_PATH}/init.js"></script>
</body>
</html>
`;

/** The viewer's own start script (./assets/init.js), read once: it names OPENAPI_PATH. */
const initScript = readFileSync(new URL('./assets/init.js', import.meta.url));

/** `document`: the OpenAPI document (api/docs/openapi.ts builds it, from these routes too). */
export function docsRouter(document: Record<string, unknown>): Router {
  const router = strictRouter();
  const add = routesOn(router);
  const viewerHeaders = (res: Response) => {
    res.setHeader('Content-Security-Policy', docsCsp);
    res.setHeader('Cache-Control', 'no-cache');
  };

  add(routes.docsViewer, (_req, res) => {
    viewerHeaders(res);
    res.type('html').send(viewerPage);
  });
  add(routes.openApiDocument, (_req, res) => {
    res.setHeader('Cache-Control', 'no-cache');
    res.json(document);
  });

  const staticFiles = express.static(swaggerUiDirectory, {
    index: false,
    redirect: false,
    fallthrough: true,
    maxAge: '1h',
  });
  router.use(ASSETS_PATH, (req, res, next) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      next();
      return;
    }
    if (req.path === '/init.js') {
      res.setHeader('Cache-Control', 'no-cache');
      res.type('text/javascript').send(initScript);
      return;
    }
    if (!swaggerUiFiles.has(req.path)) {
      next();
      return;
    }
    staticFiles(req, res, next);
  });
  return router;
}
