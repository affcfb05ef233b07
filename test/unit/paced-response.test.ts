// An answer written at its client's pace (api/http/paced-response.ts) over loopback HTTP: no room
// once the socket's buffer is full; 'drained' when the client reads again, which stops the stall
// clock; a client that takes nothing for the stall bound is cut off, the end of the answer
// included; a client that goes away stops it at once.
import http, { type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import express, { type Response } from 'express';
import { afterEach, describe, expect, it } from 'vitest';
import { paceResponse, type PacedResponse } from '../../api/http/paced-response.ts';

const STALL_MS = 1000;
const chunk = 'x'.repeat(64 * 1024);
const servers: http.Server[] = [];

afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

/**
 * A server whose one answer is paced (the test drives it through `paced`), and a client that asks
 * for it and reads nothing until told to.
 */
async function pacedAnswer(): Promise<{
  paced: PacedResponse;
  res: Response;
  response: IncomingMessage;
  destroyClient(): void;
}> {
  let answer: ((value: { paced: PacedResponse; res: Response }) => void) | undefined;
  const served = new Promise<{ paced: PacedResponse; res: Response }>((resolve) => (answer = resolve));
  const app = express();
  app.get('/', (_req, res) => {
    res.status(200).type('text/plain');
    res.flushHeaders();
    answer!({ paced: paceResponse(res, { stallMs: STALL_MS }), res });
  });
  const server = http.createServer(app);
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const request = http.get(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`);
  request.on('error', () => undefined);
  const response = await new Promise<IncomingMessage>((resolve) => request.on('response', resolve));
  response.on('error', () => undefined);
  response.pause();
  return { ...(await served), response, destroyClient: () => request.destroy() };
}

/**
 * Writes until the sockets take no more (the client reads nothing): the kernel's buffers take more
 * as they grow, so it writes again after each drain until none comes for a while. Answers the bytes written.
 */
async function fill(paced: PacedResponse): Promise<number> {
  let written = 0;
  for (;;) {
    do written += chunk.length;
    while (paced.write(chunk));
    const drained = await Promise.race([
      paced.room(),
      new Promise((resolve) => setTimeout(() => resolve('full'), 250)),
    ]);
    if (drained !== 'drained') return written;
  }
}

/** Reads the rest of the answer: resolves with the bytes read once it ended, or when the connection broke. */
const readRest = (response: IncomingMessage) =>
  new Promise<{ bytes: number; whole: boolean }>((resolve) => {
    let bytes = 0;
    response.on('data', (data: Buffer) => (bytes += data.length));
    response.on('end', () => resolve({ bytes, whole: true }));
    response.on('close', () => resolve({ bytes, whole: response.complete }));
    response.resume();
  });

describe('an answer written at its client’s pace', () => {
  it('has no room once the socket’s buffer is full, and cuts off a client that takes nothing for the stall bound', async () => {
    const { paced, res } = await pacedAnswer();
    await fill(paced);
    expect(paced.hasRoom()).toBe(false);
    expect(paced.buffered()).toBeGreaterThan(0);
    expect(await paced.room()).toBe('stalled');
    expect(paced.stoppedBy()).toBe('stalled');
    expect(paced.stopped.aborted).toBe(true);
    expect(res.destroyed).toBe(true);
    expect(paced.write(chunk)).toBe(false);
  });

  it('has room again once the client reads, and the stall clock stops there', async () => {
    const { paced, response } = await pacedAnswer();
    const written = await fill(paced);
    const read = readRest(response);
    expect(await paced.room()).toBe('drained');
    expect(paced.hasRoom()).toBe(true);
    // Longer than the stall bound with room: nothing is cut.
    await new Promise((resolve) => setTimeout(resolve, STALL_MS * 2));
    expect(paced.stoppedBy()).toBeNull();
    expect(await paced.end('last')).toBe('completed');
    expect(await read).toEqual({ bytes: written + 'last'.length, whole: true });
  });

  it('holds the end of the answer to the stall bound: a client that does not take it is cut off', async () => {
    const { paced, response } = await pacedAnswer();
    await fill(paced);
    expect(await paced.end('last')).toBe('stalled');
    const read = await readRest(response);
    expect(read.whole).toBe(false);
  });

  it('stops at once when the client goes away', async () => {
    const { paced, destroyClient } = await pacedAnswer();
    await fill(paced);
    const waiting = paced.room();
    destroyClient();
    expect(await waiting).toBe('disconnected');
    expect(paced.stoppedBy()).toBe('disconnected');
  });
});
