// A batch's report of 100,000 items streamed over real HTTP (api/http/csv-stream.ts, the one way
// every CSV report goes out): a client that stops reading holds the API to what the sockets' buffers
// take, not the report; a client that goes away stops the database reads; the API, as production
// runs it under its 192 MiB heap cap, lives through several such downloads at once and answers
// beside them. Rows read are the API's own count (walletflow_report_rows_total), read at /metrics.
import { randomUUID } from 'node:crypto';
import http, { type ClientRequest, type IncomingMessage } from 'node:http';
import type net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { batchRecordsOn, codeItems } from '../support/batch-records.ts';
import { consoleSessionWithKey } from '../support/console-key-sign-in.ts';
import { startApiProcess, type ApiProcess } from '../support/api-process.ts';
import { startPartnerStack, type PartnerStack } from '../support/partner-stack.ts';
import { sampleValue } from '../support/prometheus-text.ts';
import { waitFor } from '../support/wait-for.ts';

const ITEMS = 100_000;
let stack: PartnerStack;
let batchId: string;

beforeAll(async () => {
  // A console download asks again whether its session holds every 200 ms of it (the API's 10 s).
  stack = await startPartnerStack({ reportRecheckMs: 200 });
  const { credit, insertBatch } = batchRecordsOn(stack.database);
  const partnerUserId = `report-${randomUUID()}`;
  await credit(partnerUserId, BigInt(ITEMS) * 1000n);
  batchId = randomUUID();
  const items = codeItems(batchId, ITEMS, {
    reference: (index) => `report-${String(index).padStart(6, '0')}`,
    code: (index) => String(1_000_000 + index),
    amount: 1000n,
  });
  // Stored waiting for approval (no runner): the report reads its items as they are.
  await insertBatch(batchId, partnerUserId, items, 0n);
}, 240_000);
afterAll(() => stack?.close());

interface Download {
  request: ClientRequest;
  response: IncomingMessage;
  /** Bytes received so far. */
  received(): number;
  /** Reads on to the end: the whole body. */
  readToEnd(): Promise<string>;
}

/**
 * GETs the report with an ops key (or a console session's cookie) and reads `firstBytes` of it, then stops reading
 * (the response paused: the sockets' buffers fill).
 */
function openPaused(
  base: string,
  key: string | { cookie: string },
  path: string,
  firstBytes: number,
): Promise<Download> {
  return new Promise((resolve, reject) => {
    const headers = typeof key === 'string' ? { authorization: `Bearer ${key}` } : { cookie: key.cookie };
    const request = http.get(`${base}${path}`, { headers });
    request.on('error', reject);
    request.on('response', (response) => {
      if (response.statusCode !== 200) reject(new Error(`the report answered ${response.statusCode}`));
      const chunks: Buffer[] = [];
      let received = 0;
      const onData = (chunk: Buffer) => {
        chunks.push(chunk);
        received += chunk.length;
        if (received >= firstBytes) {
          response.pause();
          response.off('data', onData);
          resolve({
            request,
            response,
            received: () => received,
            readToEnd: () =>
              new Promise((done, failed) => {
                response.on('data', (more: Buffer) => {
                  chunks.push(more);
                  received += more.length;
                });
                response.on('end', () => done(Buffer.concat(chunks).toString('utf8')));
                response.on('error', failed);
                response.resume();
              }),
          });
        }
      };
      response.on('data', onData);
    });
  });
}

/** The value once it has stopped changing (the same for `quietMs`). */
async function settled(read: () => Promise<number>, quietMs = 1500): Promise<number> {
  let last = await read();
  let since = Date.now();
  const deadline = Date.now() + 60_000;
  while (Date.now() - since < quietMs) {
    if (Date.now() > deadline) throw new Error('the value kept changing for a minute');
    await new Promise((resolve) => setTimeout(resolve, 200));
    const now = await read();
    if (now !== last) {
      last = now;
      since = Date.now();
    }
  }
  return last;
}

/**
 * How many bytes this machine's loopback connections take from an HTTP answer written with
 * back-pressure whose reader read 64 KiB and then stopped, as openPaused reads (both sockets'
 * kernel buffers, which grow on their own, and the client's and server's stream buffers; about
 * 4 MB here): the baseline of what a paused download may have had read for it without the API
 * holding any of it. The most of three connections.
 */
async function loopbackAbsorbs(): Promise<number> {
  const written: number[] = [];
  const server = http.createServer((_req, res) => {
    let sent = 0;
    const chunk = Buffer.alloc(16 * 1024, 'x');
    const pump = () => {
      do sent += chunk.length;
      while (res.write(chunk));
      const stuck = setTimeout(() => {
        written.push(sent);
        res.destroy();
      }, 1000);
      res.once('drain', () => {
        clearTimeout(stuck);
        pump();
      });
    };
    pump();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`;
  for (let probe = 0; probe < 3; probe += 1) {
    const download = await openPaused(base, 'probe', '/', 64 * 1024);
    await waitFor('the probe writer is stuck', () => (written.length > probe ? true : undefined), 30_000);
    download.request.destroy();
  }
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  return Math.max(...written);
}

/**
 * What the API may hold of a paused download beyond what the connection took: a page of rows
 * (2,000, 164 KB) and a write's worth, with room for the connection taking more than the baseline
 * did (loopback buffers grow on their own: 1 to 2.1 MB more were seen, the most on a loaded
 * machine). Without back-pressure the API reads the whole report, 8.2 MB: about 4.3 MB past the
 * connection.
 */
const HELD_AT_MOST = 3 * 1024 * 1024;

const reportPath = () => `/ops/funding-batches/${batchId}/report`;
const inProcessMetric = async (name: string, labels: Record<string, string>) =>
  sampleValue(await stack.apiMetrics.registry.metrics(), name, labels) ?? 0;
const rowsRead = () => inProcessMetric('walletflow_report_rows_total', { report: 'batch-report' });

describe('a 100,000-item report streamed to a client', () => {
  it('that stops reading: the API reads only what the sockets’ buffers take, and once it reads again, the whole report comes, line by line', async () => {
    const absorbed = await loopbackAbsorbs();
    const before = await rowsRead();
    const download = await openPaused(stack.apiBase, stack.opsKey, reportPath(), 64 * 1024);
    const whilePaused = (await settled(rowsRead)) - before;
    const body = await download.readToEnd();
    // The rows read while the client read nothing, in bytes of the report: what the sockets took, and
    // at most a page more in the API. (Without back-pressure: the whole report, 7 MB, 3 MB past the sockets.)
    const bytesPerRow = Buffer.byteLength(body) / ITEMS;
    expect(
      whilePaused * bytesPerRow - absorbed,
      `bytes read past what the sockets took (${whilePaused} rows; the sockets took ${absorbed} bytes)`,
    ).toBeLessThan(HELD_AT_MOST);
    const lines = body.split('\r\n');
    expect(lines.at(-1)).toBe('');
    expect(lines).toHaveLength(ITEMS + 2);
    expect(lines[0]).toBe('"reference","funding_id","status","error_code","currency","amount"');
    expect(lines[1]).toMatch(/^"report-000000","[0-9a-f-]{36}","PENDING","","PHP","1.00"$/);
    expect(lines[ITEMS]).toMatch(/^"report-099999",/);
    expect((await rowsRead()) - before).toBe(ITEMS);
    expect(
      await inProcessMetric('walletflow_report_streams_total', { report: 'batch-report', outcome: 'completed' }),
    ).toBeGreaterThanOrEqual(1);
  }, 120_000);

  it('asked for with HEAD: its headers, and not a row read', async () => {
    const before = await rowsRead();
    const head = await fetch(`${stack.apiBase}${reportPath()}`, {
      method: 'HEAD',
      headers: { authorization: `Bearer ${stack.opsKey}` },
    });
    expect(head.status).toBe(200);
    expect(head.headers.get('content-type')).toMatch(/^text\/csv/);
    expect(await head.text()).toBe('');
    // Node ignores what is written to a HEAD's answer without ever pushing back: the report would be read whole.
    expect((await settled(rowsRead)) - before).toBe(0);
  }, 120_000);

  it('that goes away half-way: the database reads stop there', async () => {
    const before = await rowsRead();
    const disconnectedBefore = await inProcessMetric('walletflow_report_streams_total', {
      report: 'batch-report',
      outcome: 'disconnected',
    });
    const download = await openPaused(stack.apiBase, stack.opsKey, reportPath(), 256 * 1024);
    download.request.destroy();
    await waitFor(
      'the API counts the report as disconnected',
      async () =>
        (await inProcessMetric('walletflow_report_streams_total', {
          report: 'batch-report',
          outcome: 'disconnected',
        })) > disconnectedBefore
          ? true
          : undefined,
      30_000,
    );
    const read = (await settled(rowsRead)) - before;
    expect(read, 'rows read by a report whose client went away').toBeLessThan(ITEMS / 2);
    expect(read).toBeGreaterThan(0);
  }, 120_000);

  it('to a console session signed out meanwhile: the rest is not read or sent', async () => {
    // Found by a read: a console download never asked again whether its session held, so one begun before a sign-out
    // (or the session's idle end) read on, the whole report, at whatever pace its reader took it.
    const cookie = await consoleSessionWithKey(stack.apiBase, stack.opsKey);
    const refused = () =>
      inProcessMetric('walletflow_report_streams_total', { report: 'batch-report', outcome: 'refused' });
    const [before, refusedBefore] = [await rowsRead(), await refused()];
    const download = await openPaused(stack.apiBase, { cookie }, `/console/batches/${batchId}/report`, 64 * 1024);
    const home = await fetch(`${stack.apiBase}/console`, { headers: { cookie } });
    const csrf = /name="_csrf" value="([^"]+)"/.exec(await home.text())![1]!;
    const signedOut = await fetch(`${stack.apiBase}/console/sign-out`, {
      method: 'POST',
      redirect: 'manual',
      headers: { cookie, 'content-type': 'application/x-www-form-urlencoded', origin: stack.apiBase },
      body: `_csrf=${encodeURIComponent(csrf)}`,
    });
    await signedOut.arrayBuffer();
    expect(signedOut.status).toBe(303);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const whole = await download.readToEnd().then(
      (body) => body.split('\r\n').length,
      () => 'cut off' as const,
    );
    expect(whole).toBe('cut off');
    await waitFor(
      'the API counts the report as refused',
      async () => ((await refused()) > refusedBefore ? true : undefined),
      30_000,
    );
    expect((await settled(rowsRead)) - before, 'rows read by a download whose session ended').toBeLessThan(ITEMS / 2);
  }, 120_000);
});

describe('paused downloads of a 100,000-item report, against the API process under its heap cap', () => {
  let api: ApiProcess;
  const reader = randomUUID();
  beforeAll(async () => {
    api = await startApiProcess({
      ...stack.workerEnv(),
      OPS_API_KEYS: `reader:read+fund:${reader}`,
      LOG_LEVEL: 'warn',
    });
  }, 120_000);
  afterAll(() => api?.stop());

  const apiMetric = async (name: string, labels: Record<string, string> = {}) =>
    sampleValue(await (await fetch(`${api.base}/metrics`)).text(), name, labels) ?? 0;

  it('six paused at once: the API holds none of the reports, answers beside them, and stops reading when they go', async () => {
    const absorbed = await loopbackAbsorbs();
    const heapBefore = await apiMetric('nodejs_heap_size_used_bytes');
    const downloads = await Promise.all(
      Array.from({ length: 6 }, () => openPaused(api.base, reader, reportPath(), 64 * 1024)),
    );
    const whilePaused = await settled(() => apiMetric('walletflow_report_rows_total', { report: 'batch-report' }));
    expect(api.exited(), api.output().slice(-2000)).toBeNull();
    // Each download read what its connection took and at most a page more (a report's row: 82 bytes).
    expect(
      whilePaused * 82 - 6 * absorbed,
      `bytes read past what six downloads' sockets took (${whilePaused} rows)`,
    ).toBeLessThan(6 * HELD_AT_MOST);
    // The heap holds about a page of rows per download, not the reports (six of them: about 40 MB of text).
    const heapPaused = await apiMetric('nodejs_heap_size_used_bytes');
    expect(heapPaused - heapBefore, 'heap grown by six paused downloads').toBeLessThan(32 * 1024 * 1024);
    // It answers beside them: a funding is accepted, its health is fine.
    const funding = await fetch(`${api.base}/ops/fundings`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${reader}`,
        'content-type': 'application/json',
        'idempotency-key': randomUUID(),
      },
      body: JSON.stringify({
        recipient: { type: 'CODE', code: '2345678' },
        amount: { currency: 'PHP', value: '1.00' },
      }),
    });
    expect(funding.status).toBe(202);
    expect((await fetch(`${api.base}/healthz`)).status).toBe(200);
    // They go away: each stream ends, and the reading stops.
    for (const download of downloads) download.request.destroy();
    await waitFor(
      'the API counts six disconnected reports',
      async () =>
        (await apiMetric('walletflow_report_streams_total', { report: 'batch-report', outcome: 'disconnected' })) >= 6
          ? true
          : undefined,
      30_000,
    );
    expect(await settled(() => apiMetric('walletflow_report_rows_total', { report: 'batch-report' }))).toBe(
      whilePaused,
    );
    expect(api.exited()).toBeNull();
  }, 240_000);
});
