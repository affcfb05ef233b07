// The ops API's authentication over real HTTP: the bearer key, and the limit on wrong keys per
// client address (a request without a key guesses nothing and is not counted).
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import express from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { opsAuth } from '../../api/ops/ops-auth.ts';

const key = 'k'.repeat(40);
let clock = 1_000_000;
let server: Server;
let base: string;

beforeAll(async () => {
  const app = express();
  app.set('trust proxy', 'loopback');
  app.use('/ops', opsAuth({ keys: [key, 'second-key-'.repeat(4)], maxFailures: 5, windowMs: 60_000, now: () => clock }));
  app.get('/ops/ping', (_req, res) => {
    res.json({ actor: res.locals.opsActor });
  });
  server = app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

/** One request from `address` (X-Forwarded-For, trusted from loopback). */
async function ping(address: string, authorization?: string) {
  const response = await fetch(`${base}/ops/ping`, {
    headers: { 'x-forwarded-for': address, ...(authorization === undefined ? {} : { authorization }) },
  });
  return { status: response.status, headers: response.headers, body: (await response.json()) as Record<string, unknown> };
}

describe('ops API authentication', () => {
  it('accepts any configured key, with the scheme in any case; names the caller by a key fingerprint', async () => {
    const first = await ping('198.51.100.1', `Bearer ${key}`);
    expect(first.status).toBe(200);
    expect(first.body.actor).toMatch(/^ops-key:[0-9a-f]{12}$/);
    expect(JSON.stringify(first.body)).not.toContain(key);
    expect((await ping('198.51.100.1', `bearer ${'second-key-'.repeat(4)}`)).status).toBe(200);
    expect((await ping('198.51.100.1', `BEARER ${key}`)).status).toBe(200);
  });

  it('answers 401 problem details with WWW-Authenticate for a missing, malformed or wrong key', async () => {
    for (const authorization of [undefined, '', key, `Basic ${key}`, `Bearer`, `Bearer ${key}x`]) {
      const answer = await ping('198.51.100.2', authorization);
      expect(answer.status, String(authorization)).toBe(401);
      expect(answer.headers.get('content-type')).toContain('application/problem+json');
      expect(answer.headers.get('www-authenticate')).toBe('Bearer realm="walletflow-ops"');
      expect(answer.body).toMatchObject({ status: 401, code: 'UNAUTHORIZED' });
    }
  });

  it('requests without a key are not counted: probing every route unauthenticated never locks a client out', async () => {
    for (let i = 0; i < 30; i += 1) expect((await ping('198.51.100.3')).status).toBe(401);
    expect((await ping('198.51.100.3', `Bearer ${key}`)).status).toBe(200);
  });

  it('past the limit of wrong keys, every request from that address gets 429 with Retry-After until the window ends; others are unaffected', async () => {
    const guesser = '198.51.100.4';
    for (let i = 0; i < 5; i += 1) expect((await ping(guesser, `Bearer wrong-${i}`)).status).toBe(401);
    const limited = await ping(guesser, 'Bearer wrong-again');
    expect(limited.status).toBe(429);
    expect(limited.body).toMatchObject({ code: 'TOO_MANY_FAILED_ATTEMPTS' });
    expect(limited.headers.get('retry-after')).toBe('60');
    // A right key from that address waits too: otherwise the limit would still answer guesses.
    expect((await ping(guesser, `Bearer ${key}`)).status).toBe(429);
    expect((await ping('198.51.100.5', `Bearer ${key}`)).status).toBe(200);

    clock += 45_000;
    expect((await ping(guesser, `Bearer ${key}`)).headers.get('retry-after')).toBe('15');
    clock += 15_000;
    expect((await ping(guesser, `Bearer ${key}`)).status).toBe(200);
  });
});
