// A region of a console page that the server keeps up to date (Server-Sent Events): the same
// render as the page's, sent again every few seconds while the page is open and its session live
// (a sign-out, an idle session or a sign-in that no longer holds ends the stream, saying so, and
// so does a session that no longer has the route's scope: checked again at every push),
// until the render says there is nothing more to follow (a batch that ended). Pushed, not polled by
// the person: the page's script puts each render in place (api/console/assets/console.js). A
// stream is never the person's act: it does not keep their session alive. Streams are bounded per
// process (past it a stream is refused, 503 with Retry-After, and the page stays as it was), per
// session and per person, whatever their sessions, in each process (past either, the oldest stream
// ends, saying so).
//
// Each stream is written at its client's pace (api/http/paced-response.ts), so a client that stops
// reading (a frozen tab, a suspended laptop whose connection stays open, a stuck proxy) costs the
// API a bounded amount (architecture.md, invariant 16): a push is rendered and written only when
// the socket can take it; while it cannot, nothing is rendered or kept (a live region needs only
// its latest state), and once the client has taken what its socket held it gets the state as it
// is then. A client that takes nothing for LIVE_STALL_MS once its socket is full is cut off (the
// browser opens the stream again when it wakes), and the end of a stream, however it ends, lets go
// of its slot, its session's and its person's places and its connection.
import type { Request, Response } from 'express';
import type { Logger } from '../../lib/logger.ts';
import type { LiveStreamOutcome, Metrics } from '../../lib/metrics.ts';
import { checkedScopeOf } from '../http/actor.ts';
import { paceResponse, type PacedResponse } from '../http/paced-response.ts';
import { consoleScopesNow, consoleSessionOf, countedAsUse } from './console-auth.ts';
import { consoleHeaders } from './console-layout.ts';
import { endEvent } from './live-events.ts';

/** Streams open at once in this process, at most. */
const MAX_STREAMS = 200;
/** Streams of one session open at once in this process, at most (a few pages watched in tabs). */
export const MAX_STREAMS_PER_SESSION = 4;
/** Streams of one person open at once in this process, at most, whatever their sessions (two browsers' tabs). */
export const MAX_STREAMS_PER_PERSON = 8;
/** A stream ends after this long (the browser opens it again): no connection lives for ever. */
const STREAM_LIFETIME_MS = 10 * 60_000;
/**
 * How long a client may take nothing once its socket is full before its stream is cut off: 6 of
 * Home's pushes, 30 of a batch's. A client that reads at all empties a socket's buffer (64 KiB)
 * far sooner; a cut costs a live page only a reconnection (its EventSource tries again after 5 s
 * and gets the state then), while a stream held costs one of the process's 200 slots.
 */
export const LIVE_STALL_MS = 30_000;

interface OpenStream {
  replace(): void;
}

/** `entry` among `key`'s streams in `map`, the oldest ended first while `bound` are open. */
function join(map: Map<string, OpenStream[]>, key: string, entry: OpenStream, bound: number): void {
  const streams = map.get(key) ?? [];
  while (streams.length >= bound) streams.shift()!.replace();
  streams.push(entry);
  map.set(key, streams);
}

/** `entry` out of `key`'s streams in `map` (nothing when it is not there). */
function leave(map: Map<string, OpenStream[]>, key: string, entry: OpenStream): void {
  const streams = map.get(key);
  if (!streams) return;
  const index = streams.indexOf(entry);
  if (index >= 0) streams.splice(index, 1);
  if (streams.length === 0) map.delete(key);
}

export interface LiveRender {
  html: string;
  /** True when nothing will change any more: the last render, then the stream ends. */
  done?: boolean;
}

export interface LiveStreams {
  /** Sends `render()` now and every `everyMs`, as `message` events; an `end` event after the last. */
  stream(req: Request, res: Response, render: () => Promise<LiveRender>, everyMs: number): Promise<void>;
  /** How often a region of pace `everyMs` is pushed here (a test's stack pushes faster). */
  paceOf(everyMs: number): number;
}

export interface LiveStreamsOptions {
  logger: Logger;
  metrics?: Pick<Metrics, 'liveStreamsHeld' | 'liveStreamEnded'> | undefined;
  /** Tests: every region pushes this often instead of at its own pace. */
  pushEveryMs?: number | undefined;
  /** Tests: a shorter stall bound; absent: LIVE_STALL_MS. */
  stallMs?: number | undefined;
}

/** One push: one `data:` line per line of the render (the event's data is the lines joined again). */
const dataEvent = (html: string): string =>
  `${html
    .split('\n')
    .map((line) => `data: ${line}`)
    .join('\n')}\n\n`;

/** The process's live streams: its slots, each session's streams, and how each is written. */
export function createLiveStreams(options: LiveStreamsOptions): LiveStreams {
  const stallMs = options.stallMs ?? LIVE_STALL_MS;
  /** The open streams' answers: their count is the process's slots taken; what they hold is read by the metrics. */
  const open = new Set<PacedResponse>();
  /** Each session's streams in this process, oldest first: how to end each one early. */
  const bySession = new Map<string, OpenStream[]>();
  /** Each person's streams in this process, whatever their sessions, oldest first. */
  const byPerson = new Map<string, OpenStream[]>();
  options.metrics?.liveStreamsHeld(() => ({
    open: open.size,
    bufferedBytes: [...open].reduce((sum, paced) => sum + paced.buffered(), 0),
  }));

  const paceOf = (everyMs: number) => options.pushEveryMs ?? everyMs;

  return {
    paceOf,
    async stream(req, res, render, everyMs) {
      const session = consoleSessionOf(res);
      const scope = checkedScopeOf(res.locals);
      // Declared as a stream, its route never counts as use (consoleRoutesOn): hold it to that. Its scope is checked
      // again at every push.
      if (!session || !scope || countedAsUse(res))
        throw new Error(
          'liveStreams.stream: a stream needs a live session and its route’s scope check, and must not count as its use',
        );
      if (open.size >= MAX_STREAMS) {
        res.setHeader('Retry-After', '30');
        res.status(503).end();
        return;
      }
      const pace = paceOf(everyMs);
      const paced = paceResponse(res, { stallMs });
      // Its browser left before the stream began: it takes no place, and ends no other stream of its session.
      if (paced.stopped.aborted) {
        options.metrics?.liveStreamEnded('disconnected');
        return;
      }
      open.add(paced);
      let replaced = false;
      let wake = () => {};
      /** Waits `ms`, or less when woken: a newer stream of the session took this one's place, or the answer stopped. */
      const pause = (ms: number) =>
        new Promise<void>((resolve) => {
          const done = () => {
            clearTimeout(timer);
            wake = () => {};
            resolve();
          };
          const timer = setTimeout(done, ms);
          wake = done;
        });
      paced.stopped.addEventListener('abort', () => wake(), { once: true });
      const entry: OpenStream = {
        replace() {
          replaced = true;
          // Out of both counts at once: a stream ended by one bound no longer takes a place under the other.
          leave(bySession, session.id, entry);
          leave(byPerson, session.personId, entry);
          wake();
        },
      };
      // A session's oldest ends past its bound, and a person's oldest past theirs (signing in again and again makes
      // sessions, not slots).
      join(bySession, session.id, entry, MAX_STREAMS_PER_SESSION);
      join(byPerson, session.personId, entry, MAX_STREAMS_PER_PERSON);
      let outcome: LiveStreamOutcome = 'lifetime';
      try {
        consoleHeaders(res);
        res.status(200).setHeader('Content-Type', 'text/event-stream; charset=utf-8');
        res.setHeader('X-Accel-Buffering', 'no');
        res.flushHeaders();
        paced.write('retry: 5000\n\n');
        const endAt = Date.now() + STREAM_LIFETIME_MS;
        /** The stream's last event, when it ends saying why. */
        let last: string | undefined;
        while (!paced.stopped.aborted && Date.now() < endAt) {
          if (replaced) {
            last = endEvent('replaced');
            outcome = 'replaced';
            break;
          }
          // The client has not taken what its socket holds: nothing is rendered or kept for it until
          // it has (or it is cut off); then the next push is the state as it is then.
          if (!paced.hasRoom()) {
            await Promise.race([paced.room(), pause(endAt - Date.now())]);
            wake();
            continue;
          }
          // Signed out, idle past the time-out, or its sign-in no longer holds: the stream ends, saying so.
          const scopes = await consoleScopesNow(res);
          if (!scopes) {
            last = endEvent('signed-out');
            outcome = 'signed-out';
            break;
          }
          // The session holds but may no longer see this (its route's scope): nothing more is pushed.
          if (!scopes.has(scope)) {
            last = endEvent('refused');
            outcome = 'refused';
            break;
          }
          const { html, done } = await render();
          if (paced.stopped.aborted) break;
          paced.write(dataEvent(html));
          if (done) {
            last = endEvent('done');
            outcome = 'done';
            break;
          }
          await pause(pace);
        }
        // The last event goes out as every push does: a client that does not take it is cut off too.
        const ended = await paced.end(last);
        if (ended !== 'completed') outcome = ended;
      } catch (error) {
        // A render that failed (the database): the stream is cut, and the browser opens it again.
        outcome = 'failed';
        paced.destroy();
        options.logger.error({ err: error, path: req.path }, 'a console live stream failed: it is cut off');
      } finally {
        open.delete(paced);
        leave(bySession, session.id, entry);
        leave(byPerson, session.personId, entry);
        options.metrics?.liveStreamEnded(outcome);
      }
    },
  };
}
