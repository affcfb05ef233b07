// The events a console page's live region understands besides its renders (api/console/assets/console.js):
// `end` with why, after which the page stops listening and, for an ended session, says so.
import type { Response } from 'express';
import { consoleHeaders } from './console-layout.ts';

/**
 * Why a live region's stream ended: nothing more will change; the session ended; the session opened too many others;
 * the session may no longer see it (its scope).
 */
export type LiveEnd = 'done' | 'signed-out' | 'replaced' | 'refused';

export const endEvent = (why: LiveEnd): string => `event: end\ndata: ${why}\n\n`;

/**
 * The whole answer to a stream asked for without a live session: it ends at once, saying so, so the browser stops
 * asking.
 */
export function sendEndedStream(res: Response): void {
  consoleHeaders(res);
  res.status(200).type('text/event-stream; charset=utf-8').send(endEvent('signed-out'));
}
