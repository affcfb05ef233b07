// A region of a console page that the server keeps up to date (Server-Sent Events): the same
// render as the page's, sent again every few seconds while the page is open and its session live
// (a sign-out, an idle session or a sign-in that no longer holds ends the stream, saying so),
// until the render says there is nothing more to follow (a batch that ended). Pushed, not polled by
// the person: the page's script puts each render in place (api/console/assets/console.js). A
// stream is never the person's act: it does not keep their session alive. Streams are bounded per
// process (past it a stream is refused, 503 with Retry-After, and the page stays as it was) and
// per session in each process (past it the session's oldest stream ends, saying so).
import type { Request, Response } from 'express';
import type { Logger } from '../../lib/logger.ts';
import type { LiveStreamOutcome, Metrics } from '../../lib/metrics.ts';
import { consoleSessionOf, consoleSessionStillLive, countedAsUse } from './console-auth.ts';
import { consoleHeaders } from './console-layout.ts';
import { endEvent } from './live-events.ts';

/** Streams open at once in this process, at most. */
const MAX_STREAMS = 200;
/** Streams of one session open at once in this process, at most (a few pages watched in tabs). */
export const MAX_STREAMS_PER_SESSION = 4;
/** A stream ends after this long (the browser opens it again): no connection lives for ever. */
const STREAM_LIFETIME_MS = 10 * 60_000;

export interface LiveRender {
  html: string;
  /** True when nothing will change any more: the last render, then the stream ends. */
  done?: boolean;
}

export interface LiveStreams {
  /** Sends `render()` now and every `everyMs`, as `message` events; an `end` event after the last. */
  stream(req: Request, res: Response, render: () => Promise<LiveRender>, everyMs: number): Promise<void>;
}

export interface LiveStreamsOptions {
  logger: Logger;
  metrics?: Pick<Metrics, 'liveStreamsHeld' | 'liveStreamEnded'> | undefined;
  /** Tests: every region pushes this often instead of at its own pace. */
  pushEveryMs?: number | undefined;
}

/** The process's live streams: its slots, each session's streams, and how each is written. */
export function createLiveStreams(options: LiveStreamsOptions): LiveStreams {
  let open = 0;
  /** Each session's streams in this process, oldest first: how to end each one early. */
  const bySession = new Map<string, Array<{ replace(): void }>>();
  /** The responses of the open streams: what they hold is read when the metrics are collected. */
  const responses = new Set<Response>();
  options.metrics?.liveStreamsHeld(() => ({ open, bufferedBytes: [...responses].reduce((sum, res) => sum + res.writableLength, 0) }));

  return {
    async stream(req, res, render, everyMs) {
      const session = consoleSessionOf(res);
      // Declared as a stream, its route never counts as use (consoleRoutesOn): hold it to that.
      if (!session || countedAsUse(res)) throw new Error('liveStreams.stream: a stream needs a live session, and must not count as its use');
      if (open >= MAX_STREAMS) {
        res.setHeader('Retry-After', '30');
        res.status(503).end();
        return;
      }
      const pace = options.pushEveryMs ?? everyMs;
      open += 1;
      responses.add(res);
      let closed = false;
      let replaced = false;
      let wake = () => {};
      let outcome: LiveStreamOutcome = 'lifetime';
      const mine = bySession.get(session.id) ?? [];
      bySession.set(session.id, mine);
      while (mine.length >= MAX_STREAMS_PER_SESSION) mine.shift()!.replace();
      const entry = {
        replace() {
          replaced = true;
          wake();
        },
      };
      mine.push(entry);
      consoleHeaders(res);
      res.status(200).setHeader('Content-Type', 'text/event-stream; charset=utf-8');
      res.setHeader('X-Accel-Buffering', 'no');
      res.flushHeaders();
      res.write('retry: 5000\n\n');
      req.on('close', () => {
        closed = true;
        wake();
      });
      const endAt = Date.now() + STREAM_LIFETIME_MS;
      try {
        while (!closed && Date.now() < endAt) {
          if (replaced) {
            res.write(endEvent('replaced'));
            outcome = 'replaced';
            break;
          }
          // Signed out, idle past the time-out, or its sign-in no longer holds: the stream ends, saying so.
          if (!(await consoleSessionStillLive(res))) {
            res.write(endEvent('signed-out'));
            outcome = 'signed-out';
            break;
          }
          const { html, done } = await render();
          if (closed) break;
          // One `data:` line per line of the render: the event's data is the lines joined again.
          res.write(`${html.split('\n').map((line) => `data: ${line}`).join('\n')}\n\n`);
          if (done) {
            res.write(endEvent('done'));
            outcome = 'done';
            break;
          }
          await new Promise<void>((resolve) => {
            const timer = setTimeout(resolve, pace);
            wake = () => {
              clearTimeout(timer);
              resolve();
            };
          });
        }
        if (closed) outcome = 'disconnected';
      } finally {
        open -= 1;
        responses.delete(res);
        const index = mine.indexOf(entry);
        if (index >= 0) mine.splice(index, 1);
        if (mine.length === 0 && bySession.get(session.id) === mine) bySession.delete(session.id);
        res.end();
        options.metrics?.liveStreamEnded(outcome);
      }
    },
  };
}
