// The API's hardening on the real stack: security headers on every route family without weakening
// the pages' own nonce CSP, HSTS only over TLS, per-address rate limits on the public routes (429
// with Retry-After in each family's style, nothing stored), body size limits (413, or the session
// URL's contract 400), a graceful shutdown that finishes an in-flight request and exits 0, and
// hostile X-Forwarded-For values from the trusted proxy.
import { spawn } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { createApp } from '../../api/app.ts';
import { HSTS_HEADER, securityHeaderValues } from '../../api/http/security-headers.ts';
import { createLogger } from '../../lib/logger.ts';
import { holdFreePort } from '../../stack/ports.ts';
import { handOverSocket } from '../../stack/child-process.ts';
import { hashBearer } from '../../links/embedded-sessions.ts';
import { startPartnerStack, type PartnerStack } from '../support/partner-stack.ts';
import { parseRawResponse, rawHttp, type RawResponse } from '../support/raw-http.ts';
import { nodeArgsFor } from '../support/node-entry.ts';

const LIMIT = 5;
/** The landing page's own status polls, per web session (WEB_SESSION_POLL_LIMIT_PER_MINUTE). */
const POLL_LIMIT = 4 * LIMIT;
let stack: PartnerStack;

beforeAll(async () => {
  // Behind a "proxy" on loopback: each test speaks for its own client address (X-Forwarded-For).
  stack = await startPartnerStack({
    trustedProxies: ['127.0.0.1'],
    sessionAllowedIps: ['127.0.0.1', '198.51.100.77'],
    hardening: {
      publicRateLimitPerMinute: LIMIT,
      sessionRateLimitPerMinute: LIMIT,
      webSessionPollLimitPerMinute: POLL_LIMIT,
    },
  });
});
afterAll(async () => {
  await stack?.close();
});

const from = (address: string, headers: Array<[string, string]> = []): Array<[string, string]> => [
  ['X-Forwarded-For', address],
  ...headers,
];
const get = (target: string, headers: Array<[string, string]> = []) =>
  rawHttp(stack.apiBase, { method: 'GET', target, headers });

function expectBaseHeaders(response: RawResponse): void {
  expect(response.headers['x-content-type-options']).toBe('nosniff');
  expect(response.headers['x-frame-options']).toBe('DENY');
  expect(response.headers['referrer-policy']).toBe('no-referrer');
  expect(response.headers['cross-origin-opener-policy']).toBe('same-origin');
  expect(response.headers['x-powered-by']).toBeUndefined();
  expect(response.headers['content-security-policy']).toMatch(/default-src 'none'/);
  expect(response.headers['content-security-policy']).toMatch(/frame-ancestors 'none'/);
}

describe('security headers', () => {
  it('are on every route family; JSON answers get the deny-all policy; no HSTS over plain HTTP', async () => {
    const answers = await Promise.all([
      get('/healthz'),
      get('/ops/fundings'),
      rawHttp(stack.apiBase, {
        method: 'GET',
        target: '/ops/fundings',
        headers: [['Authorization', `Bearer ${stack.opsKey}`]],
      }),
      rawHttp(stack.apiBase, {
        method: 'POST',
        target: '/embedded/session',
        headers: from('203.0.113.200'),
        body: '{}',
      }),
      get('/nothing-here'),
    ]);
    expect(answers.map((answer) => answer.status)).toEqual([200, 401, 200, 403, 404]);
    for (const answer of answers) {
      expectBaseHeaders(answer);
      expect(answer.headers['content-security-policy']).toBe(
        "default-src 'none';base-uri 'none';form-action 'none';frame-ancestors 'none'",
      );
      expect(answer.headers['strict-transport-security']).toBeUndefined();
    }
  });

  it("leave the landing and connect pages' own nonce policies in place (helmet neither clobbers nor weakens them)", async () => {
    const landing = await get('/app', from('203.0.113.201'));
    const connect = await get('/connect/start?partnerUserId=p1', from('203.0.113.201'));
    expect([landing.status, connect.status]).toEqual([401, 400]);
    for (const page of [landing, connect]) {
      expectBaseHeaders(page);
      const policy = page.headers['content-security-policy'] ?? '';
      // One policy, not two merged: a second one would only make it stricter, but a merge could drop the nonce.
      expect(policy).not.toContain(',');
      const nonce = /style-src 'nonce-([^']+)'/.exec(policy)?.[1];
      expect(nonce, policy).toBeTruthy();
      expect(page.body).toContain(`<style nonce="${nonce}">`);
      expect(policy).not.toMatch(/unsafe-inline|unsafe-eval|\*/);
    }
    expect(landing.headers['content-security-policy']).toMatch(/script-src 'nonce-/);
  });

  it('send HSTS when the request came over TLS through a trusted proxy', async () => {
    const answer = await get('/healthz', [['X-Forwarded-Proto', 'https']]);
    expect(answer.headers['strict-transport-security']).toBe(HSTS_HEADER);
    // A peer that is not the trusted proxy cannot claim TLS.
    const spoofed = await rawHttp(stack.apiBase, {
      method: 'GET',
      target: '/healthz',
      headers: [['X-Forwarded-Proto', 'https']],
      localAddress: '127.0.0.2',
    });
    expect(spoofed.status).toBe(200);
    expect(spoofed.headers['strict-transport-security']).toBeUndefined();
  });

  it('send HSTS on every answer when PUBLIC_URL is https', async () => {
    const app = createApp({
      logger: createLogger({ level: 'silent' }),
      readiness: { postgres: async () => {}, temporal: async () => {}, walletService: async () => {} },
      hardening: { publicUrl: 'https://partner.example.com' },
    });
    const server: Server = createServer(app);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      for (const target of ['/healthz', '/nothing-here']) {
        const answer = await rawHttp(base, { method: 'GET', target });
        expect(answer.headers['strict-transport-security'], target).toBe(HSTS_HEADER);
        expectBaseHeaders(answer);
      }
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});

describe('requests the HTTP server refuses before any route reads them', () => {
  const expectRefusal = (response: RawResponse, status: number, code: string) => {
    expect(response.status).toBe(status);
    expect(response.headers['content-type']).toMatch(/^application\/problem\+json/);
    const detail = expect.any(String);
    // `message` too: the session URL's callers read a refusal's `{ code, message }` (contract section 6).
    expect(JSON.parse(response.body)).toEqual({
      type: 'about:blank',
      status,
      code,
      title: detail,
      detail,
      message: detail,
    });
    expectBaseHeaders(response);
    // Every security header a route's answer carries, as it carries it.
    for (const [name, value] of Object.entries(securityHeaderValues()))
      expect(response.headers[name.toLowerCase()], name).toBe(value);
    expect(response.headers.connection).toBe('close');
  };

  it('answer with a problem document and its code, as every route refuses: headers too large, a request the parser cannot read, a CONNECT', async () => {
    // Before: Node's own answers, a bare 431 or 400 with no body, and no answer at all to a CONNECT.
    expectRefusal(await get('/ops/fundings', [['Cookie', `a=${'x'.repeat(20_000)}`]]), 431, 'HEADERS_TOO_LARGE');
    expectRefusal(
      await rawHttp(stack.apiBase, {
        method: 'POST',
        target: '/embedded/session',
        headers: [['Transfer-Encoding', 'chunked']],
        body: '0\r\n\r\n',
      }),
      400,
      'MALFORMED_REQUEST',
    );
    expectRefusal(await get('/app', [['X-Note', 'a\u0001b']]), 400, 'MALFORMED_REQUEST');
    expectRefusal(
      await rawHttp(stack.apiBase, { method: 'CONNECT', target: 'example.com:443' }),
      501,
      'METHOD_NOT_SUPPORTED',
    );
    // The server still answers the next request.
    expect((await get('/healthz')).status).toBe(200);
  });

  it('a CONNECT whose client resets the connection before the answer is read leaves the process running', async () => {
    // Node hands a CONNECT's socket over without its own error listener: a reset there was an uncaught error.
    const { port } = new URL(stack.apiBase);
    for (let i = 0; i < 20; i += 1) {
      const socket = connect({ host: '127.0.0.1', port: Number(port) });
      await once(socket, 'connect');
      socket.write('CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n');
      socket.resetAndDestroy();
    }
    expect((await get('/healthz')).status).toBe(200);
  });
});

describe('rate limits on the public routes', () => {
  function expectRetryAfter(answer: RawResponse): void {
    expect(answer.status, answer.body).toBe(429);
    const seconds = Number(answer.headers['retry-after']);
    expect(seconds).toBeGreaterThanOrEqual(1);
    expect(seconds).toBeLessThanOrEqual(60);
  }

  it('landing page: a page (or the status poll JSON) with 429 and Retry-After, per client address', async () => {
    const client = from('198.51.100.10');
    for (let i = 0; i < LIMIT; i += 1) expect((await get('/app', client)).status).toBe(401);
    const limited = await get('/app', client);
    expectRetryAfter(limited);
    expect(limited.headers['content-type']).toMatch(/^text\/html/);
    expect(limited.body).toContain('Too many requests');
    const poll = await get('/app/status', client);
    expectRetryAfter(poll);
    expect(poll.headers['content-type']).toMatch(/^application\/json/);
    expect(JSON.parse(poll.body)).toEqual({ code: 'RATE_LIMITED', message: expect.any(String) });
    // Another address has its own count.
    expect((await get('/app', from('198.51.100.11'))).status).toBe(401);
  });

  /** A live web session (as a consumed session id leaves one): its cookie header. */
  async function webSessionCookie(): Promise<[string, string]> {
    const embeddedSessionId = randomUUID();
    const cookieValue = randomBytes(32).toString('base64url');
    const soon = new Date(Date.now() + 600_000);
    await stack.database.embeddedSession.create({
      data: {
        id: embeddedSessionId,
        sessionIdHash: hashBearer(randomUUID()),
        requestReferenceNo: 'poll-budget',
        accessTokenExpiresAt: soon,
        expiresAt: soon,
        consumedAt: new Date(),
      },
    });
    await stack.database.appSession.create({
      data: {
        id: randomUUID(),
        cookieHash: hashBearer(cookieValue),
        embeddedSessionId,
        csrfToken: randomBytes(32).toString('base64url'),
        expiresAt: soon,
      },
    });
    return ['Cookie', `walletflow_app=${cookieValue}`];
  }

  it('landing page: its own status polls of a live web session count per web session, not against the address (carrier NAT)', async () => {
    const nat = '198.51.100.130';
    const alice = await webSessionCookie();
    const bob = await webSessionCookie();
    // Alice's page polls far beyond the address's page budget; every poll is answered.
    for (let i = 0; i < POLL_LIMIT; i += 1) {
      const target = [
        '/app/status',
        '/app/activity',
        `/app/withdrawals/${randomUUID()}/status`,
        `/app/deposits/${randomUUID()}/status`,
      ][i % 4]!;
      expect((await get(target, from(nat, [alice]))).status, target).not.toBe(429);
    }
    // Past her session's own budget: JSON 429 with Retry-After, for her session only.
    const limited = await get('/app/status', from(nat, [alice]));
    expectRetryAfter(limited);
    expect(JSON.parse(limited.body)).toEqual({ code: 'RATE_LIMITED', message: expect.any(String) });
    expect((await get('/app/activity', from(nat, [bob]))).status).toBe(200);
    // The address's page budget is untouched by the polls: pages still load for everyone behind it.
    const page = () => get(`/app/withdrawals/${randomUUID()}`, from(nat, [bob]));
    for (let i = 0; i < LIMIT; i += 1) expect((await page()).status).toBe(404);
    expectRetryAfter(await page());
    // A page is still counted per address, even with a live cookie; Bob's polls are not.
    expect((await get('/app/status', from(nat, [bob]))).status).toBe(200);
  });

  it('landing page: a poll without a live web session (no cookie, a forged one) counts against the address', async () => {
    const client = from('198.51.100.131');
    const forged: [string, string] = ['Cookie', `walletflow_app=${randomBytes(32).toString('base64url')}`];
    for (let i = 0; i < LIMIT; i += 1)
      expect((await get(i % 2 ? '/app/status' : '/app/activity', [...client, forged])).status).toBe(401);
    expectRetryAfter(await get('/app/status', [...client, forged]));
    expectRetryAfter(await get('/app/activity', client));
    expectRetryAfter(await get('/app', client));
  });

  it('connect: a page with 429 and Retry-After, and the refused start stores no login state', async () => {
    const client = from('198.51.100.20');
    const start = async (partnerUserId: string) =>
      get(
        `/connect/start?login=${new URL(await stack.mintLoginUrl(partnerUserId)).searchParams.get('login')!}`,
        client,
      );
    for (let i = 0; i < LIMIT - 1; i += 1) expect((await start(`limit-${randomUUID()}`)).status).toBe(302);
    expect((await get('/connect/callback?state=nope', client)).status).toBe(400);
    const partnerUserId = `limit-${randomUUID()}`;
    const limited = await start(partnerUserId);
    expectRetryAfter(limited);
    expect(limited.headers['content-type']).toMatch(/^text\/html/);
    expect(limited.body).toContain('Too many attempts');
    expect(await stack.database.loginState.count({ where: { partnerUserId } })).toBe(0);
    expectRetryAfter(await get('/connect/callback?state=nope', client));
  });

  it('session URL: a sender outside the allowlist gets 403 however often it calls; a listed one 429 { code, message } with Retry-After past its limit, nothing stored', async () => {
    // Contract section 6: a sender outside the allowlist gets 403, past the rate limit too.
    const outsider = from('203.0.113.50');
    for (let i = 0; i < LIMIT + 3; i += 1) {
      const answer = await rawHttp(stack.apiBase, {
        method: 'POST',
        target: '/embedded/session',
        headers: outsider,
        body: '{}',
      });
      expect(answer.status).toBe(403);
      expect(JSON.parse(answer.body)).toEqual({ code: 'FORBIDDEN', message: expect.any(String) });
    }

    const sender = from('198.51.100.77', [['Content-Type', 'application/json']]);
    for (let i = 0; i < LIMIT; i += 1) {
      expect(
        (await rawHttp(stack.apiBase, { method: 'POST', target: '/embedded/session', headers: sender, body: '{}' }))
          .status,
      ).toBe(400);
    }
    const user = await stack.admin.createUser({ kycLevel: 'KYC1' });
    const tokens = await stack.admin.embeddedTokens(user.userId);
    const reference = randomUUID();
    const limited = await rawHttp(stack.apiBase, {
      method: 'POST',
      target: '/embedded/session',
      headers: [...sender, ['Request-Reference-No', reference]],
      body: JSON.stringify(tokens),
    });
    expectRetryAfter(limited);
    expect(limited.headers['content-type']).toMatch(/^application\/json/);
    expect(await stack.database.embeddedSession.count({ where: { requestReferenceNo: reference } })).toBe(0);
  });

  it('an IPv6 client counts by its /64; the ops API is not limited by these counts', async () => {
    for (let i = 0; i < LIMIT; i += 1) expect((await get('/app', from(`2001:db8:1:2::${i + 1}`))).status).toBe(401);
    expectRetryAfter(await get('/app', from('2001:db8:1:2:ffff:ffff:ffff:ffff')));
    expect((await get('/app', from('2001:db8:1:3::1'))).status).toBe(401);
    for (let i = 0; i < LIMIT + 2; i += 1) {
      const answer = await rawHttp(stack.apiBase, {
        method: 'GET',
        target: '/ops/fundings?limit=1',
        headers: from('2001:db8:1:2::1', [['Authorization', `Bearer ${stack.opsKey}`]]),
      });
      expect(answer.status).toBe(200);
    }
  });
});

describe('body size limits and unreadable bodies', () => {
  const ops = (body: string | Buffer, headers: Array<[string, string]> = [['Content-Type', 'application/json']]) =>
    rawHttp(stack.apiBase, {
      method: 'POST',
      target: '/ops/fundings',
      headers: [['Authorization', `Bearer ${stack.opsKey}`], ['Idempotency-Key', `limit-${randomUUID()}`], ...headers],
      body,
    });

  it('ops API: 16 KiB of JSON is read, one byte more is 413 problem; malformed JSON is 400 problem', async () => {
    const padded = (size: number) => {
      const head = '{"padding":"';
      return `${head}${'x'.repeat(size - head.length - 2)}"}`;
    };
    const atLimit = await ops(padded(16 * 1024));
    expect(atLimit.status).toBe(400);
    expect(JSON.parse(atLimit.body)).toMatchObject({ code: 'VALIDATION_ERROR' });
    const over = await ops(padded(16 * 1024 + 1));
    expect(over.status).toBe(413);
    expect(over.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(JSON.parse(over.body)).toMatchObject({ status: 413, code: 'BODY_TOO_LARGE' });
    const malformed = await ops('{"recipient":');
    expect(malformed.status).toBe(400);
    expect(JSON.parse(malformed.body)).toMatchObject({ code: 'MALFORMED_JSON' });
    const charset = await ops('{}', [['Content-Type', 'application/json; charset=latin1']]);
    expect(charset.status).toBe(415);
    expect(JSON.parse(charset.body)).toMatchObject({ code: 'UNSUPPORTED_CHARSET' });
  });

  it('session URL: over 16 KiB or unreadable is the contract 400 { code, message }', async () => {
    // From the allowed peer itself (no X-Forwarded-For): its count is still fresh.
    const call = (body: string, headers: Array<[string, string]> = []) =>
      rawHttp(stack.apiBase, {
        method: 'POST',
        target: '/embedded/session',
        headers: [['Content-Type', 'application/json'], ['Request-Reference-No', randomUUID()], ...headers],
        body,
      });
    const answers = [
      await call(`{"accessToken":"${'A'.repeat(16 * 1024)}"}`),
      await call('{"accessToken":'),
      await call('{}', [['Content-Encoding', 'x-unknown']]),
      await call('{}', [['Content-Encoding', 'gzip']]),
    ];
    expect(answers.map((answer) => answer.status)).toEqual([400, 400, 400, 400]);
    expect(answers.map((answer) => (JSON.parse(answer.body) as { code: string }).code)).toEqual([
      'BODY_TOO_LARGE',
      'MALFORMED_JSON',
      'UNSUPPORTED_CONTENT_ENCODING',
      'MALFORMED_BODY',
    ]);
    for (const answer of answers)
      expect(Object.keys(JSON.parse(answer.body) as object).sort()).toEqual(['code', 'message']);
  });

  it('landing forms: over 4 KiB or more than 10 fields is 413 with a page', async () => {
    const post = (body: string, address: string) =>
      rawHttp(stack.apiBase, {
        method: 'POST',
        target: '/app/withdraw',
        headers: from(address, [['Content-Type', 'application/x-www-form-urlencoded']]),
        body,
      });
    const large = await post(`amount=${'9'.repeat(5000)}`, '198.51.100.30');
    expect(large.status).toBe(413);
    expect(large.headers['content-type']).toMatch(/^text\/html/);
    expect(large.body).toContain('This form is too large');
    const many = await post(Array.from({ length: 11 }, (_, i) => `f${i}=1`).join('&'), '198.51.100.31');
    expect(many.status).toBe(413);
    expect(many.headers['content-type']).toMatch(/^text\/html/);
  });
});

describe('graceful shutdown', () => {
  it('an API handed its listening socket (LISTEN_FD) starts on it whoever holds PORT; on SIGTERM it finishes an in-flight request, refuses new connections, closes idle ones and exits 0', async () => {
    // What the test stacks do: the port is held from its choice to the API's start, so no other process takes it
    // between (under load one did, and the API exited on EADDRINUSE). PORT is taken here by another listener: the
    // API binds no port of its own.
    const socket = await holdFreePort();
    const squatter = await holdFreePort();
    const port = socket.port;
    const handedOver = handOverSocket(socket);
    const root = path.resolve(import.meta.dirname, '../..');
    const child = spawn(process.execPath, nodeArgsFor('api/main.ts'), {
      cwd: root,
      env: {
        ...stack.workerEnv(),
        OPS_API_KEYS: stack.opsKey,
        PORT: String(squatter.port),
        ...handedOver.env,
        HOST: '127.0.0.1',
        SESSION_ALLOWED_IPS: '127.0.0.1',
        LOG_LEVEL: 'warn',
      },
      stdio: handedOver.stdio,
    });
    // The API holds its own copy of the socket: once it closes it, the port refuses.
    await socket.close();
    onTestFinished(() => squatter.close());
    let output = '';
    child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const exited = once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
    const base = `http://127.0.0.1:${port}`;
    try {
      const deadline = Date.now() + 60_000;
      for (;;) {
        const ready = await rawHttp(base, { method: 'GET', target: '/healthz' }).catch(() => null);
        if (ready?.status === 200) break;
        if (child.exitCode !== null || Date.now() > deadline) throw new Error(`the API did not start:\n${output}`);
        await new Promise((resolve) => setTimeout(resolve, 200));
      }

      // An idle keep-alive connection must not hold the shutdown up.
      const idle = connect({ host: '127.0.0.1', port });
      await once(idle, 'connect');
      idle.write(`GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`);
      await once(idle, 'data');
      const idleClosed = once(idle, 'close');

      // An ops POST whose body is only half sent when SIGTERM arrives: the request is in flight.
      const key = `shutdown-${randomUUID()}`;
      const body = JSON.stringify({
        recipient: { type: 'CODE', code: '0000000' },
        amount: { currency: 'PHP', value: '1.00' },
      });
      const slow = connect({ host: '127.0.0.1', port });
      await once(slow, 'connect');
      const received: Buffer[] = [];
      slow.on('data', (chunk: Buffer) => received.push(chunk));
      const slowClosed = once(slow, 'close');
      slow.write(
        `POST /ops/fundings HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAuthorization: Bearer ${stack.opsKey}\r\nIdempotency-Key: ${key}\r\n` +
          `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body.slice(0, 20)}`,
      );
      await new Promise((resolve) => setTimeout(resolve, 300));
      child.kill('SIGTERM');
      await idleClosed;

      // While it drains, no new connection is accepted.
      await new Promise((resolve) => setTimeout(resolve, 300));
      const refused = await rawHttp(base, { method: 'GET', target: '/healthz' }, 3000).then(
        (answer) => `answered ${answer.status}`,
        (error: NodeJS.ErrnoException) => error.code ?? error.message,
      );
      expect(refused).toBe('ECONNREFUSED');

      slow.write(body.slice(20));
      await once(slow, 'data');
      const answeredAt = Date.now();
      // The connection was kept alive (HTTP/1.1): the server closes it as soon as it is idle.
      await slowClosed;
      const answer = parseRawResponse(Buffer.concat(received));
      expect(answer.status, answer.body).toBe(202);
      expect(JSON.parse(answer.body)).toMatchObject({ status: 'PENDING' });

      // Promptly: well before the keep-alive timeout (5 s) or the forced close (10 s).
      const [code, signal] = await Promise.race([
        exited,
        new Promise<never>((_, reject) =>
          setTimeout(() => reject(new Error(`the API did not exit:\n${output}`)), 8000),
        ),
      ]);
      expect(Date.now() - answeredAt).toBeLessThan(3000);
      expect({ code, signal }, output).toEqual({ code: 0, signal: null });
      expect(await stack.database.funding.count({ where: { idempotencyKey: key } })).toBe(1);
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
    }
  });
});

// Last: its generated addresses may include the loopback peer the tests above count on.
describe('hostile X-Forwarded-For from the trusted proxy', () => {
  it('is only ever a client address that is refused or counted, never a 5xx', async () => {
    const forwarded = fc.oneof(
      fc.constantFrom(
        'garbage',
        '',
        ' , ,',
        '999.1.1.1',
        '::ffff:999.1.1.1',
        '2001:db8::1%eth0',
        'unknown',
        '127.0.0.1, 127.0.0.1',
        '[::1]:80',
        'a'.repeat(4000),
      ),
      fc
        .array(fc.oneof(fc.ipV4(), fc.ipV6(), fc.string({ unit: 'binary-ascii', maxLength: 20 })), {
          minLength: 1,
          maxLength: 4,
        })
        .map((list) => list.join(', ')),
    );
    await fc.assert(
      fc.asyncProperty(
        forwarded,
        fc.constantFrom('/app', '/embedded/session', '/connect/start'),
        async (value, target) => {
          const post = target === '/embedded/session';
          const answer = await rawHttp(stack.apiBase, {
            method: post ? 'POST' : 'GET',
            target,
            headers: [
              ['X-Forwarded-For', Buffer.from(value, 'latin1')],
              ...(post ? [['Content-Type', 'application/json'] as [string, string]] : []),
            ],
            ...(post ? { body: '{}' } : {}),
          });
          // A header value Node's parser refuses (a NUL, a control byte): api/http/parser-refusals.ts answers it.
          if (/^application\/problem\+json/.test(answer.headers['content-type'] ?? '')) {
            expect(answer.status).toBe(400);
            expect(JSON.parse(answer.body)).toMatchObject({ code: 'MALFORMED_REQUEST' });
            return;
          }
          expect(answer.status, answer.body).toBeGreaterThanOrEqual(400);
          expect(answer.status, answer.body).toBeLessThan(500);
          expect(answer.headers['content-type']).toMatch(post ? /^application\/json/ : /^text\/html/);
        },
      ),
      { seed: process.env.FC_SEED ? Number(process.env.FC_SEED) : Date.now() % 2 ** 31, numRuns: 60 },
    );
  });
});
