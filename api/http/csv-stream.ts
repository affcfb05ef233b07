// A CSV download sent as it is read: each chunk written when the client can take it (back-pressure:
// the source is not read further until the socket drains), the source closed as soon as the client
// goes away, and a broken source ending the download as a failure rather than as a short file.
// Self-contained on purpose: one shared streamed-CSV helper for every report can replace it.
import { once } from 'node:events';
import type { Response } from 'express';

/** Waits until the response can take more, or the client went away (false). */
async function writable(res: Response): Promise<boolean> {
  if (res.destroyed) return false;
  if (!res.writableNeedDrain) return true;
  const stop = new AbortController();
  try {
    await Promise.race([once(res, 'drain', { signal: stop.signal }), once(res, 'close', { signal: stop.signal })]);
  } catch {
    // Aborted below once one of the two came.
  } finally {
    stop.abort();
  }
  return !res.destroyed;
}

/**
 * Sends `lines` (each CSV text, CRLF-terminated) as `filename`, status 200. Stops reading `lines`
 * (its generator's finally runs) when the client goes away; a failure of `lines` is passed to
 * `onBroken` and the connection destroyed, so a half report never looks whole.
 */
export async function sendCsvStream(res: Response, input: { filename: string; lines: AsyncIterable<string>; onBroken: (error: unknown) => void }): Promise<void> {
  res.status(200).type('text/csv; charset=utf-8').setHeader('Content-Disposition', `attachment; filename="${input.filename}"`);
  try {
    for await (const line of input.lines) {
      if (!res.write(line) && !(await writable(res))) return;
      if (res.destroyed) return;
    }
    res.end();
  } catch (error) {
    input.onBroken(error);
    res.destroy();
  }
}
