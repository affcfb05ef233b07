// The request id: a well-formed incoming X-Request-Id (from a proxy or the caller) is kept, any
// other is replaced by a new UUID. It is echoed in the answer and carried by every log line
// written while the request is handled (lib/log-context.ts).
import { randomUUID } from 'node:crypto';
import type { RequestHandler } from 'express';
import { withLogContext } from '../../lib/log-context.ts';

export const REQUEST_ID_HEADER = 'X-Request-Id';

/** Up to 128 of the characters ids are made of: no spaces, quotes, control characters or markup. */
const wellFormedRequestId = /^[A-Za-z0-9][A-Za-z0-9._:@+=-]{0,127}$/;

export function requestIdOf(incoming: string | undefined): string {
  return incoming !== undefined && wellFormedRequestId.test(incoming) ? incoming : randomUUID();
}

export function requestId(): RequestHandler {
  return (req, res, next) => {
    const id = requestIdOf(req.get(REQUEST_ID_HEADER));
    res.locals.requestId = id;
    res.setHeader(REQUEST_ID_HEADER, id);
    withLogContext({ requestId: id }, next);
  };
}
