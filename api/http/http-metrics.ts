// GET /metrics (contract-decisions section 8: Prometheus text; with METRICS_TOKEN set, which production requires,
// only `Authorization: Bearer <token>` is answered, anything else 401), and the timing
// of every request: a walletflow_http_request_duration_seconds sample labelled by route template
// (never the raw path, which carries ids) and one access log line.
import { createHash, timingSafeEqual } from 'node:crypto';
import type { Router } from 'express';
import { type Request, type RequestHandler } from 'express';
import { currentLogContext, withLogContext } from '../../lib/log-context.ts';
import type { Logger } from '../../lib/logger.ts';
import type { Metrics } from '../../lib/metrics.ts';
import { routesOn, strictRouter } from './route-registration.ts';
import { defineRoute, textSchema, type AnyRouteSpec } from './route-spec.ts';

/** Probes and scrapes: logged at debug, not info, so they do not drown the access log. */
export const quietRoutes: ReadonlySet<string> = new Set(['/healthz', '/readyz', '/metrics']);

/**
 * The route template that answered (`/ops/fundings/:fundingId`); a request refused before any
 * route (authentication, an unknown path under a router) is `<mount>/*`, one no router took
 * `unmatched`.
 */
export function routeTemplateOf(req: Request): string {
  const routePath: unknown = (req.route as { path?: unknown } | undefined)?.path;
  if (typeof routePath === 'string') return `${req.baseUrl}${routePath}` || '/';
  return req.baseUrl ? `${req.baseUrl}/*` : 'unmatched';
}

export function observeRequests(deps: { metrics: Metrics; logger: Logger }): RequestHandler {
  return (req, res, next) => {
    const started = performance.now();
    // 'finish' fires from the socket, outside the request's log context: carry it over.
    const context = currentLogContext() ?? {};
    res.once('finish', () =>
      withLogContext(context, () => {
        const route = routeTemplateOf(req);
        const durationMs = performance.now() - started;
        deps.metrics.httpRequest({ method: req.method, route, status: res.statusCode, seconds: durationMs / 1000 });
        const line = {
          method: req.method,
          route,
          status: res.statusCode,
          durationMs: Math.round(durationMs * 10) / 10,
        };
        if (quietRoutes.has(route)) deps.logger.debug(line, 'request');
        else deps.logger.info(line, 'request');
      }),
    );
    next();
  };
}

const metricsRoute = defineRoute({
  method: 'get',
  path: '/metrics',
  operationId: 'metrics',
  tag: 'health',
  summary: 'Prometheus metrics (text exposition format 0.0.4)',
  access: 'public',
  responses: {
    '200': { description: 'the API process’s metrics', content: { 'text/plain': { jsonSchema: textSchema } } },
  },
});

/** GET /metrics, as the document lists it. */
export const metricsRoutes: readonly AnyRouteSpec[] = [metricsRoute];

/**
 * GET /metrics (Prometheus text). With a token (METRICS_TOKEN, required in production: the gauges
 * tell the business's volumes) only `Authorization: Bearer <token>` gets them; 401
 * otherwise, compared in constant time.
 */
export function metricsRouter(metrics: Metrics, options: { token?: string | undefined } = {}): Router {
  const router = strictRouter();
  const expected =
    options.token === undefined ? undefined : createHash('sha256').update(`Bearer ${options.token}`).digest();
  routesOn(router)(metricsRoute, async (req, res) => {
    if (expected) {
      const presented = createHash('sha256')
        .update(req.get('authorization') ?? '')
        .digest();
      if (!timingSafeEqual(presented, expected)) {
        res.setHeader('WWW-Authenticate', 'Bearer realm="walletflow-metrics"');
        res.status(401).type('text/plain').send('metrics need Authorization: Bearer <METRICS_TOKEN>\n');
        return;
      }
    }
    const text = await metrics.registry.metrics();
    res
      .status(200)
      .setHeader('Content-Type', metrics.registry.contentType)
      .setHeader('Cache-Control', 'no-store')
      .send(text);
  });
  return router;
}
