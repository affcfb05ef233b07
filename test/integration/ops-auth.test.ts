// The ops API's authentication over real HTTP: the bearer key, its name and scopes (403
// SCOPE_REQUIRED from the route's own check, registered with it), and the limit on wrong keys per
// client address, counted in PostgreSQL (IPv6 by its /64; a sliding window; a request without a
// key guesses nothing and is not counted; a valid key is never locked out). The clock is the
// test's: it starts at a window's start.
import { randomBytes, randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import express from 'express';
import { z } from 'zod';
import { actorOf } from '../../api/http/actor.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { opsAuth } from '../../api/ops/ops-auth.ts';
import { createOpsKeyGuard } from '../../api/ops/ops-key-guard.ts';
import { routesOn, strictRouter } from '../../api/http/route-registration.ts';
import { defineRoute } from '../../api/http/route-spec.ts';
import { createAttemptLimiter, type AttemptLimiterOptions } from '../../access/attempt-limits.ts';
import { createDatabase, type Database } from '../../lib/database.ts';
import { testDatabaseUrl } from '../support/test-database.ts';

const key = 'k'.repeat(40);
const readerKey = 'r'.repeat(40);
const payerKey = 'p'.repeat(40);
const MINUTE = 60_000;
let clock = 20_000 * MINUTE;
let server: Server;
let base: string;
let database: Database;
/** A count of wrong keys of this file's own (the database is shared with other files). */
const wrongKeys = (options: Partial<AttemptLimiterOptions> = {}) =>
  createAttemptLimiter(database, {
    kind: `ops-auth-${randomUUID()}`,
    limit: 5,
    windowMs: MINUTE,
    now: () => clock,
    sqlClock: () => clock,
    ...options,
  });

beforeAll(async () => {
  database = createDatabase(testDatabaseUrl(), { maxConnections: 2 });
  const app = express();
  app.set('trust proxy', 'loopback');
  app.use(
    '/ops',
    opsAuth({
      keys: [key, 'second-key-'.repeat(4), `reader:read:${readerKey}`, `payer:pay+read:${payerKey}`],
      wrongKeys: wrongKeys(),
      fingerprintKey: randomBytes(32),
      now: () => clock,
    }),
  );
  const router = strictRouter();
  const add = routesOn(router, '/ops');
  const route = (method: 'get' | 'post', path: string, scope: 'read' | 'resolve') =>
    defineRoute({
      method,
      path,
      operationId: `${method}${path}`,
      tag: 'test',
      summary: '',
      access: { opsScope: scope },
      responses: {},
    });
  const answer: express.RequestHandler = (_req, res) => {
    res.json({ actor: actorOf(res.locals)?.name });
  };
  add(route('get', '/ops/ping', 'read'), answer);
  const id = { id: { schema: z.string(), description: 'a payment' } };
  const getPayment = defineRoute({
    method: 'get',
    path: '/ops/payments/{id}',
    operationId: 'getPayment',
    tag: 'test',
    summary: '',
    access: { opsScope: 'read' },
    params: id,
    responses: {},
  });
  const resolvePayment = defineRoute({
    method: 'post',
    path: '/ops/payments/{id}/resolve',
    operationId: 'resolvePayment',
    tag: 'test',
    summary: '',
    access: { opsScope: 'resolve' },
    params: id,
    responses: {},
  });
  add(getPayment, answer);
  add(resolvePayment, answer);
  app.use('/ops', router);
  server = app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
  await database.$disconnect();
});

/** One request from `address` (X-Forwarded-For, trusted from loopback). */
async function ping(address: string, authorization?: string) {
  const response = await fetch(`${base}/ops/ping`, {
    headers: { 'x-forwarded-for': address, ...(authorization === undefined ? {} : { authorization }) },
  });
  return {
    status: response.status,
    headers: response.headers,
    body: (await response.json()) as Record<string, unknown>,
  };
}

describe('ops API authentication', () => {
  it('accepts any configured key, with the scheme in any case; names the caller by the key’s name (a bare key: default)', async () => {
    const first = await ping('198.51.100.1', `Bearer ${key}`);
    expect(first.status).toBe(200);
    expect(first.body.actor).toBe('default');
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

  it('past the limit of wrong keys, that address’s wrong keys get 429 with Retry-After until the last minute holds fewer; a valid key is never locked out', async () => {
    clock = Math.ceil(clock / MINUTE) * MINUTE + MINUTE;
    const guesser = '198.51.100.4';
    for (let i = 0; i < 5; i += 1) expect((await ping(guesser, `Bearer wrong-${i}`)).status).toBe(401);
    const limited = await ping(guesser, 'Bearer wrong-again');
    expect(limited.status).toBe(429);
    expect(limited.body).toMatchObject({ code: 'TOO_MANY_FAILED_ATTEMPTS' });
    expect(limited.headers.get('retry-after')).toBe('60');
    // Ops behind the same proxy or NAT as the guesser keep working.
    expect((await ping(guesser, `Bearer ${key}`)).status).toBe(200);
    expect((await ping('198.51.100.5', `Bearer wrong`)).status).toBe(401);

    clock += 45_000;
    expect((await ping(guesser, 'Bearer wrong-later')).headers.get('retry-after')).toBe('15');
    // A minute after the five: the window slides, and the last minute still holds them all; a fifth of them fades in 12
    // s.
    clock += 15_000;
    const stillLimited = await ping(guesser, 'Bearer wrong-at-the-minute');
    expect(stillLimited.status).toBe(429);
    expect(stillLimited.headers.get('retry-after')).toBe('12');
    clock += 12_000;
    expect((await ping(guesser, 'Bearer wrong-after')).status).toBe(401);
  });

  it('counts one wrong key sent again and again as one guess: a client with a stale key, or one trying every route with it, gets 401 each time; new guesses are still counted', async () => {
    clock = Math.ceil(clock / MINUTE) * MINUTE + MINUTE;
    const stale = '198.51.100.6';
    // Before: the sixth request with the same wrong key answered 429, as a sixth guess would.
    for (let i = 0; i < 30; i += 1) expect((await ping(stale, 'Bearer rotated-out-key')).status, String(i)).toBe(401);
    expect((await ping(stale, `Bearer ${key}`)).status).toBe(200);
    // Four new wrong keys: five guesses in the minute, the limit; the next new one is refused.
    for (let i = 0; i < 4; i += 1) expect((await ping(stale, `Bearer guess-${i}`)).status).toBe(401);
    const limited = await ping(stale, 'Bearer guess-4');
    expect(limited.status).toBe(429);
    // Limited, the address's wrong keys wait, the one it repeated too.
    expect((await ping(stale, 'Bearer rotated-out-key')).status).toBe(429);
    clock += 2 * MINUTE;
    // Thirty requests with one wrong key at the same moment (a check of every route at once): one count between them.
    const guard = createOpsKeyGuard({
      keys: [key],
      wrongKeys: wrongKeys(),
      fingerprintKey: randomBytes(32),
      now: () => clock,
    });
    const atOnce = await Promise.all(
      Array.from({ length: 30 }, () => guard.check('198.51.100.7', 'one-wrong-key-everywhere')),
    );
    expect(atOnce).toEqual(Array.from({ length: 30 }, () => ({ kind: 'wrong' })));
    for (let i = 0; i < 4; i += 1) expect(await guard.check('198.51.100.7', `next-${i}`)).toEqual({ kind: 'wrong' });
    expect(await guard.check('198.51.100.7', 'next-4')).toMatchObject({ kind: 'limited' });
    clock += 2 * MINUTE;
  });

  it('remembers at most maxRememberedWrongKeys wrong keys it counted, forgetting expired ones first', async () => {
    const guard = createOpsKeyGuard({
      keys: [key],
      wrongKeys: wrongKeys({ limit: 1000 }),
      fingerprintKey: randomBytes(32),
      now: () => clock,
      maxRememberedWrongKeys: 100,
    });
    for (let index = 0; index < 300; index += 1)
      expect(await guard.check(`2001:db8:${index.toString(16)}::1`, `wrong-${index}`)).toEqual({ kind: 'wrong' });
    expect(guard.rememberedWrongKeys()).toBe(100);
    // A minute on, the next one counted finds every earlier one expired: they go.
    clock += MINUTE + 1;
    expect(await guard.check('2001:db8:ffff::1', 'wrong-after')).toEqual({ kind: 'wrong' });
    expect(guard.rememberedWrongKeys()).toBe(1);
    clock += 2 * MINUTE;
  });

  it('counts IPv6 guesses by their /64: rotating through one subscriber’s addresses does not reset the limit', async () => {
    for (let i = 0; i < 5; i += 1) expect((await ping(`2001:db8:1:2::${i + 1}`, `Bearer wrong-${i}`)).status).toBe(401);
    expect((await ping('2001:db8:1:2:ffff:ffff:ffff:ffff', 'Bearer wrong')).status).toBe(429);
    expect((await ping('2001:db8:1:3::1', 'Bearer wrong')).status).toBe(401);
    clock += 2 * MINUTE;
  });

  it('remembers at most maxRemembered blocked addresses in memory, however many /64s rotate within one window; the database counts every one', async () => {
    const limiter = wrongKeys({ limit: 1, maxRemembered: 100 });
    const small = express();
    small.set('trust proxy', 'loopback');
    small.use('/ops', opsAuth({ keys: [key], wrongKeys: limiter, fingerprintKey: randomBytes(32) }));
    const smallServer = small.listen(0, '127.0.0.1');
    await new Promise((resolve) => smallServer.once('listening', resolve));
    try {
      const url = `http://127.0.0.1:${(smallServer.address() as AddressInfo).port}/ops/ping`;
      for (let index = 0; index < 300; index += 1) {
        for (const expected of [401, 429]) {
          const response = await fetch(url, {
            // Two guesses: a wrong key sent again is not a new one.
            headers: {
              'x-forwarded-for': `2001:db8:${index.toString(16)}::1`,
              authorization: `Bearer wrong-${expected}`,
            },
          });
          expect(response.status).toBe(expected);
          await response.arrayBuffer();
        }
      }
      expect(limiter.remembered()).toBeLessThanOrEqual(100);
      // Forgotten here, still counted: the first /64's next wrong key is refused by the database.
      const again = await fetch(url, {
        headers: { 'x-forwarded-for': '2001:db8:0::1', authorization: 'Bearer wrong-again' },
      });
      await again.arrayBuffer();
      expect(again.status).toBe(429);
    } finally {
      await new Promise<void>((resolve) => smallServer.close(() => resolve()));
    }
  });

  it('a key without the route’s scope gets 403 SCOPE_REQUIRED; with it, the route runs and knows the key’s name', async () => {
    const call = async (method: string, path: string, secret: string) => {
      const response = await fetch(`${base}${path}`, {
        method,
        headers: { authorization: `Bearer ${secret}`, 'x-forwarded-for': '198.51.100.9' },
      });
      return { status: response.status, body: (await response.json()) as Record<string, unknown> };
    };
    const refused = await call('POST', '/ops/payments/p1/resolve', readerKey);
    expect(refused.status).toBe(403);
    expect(refused.body).toMatchObject({ code: 'SCOPE_REQUIRED', status: 403 });
    expect(refused.body.detail).toContain('resolve');
    expect(JSON.stringify(refused.body)).not.toContain(readerKey);
    expect(await call('GET', '/ops/payments/p1', readerKey)).toEqual({ status: 200, body: { actor: 'reader' } });
    expect((await call('POST', '/ops/payments/p1/resolve', payerKey)).status).toBe(403);
    expect(await call('POST', '/ops/payments/p1/resolve', key)).toEqual({ status: 200, body: { actor: 'default' } });
    // opsAuth only says who asks: a key of any scope passes it, and the route's own check decides.
    expect((await call('GET', '/ops/ping', payerKey)).status).toBe(200);
  });
});
