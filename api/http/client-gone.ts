// Whether a request's client is still there, for a route that waits (a settlement's run, up to 5 s) before it answers.
import type { Response } from 'express';

/**
 * Aborted once the client goes away before its answer is finished: at once when it went already (while the route read
 * its body or the database). Read from the response, never the request: a request's 'close' is emitted as soon as its
 * body has been read (a form's), so a listener added after that never hears the client leave.
 */
export function clientGone(res: Response): AbortSignal {
  const gone = new AbortController();
  if (res.destroyed) gone.abort();
  else
    res.once('close', () => {
      if (!res.writableFinished) gone.abort();
    });
  return gone.signal;
}
