// Every CSV the API streams (a batch's report, in the ops API and the console; any report or export
// read from the database a page at a time) goes out through here, so memory is bounded by design
// (architecture.md, invariant 16) whatever the client does: rows are taken from their source only
// as fast as the client takes the lines before them (each write waits for 'drain' once the socket's
// buffer is full), so a client that reads slowly or stops reading holds the API to one page of rows
// and one buffer of lines; a client that goes away stops the reading at once, and the source is
// closed (its iterator's return(): a generator's `finally` releases what it holds); a client that
// stops reading for longer than the stall limit is cut off. A failure half-way breaks the answer
// off (the connection is destroyed), so half a report never looks like a whole one.
import type { Response } from 'express';
import { csvLine, type CsvReport } from '../../lib/csv.ts';
import type { Logger } from '../../lib/logger.ts';
import type { Metrics, ReportStreamOutcome } from '../../lib/metrics.ts';

/** Lines gathered into one write of about this many bytes: fewer, larger chunks on the socket. */
const WRITE_BYTES = 16 * 1024;

/** How long a client may take nothing before it is cut off (a paused reader holds a page and a connection). */
export const CSV_STALL_MS = 120_000;

export interface CsvStreams {
  /**
   * Writes `csv` to `res` (its status and headers already set; the header line first) and ends it;
   * resolves when the answer is complete or given up: how it ended, and how many rows were read.
   */
  send(res: Response, csv: CsvReport): Promise<{ outcome: ReportStreamOutcome; rows: number }>;
}

export function createCsvStreams(deps: { logger: Logger; metrics?: Pick<Metrics, 'reportRows' | 'reportStreamEnded'> | undefined; stallMs?: number }): CsvStreams {
  const stallMs = deps.stallMs ?? CSV_STALL_MS;

  /** Waits until the response can take more: 'drain', or false when the client went away or stalled. */
  async function drained(res: Response, gone: AbortSignal): Promise<'drained' | 'disconnected' | 'stalled'> {
    if (gone.aborted) return 'disconnected';
    return new Promise((resolve) => {
      const finish = (how: 'drained' | 'disconnected' | 'stalled') => {
        clearTimeout(timer);
        res.off('drain', onDrain);
        gone.removeEventListener('abort', onGone);
        resolve(how);
      };
      const onDrain = () => finish('drained');
      const onGone = () => finish('disconnected');
      const timer = setTimeout(() => finish('stalled'), stallMs);
      res.on('drain', onDrain);
      gone.addEventListener('abort', onGone, { once: true });
    });
  }

  return {
    async send(res, csv) {
      // The client is gone once the response closes before it finished.
      const client = new AbortController();
      const onClose = () => {
        if (!res.writableFinished) client.abort();
      };
      res.on('close', onClose);
      let rows = 0;
      let counted = 0;
      let pending = typeof csv.header === 'string' ? csv.header : csvLine(csv.header);
      const count = () => {
        deps.metrics?.reportRows(csv.report, rows - counted);
        counted = rows;
      };
      /** Writes what is gathered; then, if the socket's buffer is full, waits for it to drain. */
      const flush = async (): Promise<'drained' | 'disconnected' | 'stalled'> => {
        count();
        const room = res.write(pending);
        pending = '';
        return room ? (client.signal.aborted ? 'disconnected' : 'drained') : drained(res, client.signal);
      };
      let outcome: ReportStreamOutcome = 'completed';
      try {
        // Leaving the loop early (return, break, a throw) closes the source: its reads stop there.
        for await (const row of csv.rows) {
          rows += 1;
          pending += csvLine(row);
          if (pending.length < WRITE_BYTES) continue;
          const state = await flush();
          if (state !== 'drained') {
            outcome = state;
            break;
          }
        }
        if (outcome === 'completed' && client.signal.aborted) outcome = 'disconnected';
        if (outcome === 'completed') {
          count();
          res.end(pending);
        }
      } catch (error) {
        outcome = 'failed';
        deps.logger.error({ err: error, report: csv.report, rows }, 'a streamed report broke off: its answer is cut short');
      } finally {
        res.off('close', onClose);
      }
      if (outcome !== 'completed') {
        // Half a report must not look like a whole one, and a stalled client's connection is let go.
        res.destroy();
        if (outcome !== 'failed') deps.logger.info({ report: csv.report, rows, outcome }, 'a streamed report stopped: the client went away or stopped reading');
      }
      deps.metrics?.reportStreamEnded(csv.report, outcome);
      return { outcome, rows };
    },
  };
}
