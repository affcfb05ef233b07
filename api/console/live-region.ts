// A region of a console page that the server keeps up to date (Server-Sent Events): the same
// render as the page's, sent again every few seconds while the page is open and its session live
// (a sign-out or an idle session ends the stream, saying so), until the render says there is
// nothing more to follow (a batch that ended). Pushed, not polled by the person: the page's script
// puts each render in place (api/console/assets/console.js). A stream is never the person's act:
// it does not keep their session alive. Streams are bounded per process; past it a stream is
// refused (503 with Retry-After) and the page stays as it was.
import type { Request, Response } from 'express';
import { consoleSessionStillLive, countedAsUse } from './console-auth.ts';
import { consoleHeaders } from './console-layout.ts';
import { endEvent } from './live-events.ts';

/** Streams open at once in this process, at most. */
const MAX_STREAMS = 200;
/** A stream ends after this long (the browser opens it again): no connection lives for ever. */
const STREAM_LIFETIME_MS = 10 * 60_000;
let open = 0;

export interface LiveRender {
  html: string;
  /** True when nothing will change any more: the last render, then the stream ends. */
  done?: boolean;
}

/** Sends `render()` now and every `everyMs`, as `message` events; an `end` event after the last. */
export async function streamLiveRegion(req: Request, res: Response, render: () => Promise<LiveRender>, everyMs: number): Promise<void> {
  // Declared as a stream, its route never counts as use (consoleRoutesOn): hold it to that.
  if (countedAsUse(res)) throw new Error('streamLiveRegion: a stream must not count as the person’s use of their session');
  if (open >= MAX_STREAMS) {
    res.setHeader('Retry-After', '30');
    res.status(503).end();
    return;
  }
  open += 1;
  consoleHeaders(res);
  res.status(200).setHeader('Content-Type', 'text/event-stream; charset=utf-8');
  res.setHeader('X-Accel-Buffering', 'no');
  res.flushHeaders();
  res.write('retry: 5000\n\n');
  let closed = false;
  req.on('close', () => {
    closed = true;
  });
  const endAt = Date.now() + STREAM_LIFETIME_MS;
  try {
    while (!closed && Date.now() < endAt) {
      // Signed out, or idle past the time-out (pushes are not the person's act): the stream ends, saying so.
      if (!(await consoleSessionStillLive(res))) {
        res.write(endEvent('signed-out'));
        break;
      }
      const { html, done } = await render();
      if (closed) break;
      // One `data:` line per line of the render: the event's data is the lines joined again.
      res.write(`${html.split('\n').map((line) => `data: ${line}`).join('\n')}\n\n`);
      if (done) {
        res.write(endEvent('done'));
        break;
      }
      await new Promise((resolve) => setTimeout(resolve, everyMs));
    }
  } finally {
    open -= 1;
    res.end();
  }
}
