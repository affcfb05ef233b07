// Every CSV the API streams (a batch's report, in the ops API and the console; any report or export
// read from the database a page at a time) goes out through here, so memory is bounded by design
// (architecture.md, invariant 16) whatever the client does: rows are taken from their source only
// as fast as the client takes the lines before them (written at the client's pace by
// ./paced-response.ts: once the socket's buffer is full, the next page waits for 'drain'), so a
// client that reads slowly or stops reading holds the API to one page of rows and one buffer of
// lines; a client that goes away stops the reading at once, and the source is closed (its
// iterator's return(): a generator's `finally` releases what it holds); a client that stops
// reading for longer than the stall limit is cut off, the end of the report included. The
// answer's status and the report's headers go out with its first bytes: a failure before them (the
// first page's read refused under load) is thrown to the route's error handler, which answers it
// with a status (503 OVERLOADED and Retry-After for a refused connection); a failure after them
// breaks the answer off (the connection is destroyed), so half a report never looks like a whole
// one. A download from a console session asks again, every RECHECK_MS of it, whether the session
// still holds the route's scope: one signed out, gone idle or past its lifetime meanwhile gets no
// more rows.
import type { Response } from 'express';
import { csvLine, type CsvReport } from '../../lib/csv.ts';
import type { Logger } from '../../lib/logger.ts';
import type { Metrics, ReportStreamOutcome } from '../../lib/metrics.ts';
import { mayGoOn } from './actor.ts';
import { paceResponse } from './paced-response.ts';

/** Lines gathered into one write of about this many bytes: fewer, larger chunks on the socket. */
const WRITE_BYTES = 16 * 1024;

/** How long a client may take nothing before it is cut off (a paused reader holds a page and a connection). */
export const CSV_STALL_MS = 120_000;

/** How often a download whose actor may end meanwhile (a console session) asks whether it still may go on. */
export const RECHECK_MS = 10_000;

export interface CsvStreams {
  /**
   * Writes `csv` to `res` as a 200 `text/csv` answer with `headers` (its file's name, …), the header line first, and
   * ends it; resolves when the answer is complete or given up: how it ended, and how many rows were read. Rejects
   * with a failure that came before anything was sent (nothing of the answer set: the error handler answers it).
   */
  send(
    res: Response,
    csv: CsvReport,
    headers: Record<string, string>,
  ): Promise<{ outcome: ReportStreamOutcome; rows: number }>;
}

export function createCsvStreams(deps: {
  logger: Logger;
  metrics?: Pick<Metrics, 'reportRows' | 'reportStreamEnded'> | undefined;
  stallMs?: number;
  recheckMs?: number;
}): CsvStreams {
  const stallMs = deps.stallMs ?? CSV_STALL_MS;
  const recheckMs = deps.recheckMs ?? RECHECK_MS;

  return {
    async send(res, csv, headers) {
      const answer = () => res.status(200).type('text/csv; charset=utf-8').set(headers);
      // A HEAD's answer has no body, and Node drops what is written to it without pushing back: the
      // report would be read whole for nothing. Its headers, then the end; nothing read.
      if (res.req.method === 'HEAD') {
        answer().end();
        return { outcome: 'completed', rows: 0 };
      }
      const paced = paceResponse(res, { stallMs });
      let rows = 0;
      let counted = 0;
      let pending = typeof csv.header === 'string' ? csv.header : csvLine(csv.header);
      const count = () => {
        deps.metrics?.reportRows(csv.report, rows - counted);
        counted = rows;
      };
      let outcome: ReportStreamOutcome = paced.stoppedBy() ?? 'completed';
      let checkedAt = Date.now();
      let started = false;
      const start = () => {
        if (!started) answer();
        started = true;
      };
      try {
        // Leaving the loop early (return, break, a throw) closes the source: its reads stop there. A client gone before
        // the answer began (while its route read the database) has not a row read for it: the source is never opened.
        for await (const row of outcome === 'completed' ? csv.rows : []) {
          rows += 1;
          pending += csvLine(row);
          if (pending.length < WRITE_BYTES) continue;
          // Writes what is gathered; then, if the socket's buffer is full, waits for it to drain.
          count();
          start();
          const state = paced.write(pending) ? 'drained' : await paced.room();
          pending = '';
          if (state !== 'drained') {
            outcome = state;
            break;
          }
          if (Date.now() - checkedAt >= recheckMs) {
            checkedAt = Date.now();
            if (!(await mayGoOn(res.locals))) {
              outcome = 'refused';
              break;
            }
          }
        }
        if (outcome === 'completed' && !(await mayGoOn(res.locals))) outcome = 'refused';
        if (outcome === 'completed') {
          count();
          start();
          outcome = await paced.end(pending);
        }
      } catch (error) {
        const stopped = paced.stoppedBy();
        // The client went (or stalled) first: that is how it ended, and there is no one to answer.
        if (stopped !== null) outcome = stopped;
        else if (!started) {
          // Nothing was sent: the route's error handler answers with a status, and the client can tell.
          paced.release();
          deps.metrics?.reportStreamEnded(csv.report, 'failed');
          throw error;
        } else {
          outcome = 'failed';
          deps.logger.error(
            { err: error, report: csv.report, rows },
            'a streamed report broke off: its answer is cut short',
          );
        }
      }
      if (outcome !== 'completed') {
        // Half a report must not look like a whole one (a stalled client's connection is already let go).
        paced.destroy();
        if (outcome !== 'failed')
          deps.logger.info(
            { report: csv.report, rows, outcome },
            'a streamed report stopped: the client went away or stopped reading, or may no longer read it',
          );
      }
      deps.metrics?.reportStreamEnded(csv.report, outcome);
      return { outcome, rows };
    },
  };
}
