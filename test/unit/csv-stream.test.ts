// The one writer of streamed CSVs (api/http/csv-stream.ts) over real HTTP, where its client and its
// source fail: a source that fails before anything was sent is the route's to answer (send
// rejects, nothing of the answer set), unless the client has gone already (nothing to answer).
import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { afterEach, describe, expect, it } from 'vitest';
import { createCsvStreams } from '../../api/http/csv-stream.ts';
import { createLogger } from '../../lib/logger.ts';

let server: http.Server | undefined;
afterEach(async () => {
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve) ?? resolve(undefined));
  server = undefined;
});

/** Rows whose first read fails once `before` has happened. */
const failingFirstRead = (before: Promise<unknown>): AsyncIterable<string[]> => ({
  [Symbol.asyncIterator]: () => ({
    next: async () => {
      await before;
      throw new Error('the first page could not be read');
    },
  }),
});

/** A server whose one route streams `rows` through csvStreams; what send did, once it is done. */
async function serve(rows: (clientGone: Promise<unknown>) => AsyncIterable<string[]>) {
  const streams = createCsvStreams({ logger: createLogger({ level: 'silent' }) });
  const app = express();
  let settled: Promise<{ outcome?: string; error?: unknown }> = new Promise(() => undefined);
  app.get('/report', (req, res) => {
    const clientGone = once(res, 'close');
    settled = streams.send(res, { report: 'test', header: ['a'], rows: rows(clientGone) }, {}).then(
      (result) => ({ outcome: result.outcome }),
      (error: unknown) => {
        if (!res.headersSent) res.status(503).json({ code: 'OVERLOADED' });
        return { error };
      },
    );
  });
  server = app.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/report`, settled: () => settled };
}

describe('a streamed CSV whose source fails before its first bytes', () => {
  it('is the route’s to answer with a status while its client waits', async () => {
    const { url, settled } = await serve(() => failingFirstRead(Promise.resolve()));
    const response = await fetch(url);
    expect(response.status).toBe(503);
    expect(await response.json()).toEqual({ code: 'OVERLOADED' });
    expect(await settled()).toMatchObject({ error: expect.any(Error) });
  });

  it('once its client has gone, ends as disconnected: nothing to answer, nothing thrown', async () => {
    const { url, settled } = await serve((clientGone) => failingFirstRead(clientGone));
    const request = http.get(url);
    request.on('error', () => undefined);
    await new Promise((resolve) => setTimeout(resolve, 100));
    request.destroy();
    // Before: thrown to the route's error handler, which wrote onto a destroyed answer and logged a 500.
    await expect
      .poll(async () => settled().then((done) => done), { timeout: 5000 })
      .toEqual({
        outcome: 'disconnected',
      });
  });
});

/** Rows counted as they are read: `pages` pages of `rowsPerPage`, each page a moment's wait (a database read). */
function countedRows(pages: number, rowsPerPage: number) {
  const read = { pages: 0 };
  async function* rows() {
    for (let page = 0; page < pages; page += 1) {
      await new Promise((resolve) => setTimeout(resolve, 1));
      read.pages += 1;
      for (let row = 0; row < rowsPerPage; row += 1) yield [`row ${page}-${row} ${'x'.repeat(40)}`];
    }
  }
  return { read, rows: rows() };
}

describe('a streamed CSV whose client went away before its first bytes', () => {
  it('reads not a row: the client left while the route read the database, before the stream began', async () => {
    // Found by a read: the pace listened for the response's 'close' only from the stream's start, and a route reads
    // the database first (a batch's view, a settlement's wait of up to 5 s). A client that left meanwhile was never
    // seen: a destroyed response takes every write without pushing back, so the report was read whole, page after
    // page, for no one, until the stall bound (an abandoned download of 100,000 lines read every one of them).
    const streams = createCsvStreams({ logger: createLogger({ level: 'silent' }) });
    const source = countedRows(200, 2000);
    const app = express();
    let settled: Promise<{ outcome: string; rows: number }> = new Promise(() => undefined);
    let routeBegan: () => void = () => undefined;
    const began = new Promise<void>((resolve) => (routeBegan = resolve));
    app.get('/report', (_req, res) => {
      routeBegan();
      // The route's reads before its answer, which end only once the client has gone.
      settled = once(res, 'close').then(() =>
        streams.send(res, { report: 'test', header: ['a'], rows: source.rows }, {}),
      );
    });
    server = app.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const request = http.get(`http://127.0.0.1:${(server.address() as AddressInfo).port}/report`);
    request.on('error', () => undefined);
    await began;
    request.destroy();
    // On the code before, it read on until the stall bound (120 s): still under way after 10 s.
    await expect.poll(() => Promise.race([settled, 'under way']), { timeout: 10_000 }).not.toBe('under way');
    expect(await settled).toEqual({ outcome: 'disconnected', rows: 0 });
    expect(source.read.pages).toBe(0);
  });
});
