// Whether a request's client is still there (api/http/client-gone.ts), over real HTTP, for a route that waits before
// it answers: a form's, whose body was read first, and one whose client left before the route asked.
import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { afterEach, describe, expect, it } from 'vitest';
import { clientGone } from '../../api/http/client-gone.ts';

let server: http.Server | undefined;
afterEach(async () => {
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve) ?? resolve(undefined));
  server = undefined;
});

/** A route that waits `before` ms, then asks whether its client is gone; the signal it got, once asked. */
async function waitingRoute(before: number) {
  const app = express();
  app.use(express.urlencoded({ extended: false }));
  let asked: (signal: AbortSignal) => void = () => undefined;
  const signal = new Promise<AbortSignal>((resolve) => (asked = resolve));
  app.post('/settle', async (_req, res) => {
    await new Promise((resolve) => setTimeout(resolve, before));
    const gone = clientGone(res);
    asked(gone);
    // The route's wait: until its client goes, or 5 s.
    await Promise.race([once(gone, 'abort'), new Promise((resolve) => setTimeout(resolve, 5000))]);
    if (!res.destroyed) res.status(200).end('settled');
  });
  server = app.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const request = http.request(`http://127.0.0.1:${(server.address() as AddressInfo).port}/settle`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
  });
  request.on('error', () => undefined);
  request.end('date=2026-12-01');
  return { request, signal };
}

describe('clientGone', () => {
  it('is aborted when the client of a form whose body was read goes away while the route waits', async () => {
    // Found by a read: the console's "Settle and download" listened for the request's 'close', which a request emits
    // once its body has been read, before the route began: the person leaving was never heard, and the route polled
    // the run for its full 5 s (then streamed a finished report to no one).
    const { request, signal } = await waitingRoute(0);
    const gone = await signal;
    expect(gone.aborted).toBe(false);
    request.destroy();
    await expect.poll(() => gone.aborted, { timeout: 2000 }).toBe(true);
  });

  it('is aborted at once when the client left before the route asked', async () => {
    const { request, signal } = await waitingRoute(300);
    await new Promise((resolve) => setTimeout(resolve, 50));
    request.destroy();
    expect((await signal).aborted).toBe(true);
  });

  it('is never aborted for a client that stays and takes its answer', async () => {
    const app = express();
    let gone: AbortSignal | undefined;
    app.get('/quick', (_req, res) => {
      gone = clientGone(res);
      res.status(200).end('done');
    });
    server = app.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const response = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/quick`);
    expect(await response.text()).toBe('done');
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(gone?.aborted).toBe(false);
  });
});
