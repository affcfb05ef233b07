// With tracing on, one SERVER span per API request (lib/tracing.ts), active while the request is
// handled, so what the request starts (a workflow, a wallet call) joins its trace; named and
// labelled by the route template, never the raw path (which carries ids). Probes and scrapes get
// none. Installed only when tracing is on (createApp's `tracing`).
import type { RequestHandler } from 'express';
import type { RequestSpan } from '../../lib/tracing.ts';
import { quietRoutes, routeTemplateOf } from './http-metrics.ts';

export interface RequestTracing {
  startRequestSpan(method: string, requestId: string | undefined): RequestSpan;
}

export function requestSpans(tracing: RequestTracing): RequestHandler {
  return (req, res, next) => {
    if (quietRoutes.has(req.path)) {
      next();
      return;
    }
    const requestId: unknown = res.locals.requestId;
    const span = tracing.startRequestSpan(req.method, typeof requestId === 'string' ? requestId : undefined);
    const end = () => span.end(routeTemplateOf(req), res.statusCode);
    res.once('finish', end).once('close', end);
    span.run(next);
  };
}
