// The Express app factory: one router per area, one JSON error shape, nothing global.
import express, { type ErrorRequestHandler } from 'express';
import type { Logger } from '../lib/logger.ts';
import { healthRouter, type ReadinessChecks } from './health.ts';
import { sendProblem } from './problem.ts';

export interface AppDependencies {
  logger: Logger;
  readiness: ReadinessChecks;
}

export function createApp(deps: AppDependencies): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('query parser', 'simple');
  app.use(healthRouter(deps.readiness));

  app.use((req, res) => {
    sendProblem(res, { status: 404, code: 'NOT_FOUND', title: 'Not Found', detail: `no route for ${req.method} ${req.path}` });
  });
  const onError: ErrorRequestHandler = (error: { status?: number; type?: string }, req, res, _next) => {
    if (error.type === 'entity.too.large') {
      sendProblem(res, { status: 413, code: 'BODY_TOO_LARGE', title: 'Payload Too Large' });
      return;
    }
    if (error.type === 'entity.parse.failed') {
      sendProblem(res, { status: 400, code: 'MALFORMED_JSON', title: 'Bad Request', detail: 'the body is not valid JSON' });
      return;
    }
    deps.logger.error({ err: error, method: req.method, path: req.path }, 'unhandled error');
    sendProblem(res, { status: 500, code: 'INTERNAL', title: 'Internal Server Error' });
  };
  app.use(onError);
  return app;
}
