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

/**
 * A form's route (its body read) that waits for `before`, then asks whether its client is gone; the signal it got, once
 * asked, and when the route began.
 */
async function waitingRoute(before: (res: express.Response) => Promise<unknown>) {
  const app = express();
  app.use(express.urlencoded({ extended: false }));
  let asked: (signal: AbortSignal) => void = () => undefined;
  const signal = new Promise<AbortSignal>((resolve) => (asked = resolve));
  let routeBegan: () => void = () => undefined;
  const began = new Promise<void>((resolve) => (routeBegan = resolve));
  app.post('/settle', async (_req, res) => {
    const waited = before(res);
    routeBegan();
    await waited;
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
  return { request, signal, began };
}

describe('clientGone', () => {
  it('is aborted when the client of a form whose body was read goes away while the route waits', async () => {
    // Found by a read: the console's "Settle and download" listened for the request's 'close', which a request emits
    // once its body has been read, before the route began: the person leaving was never heard, and the route polled
    // the run for its full 5 s (then streamed a finished report to no one).
    const { request, signal } = await waitingRoute(() => Promise.resolve());
    const gone = await signal;
    expect(gone.aborted).toBe(false);
    request.destroy();
    await expect.poll(() => gone.aborted, { timeout: 2000 }).toBe(true);
  });

  it('is aborted at once when the client left before the route asked', async () => {
    // The route goes on once the server has seen its client leave (the socket closed).
    const { request, signal, began } = await waitingRoute((res) => once(res.socket!, 'close'));
    await began;
    request.destroy();
    expect((await signal).aborted).toBe(true);
  });

  it('is never aborted for a client that stays and takes its answer', async () => {
    const app = express();
    let gone: AbortSignal | undefined;
    let closed: Promise<unknown> = Promise.resolve();
    app.get('/quick', (_req, res) => {
      gone = clientGone(res);
      closed = once(res, 'close');
      res.status(200).end('done');
    });
    server = app.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const response = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/quick`);
    expect(await response.text()).toBe('done');
    await closed;
    expect(gone?.aborted).toBe(false);
  });
});
