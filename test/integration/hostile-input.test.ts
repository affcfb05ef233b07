// Hostile input at every endpoint, property-based (fast-check) on the real stack: the ops API, the
// session URL, the landing page and its forms, and the connect routes get random and oversized
// bodies, wrong types, deep nesting, unicode (RTL, NUL, surrogate halves), raw CR/LF/NUL bytes in
// headers (sent over a raw socket), huge, negative and too-precise amounts, __proto__ keys. For
// every request: no 5xx, no stack trace or internal path, the route family's content type, and
// nothing stored when the request is refused. FC_SEED=<n> replays a run; FC_RUNS=<n> scales it.
import { randomUUID } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashBearer } from '../../links/embedded-sessions.ts';
import { createEmbeddedLink } from '../support/embedded-link.ts';
import { startPartnerStack, type PartnerStack } from '../support/partner-stack.ts';
import { rawHttp, type RawRequest, type RawResponse } from '../support/raw-http.ts';
import { loginThroughPages } from '../support/wallet-sandbox.ts';
import { PARSER_REFUSAL_CODES } from '../../api/http/parser-refusals.ts';
import { finalFundingStatuses } from '../../domain/funding.ts';
import { finalPaymentStatuses } from '../../domain/payment.ts';
import { waitUntil } from '../support/wait-for.ts';

const seed = process.env.FC_SEED ? Number(process.env.FC_SEED) : Date.now() % 2 ** 31;
const runs = (numRuns: number) => ({ seed, numRuns: process.env.FC_RUNS ? Number(process.env.FC_RUNS) : numRuns });

let stack: PartnerStack;

// ---------------------------------------------------------------------------------------------
// What every answer must look like.

type Family = 'ops' | 'ops-or-csv' | 'session' | 'page' | 'page-json';

/** Signs of an internal fault reaching the client: stack frames, paths, error class names, SQL. */
const leakPatterns = [
  /\bat [^\n]{0,200}\.[cm]?[jt]s:\d+/,
  /node_modules/,
  /\b[A-Za-z]*Error:/,
  /\/work\/|\/home\/|\/tmp\//,
  /prisma/i,
  /invalid byte sequence|violates|syntax error at/i,
];

/** Node's HTTP parser refused the request before any route saw it (api/http/parser-refusals.ts). */
const refusedByParser = (response: RawResponse) =>
  /^application\/problem\+json/.test(response.headers['content-type'] ?? '') &&
  PARSER_REFUSAL_CODES.includes((JSON.parse(response.body) as { code?: string }).code ?? '');

function expectSafe(response: RawResponse, family: Family): void {
  const context = `${response.status} ${response.headers['content-type'] ?? '(no type)'}: ${response.body.slice(0, 400)}`;
  expect(response.status, context).toBeGreaterThanOrEqual(200);
  expect(response.status, context).toBeLessThan(500);
  for (const pattern of leakPatterns) expect(response.body, context).not.toMatch(pattern);
  // Nothing the request sent became a header of the answer.
  expect(
    Object.keys(response.headers).filter((name) => name.includes('injected')),
    context,
  ).toEqual([]);
  if (refusedByParser(response)) return;
  expect(response.headers['x-content-type-options'], context).toBe('nosniff');
  expect(response.headers['content-security-policy'], context).toMatch(/default-src 'none'/);
  // Express answers OPTIONS itself with the route's methods (Allow, and the same as text).
  if (response.status === 200 && response.headers.allow !== undefined) {
    expect(response.body, context).toBe(response.headers.allow);
    return;
  }
  if (response.status >= 300 && response.status < 400) {
    expect(response.headers.location, context).toMatch(/^(\/|https?:\/\/)/);
    return;
  }
  const type = response.headers['content-type'] ?? '';
  switch (family) {
    case 'ops-or-csv':
      // GET /ops/settlements/{date}?format=csv: a 200 may be CSV; anything else is as in 'ops'.
      if (response.status === 200 && type.startsWith('text/csv')) return;
      expectSafe(response, 'ops');
      return;
    case 'ops': {
      expect(type, context).toMatch(response.status < 300 ? /^application\/json/ : /^application\/problem\+json/);
      const body = JSON.parse(response.body) as Record<string, unknown>;
      if (response.status >= 400)
        expect(body, context).toMatchObject({
          status: response.status,
          code: expect.any(String),
          title: expect.any(String),
        });
      return;
    }
    case 'session':
    case 'page-json': {
      expect(type, context).toMatch(/^application\/json/);
      const body = JSON.parse(response.body) as Record<string, unknown>;
      if (response.status >= 400) expect(Object.keys(body).sort(), context).toEqual(['code', 'message']);
      return;
    }
    case 'page':
      expect(type, context).toMatch(/^text\/html/);
      expect(response.body, context).toMatch(/^<!doctype html>/);
      return;
  }
}

const accepted = (response: RawResponse) => response.status >= 200 && response.status < 400;

type BodyRequest = { headers: Array<[string, string | Buffer]>; body: Buffer; contentLength?: number };
const jsonRequest = (text: string, contentType = 'application/json'): BodyRequest => ({
  headers: [['Content-Type', contentType]],
  body: Buffer.from(text),
});

// ---------------------------------------------------------------------------------------------
// Hostile values.

/** JSON text exactly as written: numbers JSON.stringify cannot produce (1e400, 30 digits, -0). */
class RawJson {
  constructor(readonly text: string) {}
}
/** An object as an ordered list of entries, so `__proto__` and repeated keys reach the wire. */
class Entries {
  constructor(readonly entries: Array<[string, unknown]>) {}
}

function toJson(value: unknown): string {
  if (value instanceof RawJson) return value.text;
  if (value instanceof Entries)
    return `{${value.entries.map(([key, item]) => `${JSON.stringify(key)}:${toJson(item)}`).join(',')}}`;
  if (Array.isArray(value)) return `[${value.map(toJson).join(',')}]`;
  if (value !== null && typeof value === 'object') return toJson(new Entries(Object.entries(value)));
  // JSON.stringify writes a lone surrogate as \udXXX, which JSON.parse turns back into one.
  return JSON.stringify(value) ?? 'null';
}

const nastyStrings = [
  '',
  ' ',
  '\u0000',
  'a\u0000b',
  '\u202eevil\u202c',
  'مرحبا بالعالم',
  'שלום',
  '\ufeff',
  '\u200b',
  'ｆｕｌｌ',
  '١٢٣٤٥٦٧',
  '<script>alert(1)</script>',
  "' OR 1=1 --",
  '${7*7}',
  '../../etc/passwd',
  '%00',
  '\r\n',
  'X\r\nX-Injected: 1',
  '\ud83d\ude00',
  '\ud83d',
  '\ude00x',
  'null',
  'NaN',
  '__proto__',
  'A'.repeat(300),
  'B'.repeat(5000),
];

const surrogateHalves = fc.string({
  unit: fc.constantFrom('\ud800', '\udbff', '\udc00', '\udfff', 'a', '\u0000', '\u202e'),
  maxLength: 8,
});
const hostileText: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(...nastyStrings),
  fc.string({ unit: 'binary', maxLength: 30 }),
  fc.string({ unit: 'grapheme', maxLength: 12 }),
  fc.string({ unit: 'binary-ascii', maxLength: 20 }),
  surrogateHalves,
);

const hugeNumbers = [
  '1e400',
  '-1e400',
  '1e-400',
  '-0',
  '123456789012345678901234567890',
  '0.1e1',
  '1E+2',
  '9007199254740993',
  '-9007199254740993',
].map((text) => new RawJson(text));

const deepNesting = fc
  .tuple(fc.integer({ min: 20, max: 3500 }), fc.boolean())
  .map(
    ([depth, arrays]) =>
      new RawJson(
        arrays ? `${'['.repeat(depth)}${']'.repeat(depth)}` : `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`,
      ),
  );

const hostileValue: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 4, arbitrary: hostileText },
  { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 3, stringUnit: 'binary' }) },
  { weight: 1, arbitrary: fc.double() },
  { weight: 1, arbitrary: fc.bigInt().map((value) => new RawJson(value.toString())) },
  { weight: 1, arbitrary: fc.constantFrom(...hugeNumbers) },
  { weight: 1, arbitrary: deepNesting },
  { weight: 1, arbitrary: fc.constantFrom(null, true, false, [], {}) },
);

const hostileKeys = ['__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty', 'extra'];

/** An object with each field present or not, and maybe prototype-ish or repeated keys. */
function hostileObject(fields: Record<string, fc.Arbitrary<unknown>>): fc.Arbitrary<Entries> {
  const names = Object.keys(fields);
  return fc
    .tuple(
      fc.tuple(
        ...names.map((name) =>
          fc.option(
            fields[name]!.map((value): [string, unknown] => [name, value]),
            { freq: 6, nil: undefined },
          ),
        ),
      ),
      fc.array(fc.tuple(fc.constantFrom(...hostileKeys, ...names), hostileValue), { maxLength: 2 }),
    )
    .map(
      ([present, extra]) =>
        new Entries([...present.filter((entry): entry is [string, unknown] => entry !== undefined), ...extra]),
    );
}

const amountValues = [
  '100.50',
  '1',
  '0.01',
  '-1.00',
  '-0',
  '0',
  '0.00',
  '1e3',
  '1E+2',
  '0x10',
  'Infinity',
  'NaN',
  ' 1.00',
  '1.00 ',
  '1.001',
  '1.0000000001',
  '100.5.5',
  '١٠٠',
  '１００',
  '1_000',
  '1,000.00',
  '9999999999.99',
  '9999999999.999',
  '10000000000',
  '99999999999999999999',
  '+1',
  '.5',
  '5.',
  '00.5',
  '',
];
const amountValue: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...amountValues) },
  { weight: 2, arbitrary: fc.double().map(String) },
  { weight: 1, arbitrary: fc.bigInt().map(String) },
  { weight: 1, arbitrary: fc.double() },
  { weight: 1, arbitrary: fc.constantFrom(...hugeNumbers) },
  { weight: 2, arbitrary: hostileValue },
);
const currency = fc.oneof(fc.constantFrom('PHP', 'JPY', 'USD', 'php', 'XXX', '', 'PHP\u0000'), hostileValue);
const hostileAmount = fc.oneof(
  { weight: 4, arbitrary: hostileObject({ currency, value: amountValue }) },
  { weight: 1, arbitrary: hostileValue },
);

/** Raw body text for a JSON route: mostly a near-valid structure, sometimes anything at all. */
function jsonBody(structure: fc.Arbitrary<unknown>): fc.Arbitrary<string | Buffer> {
  return fc.oneof(
    { weight: 8, arbitrary: structure.map(toJson) },
    { weight: 1, arbitrary: hostileValue.map(toJson) },
    { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 80 }) },
    { weight: 1, arbitrary: fc.uint8Array({ maxLength: 64 }).map((bytes) => Buffer.from(bytes)) },
    // Invalid UTF-8 inside a JSON string: overlong NUL, an encoded surrogate half, a stray byte.
    {
      weight: 1,
      arbitrary: fc
        .constantFrom('c080', 'eda080', 'ff', 'f4908080')
        .map((hex) => Buffer.concat([Buffer.from('{"a":"'), Buffer.from(hex, 'hex'), Buffer.from('"}')])),
    },
    {
      weight: 1,
      arbitrary: fc.integer({ min: 16 * 1024, max: 120_000 }).map((size) => `{"padding":"${'x'.repeat(size)}"}`),
    },
  );
}

const jsonContentTypes = fc.oneof(
  { weight: 6, arbitrary: fc.constant('application/json') },
  {
    weight: 3,
    arbitrary: fc.constantFrom(
      'application/json; charset=utf-8',
      'application/json; charset=latin1',
      'application/json; charset=utf-16',
      'application/json; charset="bogus"',
      'application/vnd.api+json',
      'text/plain',
      'application/x-www-form-urlencoded',
      'multipart/form-data; boundary=x',
      'application/json\u0000',
      '',
    ),
  },
);

/** Headers and body of a request with a JSON-ish body: content type, encoding, and length games. */
function bodyRequest(body: fc.Arbitrary<string | Buffer>): fc.Arbitrary<BodyRequest> {
  return fc
    .tuple(
      body,
      jsonContentTypes,
      fc.constantFrom('none', 'none', 'none', 'none', 'gzip', 'gzip-garbage', 'x-unknown', 'short-length'),
    )
    .map(([text, contentType, encoding]) => {
      const raw = Buffer.isBuffer(text) ? text : Buffer.from(text, 'utf8');
      const headers: Array<[string, string | Buffer]> =
        contentType === '' ? [] : [['Content-Type', Buffer.from(contentType, 'latin1')]];
      switch (encoding) {
        case 'gzip':
          return { headers: [...headers, ['Content-Encoding', 'gzip']], body: gzipSync(raw) };
        case 'gzip-garbage':
          return { headers: [...headers, ['Content-Encoding', 'gzip']], body: raw };
        case 'x-unknown':
          return { headers: [...headers, ['Content-Encoding', 'x-unknown']], body: raw };
        case 'short-length':
          // The rest of the bytes arrive as a second (garbage) request on the same connection.
          return { headers, body: raw, contentLength: Math.floor(raw.length / 2) };
        default:
          return { headers, body: raw };
      }
    });
}

/** Header values as bytes: UTF-8 text, any bytes at all (CR, LF, NUL), injection attempts. */
const hostileHeaderValue: fc.Arbitrary<Buffer> = fc.oneof(
  hostileText.map((text) => Buffer.from(text, 'utf8')),
  fc.uint8Array({ minLength: 1, maxLength: 40 }).map((bytes) => Buffer.from(bytes)),
  fc
    .constantFrom(
      'key\r\nX-Injected: 1',
      'key\nX-Injected: 1',
      'key\rX-Injected: 1',
      'key\r\n\r\nGET /ops/fundings HTTP/1.1',
      'key\u0000',
      ' ',
      '\t',
      'a'.repeat(256),
      'a'.repeat(8000),
      '\u00ff\u00fe',
    )
    .map((text) => Buffer.from(text, 'latin1')),
);

const unreserved = /^[A-Za-z0-9\-._~]$/;
/** Percent-encodes the UTF-8 bytes of text (a lone surrogate becomes U+FFFD's bytes). */
const percentEncode = (text: string) =>
  [...Buffer.from(text, 'utf8')]
    .map((byte) =>
      unreserved.test(String.fromCharCode(byte))
        ? String.fromCharCode(byte)
        : `%${byte.toString(16).padStart(2, '0').toUpperCase()}`,
    )
    .join('');
/** Percent sequences that do not decode: truncated, not hex, invalid or overlong UTF-8. */
const brokenPercent = fc.constantFrom(
  '%',
  '%Z',
  '%ZZ',
  '%E0%A4%A',
  '%C0%80',
  '%ED%A0%80',
  '%FF',
  '%F4%90%80%80',
  '%00',
  '%0D%0AX-Injected:%201',
  '..',
  '%2e%2e',
  '%2F',
);

const pathSegment = fc.oneof(
  { weight: 2, arbitrary: fc.uuid() },
  { weight: 3, arbitrary: hostileText.filter((text) => text.length > 0).map(percentEncode) },
  { weight: 2, arbitrary: brokenPercent },
  { weight: 1, arbitrary: fc.tuple(fc.uuid(), brokenPercent).map(([id, tail]) => `${id}${tail}`) },
);

/** A query string from hostile pairs; `names` are the route's own parameters. */
function queryString(names: string[], value: fc.Arbitrary<string>): fc.Arbitrary<string> {
  const pair = fc.tuple(
    fc.oneof(
      { weight: 6, arbitrary: fc.constantFrom(...names) },
      { weight: 1, arbitrary: fc.constantFrom(...hostileKeys) },
      { weight: 1, arbitrary: hostileText.map(percentEncode) },
    ),
    fc.oneof({ weight: 6, arbitrary: value.map(percentEncode) }, { weight: 1, arbitrary: brokenPercent }),
  );
  return fc.array(pair, { maxLength: 5 }).map((pairs) => pairs.map(([name, item]) => `${name}=${item}`).join('&'));
}

// ---------------------------------------------------------------------------------------------
// Fixtures: a link of our own, a landed web session, a pending session id and login state.

let linkId: string;
let landed: { cookie: string; csrf: string; prefix: string };
let pendingSessionId: string;
let pendingLogin: { state: string; partnerUserId: string; cookie: string };
let sessionTokens: { accessToken: string; refreshToken: string; expiresAt: number };

const ops = (request: RawRequest) =>
  rawHttp(stack.apiBase, {
    ...request,
    headers: [['Authorization', `Bearer ${stack.opsKey}`], ...(request.headers ?? [])],
  });
const send = (request: RawRequest) => rawHttp(stack.apiBase, request);

async function launch(userId: string): Promise<string> {
  const answer = await stack.admin.call<{ sessionId: string }>('POST', '/launch', { userId });
  expect(answer.status).toBe(200);
  return answer.body.sessionId;
}

beforeAll(async () => {
  // Generous limits: these properties send hundreds of requests a minute from one address, and ask for any day's
  // settlement (a run each, which on a loaded machine may outlast its GET's wait: no bound of runs at once here).
  stack = await startPartnerStack({
    embeddedSessionTtlSeconds: 900,
    hardening: { publicRateLimitPerMinute: 1_000_000, sessionRateLimitPerMinute: 1_000_000 },
    settlements: { maxInFlight: 32, maxRuns: 64 },
  });
  await stack.startWorker();

  ({ linkId } = await createEmbeddedLink(stack, { kycLevel: 'KYC1', balance: '1000.00' }));

  const appUser = await stack.admin.createUser({ kycLevel: 'KYC1', balance: '1000.00' });
  const sessionId = await launch(appUser.userId);
  const home = await fetch(`${stack.apiBase}/app?sessionId=${sessionId}`, { redirect: 'manual' });
  const html = await home.text();
  expect(home.status, html).toBe(200);
  const cookie = home.headers.getSetCookie()[0]!.split(';')[0]!;
  const appSession = await stack.database.appSession.findUniqueOrThrow({
    where: { cookieHash: hashBearer(cookie.split('=')[1]!) },
  });
  landed = { cookie, csrf: /name="csrf" value="([^"]+)"/.exec(html)![1]!, prefix: `app:${appSession.id}:` };

  pendingSessionId = await launch((await stack.admin.createUser({ kycLevel: 'KYC1' })).userId);
  const partnerUserId = `hostile-pending-${randomUUID()}`;
  const started = await stack.startLogin(partnerUserId, '09171234567');
  pendingLogin = { state: started.state, partnerUserId, cookie: started.cookie };
  sessionTokens = await stack.admin.embeddedTokens((await stack.admin.createUser({ kycLevel: 'KYC1' })).userId);
}, 120_000);

afterAll(async () => {
  await stack?.close();
});

// ---------------------------------------------------------------------------------------------

describe('ops API', () => {
  const fundingBody = () =>
    hostileObject({
      recipient: fc.oneof(
        hostileObject({
          type: fc.constant('CODE'),
          code: fc.oneof(fc.constant('0000000'), fc.stringMatching(/^\d{1,9}$/), fc.integer(), hostileText),
        }),
        hostileObject({ type: fc.constant('TOKEN'), linkId: fc.oneof(fc.constant(linkId), fc.uuid(), hostileText) }),
        hostileObject({ type: hostileValue }),
        hostileValue,
      ),
      amount: hostileAmount,
    });

  it('POST /ops/fundings: hostile bodies are refused with a problem and store nothing', async () => {
    await fc.assert(
      fc.asyncProperty(bodyRequest(jsonBody(fundingBody())), async (request) => {
        const key = `hostile-${randomUUID()}`;
        const response = await ops({
          method: 'POST',
          target: '/ops/fundings',
          ...request,
          headers: [['Idempotency-Key', key], ...request.headers],
        });
        expectSafe(response, 'ops');
        const stored = await stack.database.funding.count({ where: { idempotencyKey: key } });
        expect(stored, response.body).toBe(accepted(response) ? 1 : 0);
      }),
      {
        ...runs(100),
        examples: [
          [
            jsonRequest(
              `{"__proto__":{"admin":true},"recipient":{"type":"TOKEN","linkId":"${linkId}"},"amount":{"currency":"PHP","value":"1.00"}}`,
            ),
          ],
          [
            jsonRequest(
              `{"recipient":{"type":"TOKEN","linkId":"${linkId}","constructor":{"prototype":{"admin":true}}},"amount":{"currency":"PHP","value":"1.00"}}`,
            ),
          ],
          [
            jsonRequest(
              `{"recipient":{"type":"TOKEN","linkId":"${linkId}"},"amount":{"currency":"PHP","value":100.5}}`,
            ),
          ],
          [
            jsonRequest(
              `{"recipient":{"type":"TOKEN","linkId":"${linkId}"},"amount":{"currency":"PHP","value":"1.005"}}`,
            ),
          ],
          [
            jsonRequest(
              `{"recipient":{"type":"TOKEN","linkId":"${linkId}"},"amount":{"currency":"PHP","value":"-1.00"}}`,
            ),
          ],
          [
            jsonRequest(
              `{"recipient":{"type":"TOKEN","linkId":"${linkId}"},"amount":{"currency":"PHP","value":"99999999999999999999"}}`,
            ),
          ],
          [jsonRequest('{"recipient":{"type":"CODE","code":"1234567"},"amount":{"currency":"PHP","value":1e400}}')],
          [jsonRequest('{}', 'application/json; charset=latin1')],
          [
            {
              ...jsonRequest('{}'),
              headers: [
                ['Content-Type', 'application/json'],
                ['Content-Encoding', 'x-unknown'],
              ],
            },
          ],
          [jsonRequest(`{"a":${'['.repeat(5000)}${']'.repeat(5000)}}`)],
        ],
      },
    );
  });

  it('POST /ops/fundings: hostile Idempotency-Key bytes (CR, LF, NUL, non-ASCII, too long) store nothing', async () => {
    const body = JSON.stringify({ recipient: { type: 'TOKEN', linkId }, amount: { currency: 'PHP', value: '1.00' } });
    await fc.assert(
      fc.asyncProperty(fc.array(hostileHeaderValue, { minLength: 1, maxLength: 2 }), async (keys) => {
        const before = await stack.database.funding.count({ where: { linkId } });
        const response = await ops({
          method: 'POST',
          target: '/ops/fundings',
          headers: [
            ['Content-Type', 'application/json'],
            ...keys.map((key): [string, Buffer] => ['Idempotency-Key', key]),
          ],
          body,
        });
        expectSafe(response, 'ops');
        const after = await stack.database.funding.count({ where: { linkId } });
        expect(after - before, response.body).toBeLessThanOrEqual(accepted(response) ? 1 : 0);
      }),
      runs(60),
    );
  });

  it('POST /ops/payments: hostile bodies and keys are refused with a problem and store nothing', async () => {
    const paymentBody = hostileObject({
      linkId: fc.oneof(fc.constant(linkId), fc.uuid(), hostileValue),
      amount: hostileAmount,
    });
    await fc.assert(
      fc.asyncProperty(
        bodyRequest(jsonBody(paymentBody)),
        fc.option(hostileHeaderValue, { freq: 4 }),
        async (request, hostileKey) => {
          const key = `hostile-${randomUUID()}`;
          const before = await stack.database.payment.count({ where: { linkId } });
          const response = await ops({
            method: 'POST',
            target: '/ops/payments',
            ...request,
            headers: [['Idempotency-Key', hostileKey ?? key], ...request.headers],
          });
          expectSafe(response, 'ops');
          const after = await stack.database.payment.count({ where: { linkId } });
          expect(after - before, response.body).toBeLessThanOrEqual(accepted(response) ? 1 : 0);
          if (hostileKey === null)
            expect(await stack.database.payment.count({ where: { idempotencyKey: key } })).toBe(
              accepted(response) ? 1 : 0,
            );
        },
      ),
      runs(80),
    );
  });

  it('POST /ops/payments/{id}/resolve and /ops/fundings/{id}/cancel: hostile ids, bodies and X-Ops-Actor', async () => {
    const resolveBody = hostileObject({
      outcome: fc.oneof(fc.constantFrom('SUCCEEDED', 'FAILED', 'succeeded', 'NEEDS_REVIEW'), hostileValue),
      note: fc.oneof(hostileText, hostileValue),
    });
    await fc.assert(
      fc.asyncProperty(
        pathSegment,
        bodyRequest(jsonBody(resolveBody)),
        fc.option(hostileHeaderValue, { freq: 2 }),
        fc.boolean(),
        async (id, request, actor, cancel) => {
          const response = await ops({
            method: 'POST',
            target: cancel ? `/ops/fundings/${id}/cancel` : `/ops/payments/${id}/resolve`,
            ...request,
            headers: [...request.headers, ...(actor ? [['X-Ops-Actor', actor] as [string, Buffer]] : [])],
          });
          expectSafe(response, 'ops');
          // No funding or payment has these ids: nothing can have been cancelled or resolved.
          expect(response.status, response.body).toBeGreaterThanOrEqual(400);
        },
      ),
      runs(80),
    );
  });

  it('POST /ops/payments/{id}/resolve on a payment in review: a NUL or broken-unicode note is refused and the payment stays in review; an RTL note is kept intact', async () => {
    // Every execute fails before it reaches the wallet (503): after the bounded attempts the
    // outcome stays unknown and the payment is parked for a person (a PAYMENT_ALREADY_EXECUTED
    // after a lost answer would be proof of success instead, and end it SUCCEEDED).
    await stack.admin.setFaults([{ endpoint: 'op.payments.execute', mode: 'error-before-effect', rate: 1 }]);
    const started = await ops({
      method: 'POST',
      target: '/ops/payments',
      headers: [
        ['Content-Type', 'application/json'],
        ['Idempotency-Key', `hostile-review-${randomUUID()}`],
      ],
      body: JSON.stringify({ linkId, amount: { currency: 'PHP', value: '2.00' } }),
    });
    expect(started.status, started.body).toBe(202);
    const id = (JSON.parse(started.body) as { id: string }).id;
    try {
      const deadline = Date.now() + 30_000;
      while ((await stack.database.payment.findUniqueOrThrow({ where: { id } })).status !== 'NEEDS_REVIEW') {
        if (Date.now() > deadline) throw new Error('the payment never reached NEEDS_REVIEW');
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    } finally {
      await stack.admin.clearFaults();
    }
    const resolve = (note: string, actor: Buffer = Buffer.from('maria.ops')) =>
      ops({
        method: 'POST',
        target: `/ops/payments/${id}/resolve`,
        headers: [
          ['Content-Type', 'application/json'],
          ['X-Ops-Actor', actor],
        ],
        body: JSON.stringify({ outcome: 'FAILED', note }),
      });
    for (const note of ['ledger\u0000shows it', 'escape \u001b[31m red', 'half \ud800 a pair', '\udfff']) {
      const refused = await resolve(note);
      expectSafe(refused, 'ops');
      expect(refused.status, refused.body).toBe(400);
      expect((await stack.database.payment.findUniqueOrThrow({ where: { id } })).status).toBe('NEEDS_REVIEW');
    }
    const note = '\u202bالدفتر يظهر الخصم\u202c ✔ 😀\nline two';
    const resolved = await resolve(note, Buffer.from('maria\r\nX-Injected: 1', 'latin1'));
    expectSafe(resolved, 'ops');
    expect(resolved.status, resolved.body).toBe(200);
    const row = await stack.database.payment.findUniqueOrThrow({ where: { id } });
    expect(row.status).toBe('FAILED');
    expect(row.resolvedNote).toBe(note);
    expect(row.resolvedBy).toBe('default (as maria)');
  });

  it('GET and DELETE routes: hostile path segments and query strings', async () => {
    const listValue = fc.oneof(
      fc.constantFrom(
        'PENDING',
        'APPROVED',
        'NEEDS_REVIEW',
        '0',
        '-1',
        '1e2',
        '201',
        '0x10',
        '1.5',
        '99999999999999999999',
        'Infinity',
      ),
      fc.constantFrom(
        '0000-01-01T00:00:00Z',
        '9999-12-31T23:59:59-23:59',
        '2024-02-30T00:00:00Z',
        '2024-01-01T00:00:00.123456789Z',
        '-271821-04-20T00:00:00Z',
      ),
      fc
        .tuple(
          fc.oneof(
            fc.constantFrom('-271821-04-20T00:00:00.000Z', '+275760-09-13T00:00:00.000Z', '0000-01-01T00:00:00Z', 'x'),
            fc.integer(),
            fc.constant(null),
          ),
          fc.oneof(fc.uuid(), hostileText),
        )
        .map((cursor) => Buffer.from(JSON.stringify(cursor)).toString('base64url')),
      hostileText,
    );
    const target = fc.oneof(
      pathSegment.map((id) => ['GET', `/ops/fundings/${id}`] as const),
      pathSegment.map((id) => ['GET', `/ops/payments/${id}`] as const),
      pathSegment.map((id) => ['GET', `/ops/links/${id}`] as const),
      pathSegment.map((id) => ['GET', `/ops/links/${id}/profile`] as const),
      pathSegment.map((id) => ['DELETE', `/ops/links/${id}`] as const),
      queryString(['status', 'from', 'to', 'limit', 'cursor'], listValue).map(
        (query) => ['GET', `/ops/fundings?${query}`] as const,
      ),
      queryString(['status', 'from', 'to', 'limit', 'cursor'], listValue).map(
        (query) => ['GET', `/ops/payments?${query}`] as const,
      ),
    );
    const cursor = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
    await fc.assert(
      fc.asyncProperty(target, async ([method, path]) => {
        const response = await ops({ method, target: path });
        expectSafe(response, 'ops');
      }),
      {
        ...runs(150),
        // Dates at the edges of what JavaScript and PostgreSQL can hold, always tried.
        examples: [
          [['GET', `/ops/fundings?cursor=${cursor(['-271821-04-20T00:00:00.000Z', randomUUID()])}`]],
          [['GET', `/ops/payments?cursor=${cursor(['+275760-09-13T00:00:00.000Z', randomUUID()])}`]],
          [['GET', `/ops/fundings?from=0000-01-01T00:00:00Z&to=9999-12-31T23:59:59-23:59`]],
          [['GET', '/ops/fundings/%E0%A4%A']],
          [['GET', '/ops/links/%ED%A0%80/profile']],
        ],
      },
    );
    // The link the other properties used is still there and active: no DELETE reached it.
    expect((await stack.database.link.findUniqueOrThrow({ where: { id: linkId } })).status).toBe('ACTIVE');
  });

  it('batch reads: GET /ops/funding-batches?…, /ops/funding-batches/{id}, its items and its report: hostile segments and queries', async () => {
    const made = await stack.opsFetch('/ops/funding-batches', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': randomUUID() },
      body: JSON.stringify({
        name: 'Hostile reads',
        items: [
          {
            reference: 'h-1',
            recipient: { type: 'CODE', code: '1234567' },
            amount: { currency: 'PHP', value: '1.00' },
          },
        ],
      }),
    });
    expect(made.status).toBe(202);
    const batchId = ((await made.json()) as { batchId: string }).batchId;
    const value = fc.oneof(
      fc.constantFrom('FAILED', 'CANCELLED', 'PENDING', 'RUNNING', '0', '-1', '1001', '1e2', 'h-1', batchId),
      hostileText,
    );
    const target = fc.oneof(
      queryString(['state', 'limit', 'cursor'], value).map((query) => `/ops/funding-batches?${query}`),
      fc
        .constantFrom(batchId, '')
        .chain((id) =>
          queryString(['status', 'limit', 'cursor'], value).map(
            (query) => `/ops/funding-batches/${id || batchId}/items?${query}`,
          ),
        ),
      pathSegment.map((id) => `/ops/funding-batches/${id}`),
      pathSegment.map((id) => `/ops/funding-batches/${id}/items`),
      pathSegment.map((id) => `/ops/funding-batches/${id}/report?format=csv`),
    );
    await fc.assert(
      fc.asyncProperty(target, async (path) => {
        expectSafe(await ops({ method: 'GET', target: path }), 'ops-or-csv');
      }),
      {
        ...runs(100),
        // A NUL and a space in the items' cursor (they reached PostgreSQL as a reference: 500).
        examples: [
          [`/ops/funding-batches/${batchId}/items?cursor=%00`],
          [`/ops/funding-batches/${batchId}/items?cursor=a%20b&status=FAILED`],
        ],
      },
    );
  });

  it('money authority reads: GET /ops/accounts/{…}, /ops/ledger/entries, /ops/links?…, /ops/settlements/{date}: hostile segments and queries', async () => {
    const dateLike = fc.oneof(
      fc.constantFrom(
        '2026-02-30',
        '0000-01-01',
        '9999-12-31',
        '2026-1-1',
        '2026-01-01T00:00:00Z',
        '20260101',
        '-2026-01-01',
        '+275760-09-13',
      ),
      fc
        .date({ noInvalidDate: true, min: new Date('1970-01-01'), max: new Date('2100-01-01') })
        .map((date) => date.toISOString().slice(0, 10)),
    );
    const queryValue = fc.oneof(
      fc.constantFrom(
        'TREASURY',
        'IN_FLIGHT',
        'USER:',
        'USER:x',
        'CAPITAL',
        '0',
        '-1',
        '201',
        '1e2',
        'csv',
        'json',
        'CSV',
        'wallet:',
      ),
      fc.uuid().map((id) => Buffer.from(JSON.stringify([id, 'x'])).toString('base64url')),
      // Entry ids as the ledger's cursor holds them, up to 19 digits: some past PostgreSQL's bigint.
      fc.bigInt({ min: 1n, max: 10n ** 19n - 1n }).map((id) => Buffer.from(id.toString()).toString('base64url')),
      hostileText,
    );
    const target = fc.oneof(
      pathSegment.map((account) => `/ops/accounts/${account}`),
      fc.constantFrom(
        '/ops/accounts/TREASURY',
        '/ops/accounts/USER%3Ax',
        '/ops/accounts/%00',
        '/ops/accounts/wallet%3A%E2%80%AE',
      ),
      queryString(['account', 'limit', 'cursor'], queryValue).map((query) => `/ops/ledger/entries?${query}`),
      queryString(['partnerUserId', 'profileId'], queryValue).map((query) => `/ops/links?${query}`),
      fc
        .tuple(fc.oneof(dateLike, pathSegment), queryString(['format', 'limit', 'cursor'], queryValue))
        .map(([date, query]) => `/ops/settlements/${date}?${query}`),
    );
    // What the tests before accepted (a funding whose Idempotency-Key was fine) is done posting first: on a loaded
    // machine its workflow settled it while these reads ran, and the count below moved with no read to blame.
    await waitUntil(
      async () =>
        (await stack.database.funding.count({
          where: { status: { notIn: [...finalFundingStatuses, 'NEEDS_REVIEW'] } },
        })) +
        (await stack.database.payment.count({
          where: { status: { notIn: [...finalPaymentStatuses, 'NEEDS_REVIEW'] } },
        })),
      (inFlight) => inFlight === 0,
      120_000,
    );
    const before = await stack.database.ledgerTransaction.count();
    await fc.assert(
      fc.asyncProperty(target, async (path) => {
        expectSafe(await ops({ method: 'GET', target: path }), 'ops-or-csv');
      }),
      {
        ...runs(120),
        examples: [
          ['/ops/settlements/2026-02-30'],
          ['/ops/settlements/9999-12-31?format=csv'],
          ['/ops/settlements/2020-02-02?limit=1001'],
          ['/ops/settlements/2020-02-02?format=csv&limit=5'],
          [
            `/ops/settlements/2020-02-02?cursor=${Buffer.from(JSON.stringify(['5f1c0d9e-0000-4000-8000-000000000001', 'funding', '5f1c0d9e-0000-4000-8000-000000000002'])).toString('base64url')}`,
          ],
          ['/ops/ledger/entries?account=%00&limit=1e2'],
          [`/ops/ledger/entries?cursor=${Buffer.from('9223372036854775808').toString('base64url')}`],
          ['/ops/links?partnerUserId=&profileId='],
        ],
      },
    );
    // Reads: not one ledger transaction more.
    expect(await stack.database.ledgerTransaction.count()).toBe(before);
  });

  it('POST /ops/accounts/{…}/adjustments: hostile accounts, bodies and keys are refused with a problem and post nothing', async () => {
    const adjustmentBody = hostileObject({ amount: hostileAmount, reason: fc.oneof(hostileText, hostileValue) });
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(pathSegment, fc.constantFrom('TREASURY', 'IN_FLIGHT', 'CAPITAL', 'USER%3Ax')),
        bodyRequest(jsonBody(adjustmentBody)),
        fc.option(hostileHeaderValue, { freq: 2 }),
        async (account, request, key) => {
          const before = await stack.database.ledgerTransaction.count();
          const response = await ops({
            method: 'POST',
            target: `/ops/accounts/${account}/adjustments`,
            ...request,
            headers: [...request.headers, ...(key ? [['Idempotency-Key', key] as [string, Buffer]] : [])],
          });
          expectSafe(response, 'ops');
          if (!accepted(response)) expect(await stack.database.ledgerTransaction.count()).toBe(before);
        },
      ),
      runs(80),
    );
  });

  it('free text a person writes (an adjustment’s reason, a batch’s name, a webhook’s address) with a NUL, an ESC or half a surrogate pair: refused naming the field (400, a batch’s 422 BATCH_INVALID), nothing stored; an RTL text is kept', async () => {
    const post = (target: string, body: unknown) =>
      ops({
        method: 'POST',
        target,
        headers: [
          ['Content-Type', 'application/json'],
          ['Idempotency-Key', `plain-text-${randomUUID()}`],
        ],
        body: JSON.stringify(body),
      });
    const adjust = (reason: string) =>
      post('/ops/accounts/plain-text-user/adjustments', { amount: { currency: 'PHP', value: '1.00' }, reason });
    const batch = (name: string) =>
      post('/ops/funding-batches', {
        name,
        items: [
          {
            reference: 'p-1',
            recipient: { type: 'CODE', code: '1234567' },
            amount: { currency: 'PHP', value: '1.00' },
          },
        ],
      });
    const stored = async () => [
      await stack.database.ledgerTransaction.count(),
      await stack.database.fundingBatch.count(),
    ];
    const before = await stored();
    for (const text of ['cash\u0000back', 'escape \u001b[31m red', 'half \ud800 a pair', '\udfff']) {
      // Before: a NUL reached PostgreSQL, which refuses it in text: 500 INTERNAL.
      // A batch's body problems are its 422 BATCH_INVALID, each with its field (contract section 14).
      for (const [field, answer, status, code] of [
        ['reason', await adjust(text), 400, 'VALIDATION_ERROR'],
        ['name', await batch(text), 422, 'BATCH_INVALID'],
      ] as const) {
        expectSafe(answer, 'ops');
        expect(answer.status, answer.body).toBe(status);
        expect(JSON.parse(answer.body), answer.body).toMatchObject({ code });
        expect(answer.body).toContain(`${field} must be plain text`);
      }
    }
    // A webhook's address: the URL parser takes a NUL or an ESC in a path (and encodes it), the text as sent was
    // stored. Before: 500 for the NUL.
    const endpoints = await stack.database.webhookEndpoint.count();
    for (const url of ['https://hooks.example.com/in\u0000x', 'https://hooks.example.com/in\u001b[31mx']) {
      const answer = await post('/ops/webhooks/endpoints', { url, events: ['funding.failed'] });
      expectSafe(answer, 'ops');
      expect(answer.status, answer.body).toBe(400);
      expect(answer.body).toContain('url must not contain control characters');
    }
    expect(await stack.database.webhookEndpoint.count()).toBe(endpoints);
    expect(await stored()).toEqual(before);
    const rtl = '\u202bالدفتر\u202c ✔ 😀';
    const adjusted = await adjust(rtl);
    expect(adjusted.status, adjusted.body).toBe(201);
    expect((JSON.parse(adjusted.body) as { reason: string }).reason).toBe(rtl);
    const named = await batch(rtl);
    expect(named.status, named.body).toBe(202);
  });

  it('POST /ops/fundings/{id}/resolve: hostile ids, bodies and X-Ops-Actor resolve nothing', async () => {
    const resolveBody = hostileObject({
      outcome: fc.oneof(fc.constantFrom('APPROVED', 'FAILED', 'approved', 'NEEDS_REVIEW', 'SUCCEEDED'), hostileValue),
      note: fc.oneof(hostileText, hostileValue),
    });
    await fc.assert(
      fc.asyncProperty(
        pathSegment,
        bodyRequest(jsonBody(resolveBody)),
        fc.option(hostileHeaderValue, { freq: 2 }),
        async (id, request, actor) => {
          const response = await ops({
            method: 'POST',
            target: `/ops/fundings/${id}/resolve`,
            ...request,
            headers: [...request.headers, ...(actor ? [['X-Ops-Actor', actor] as [string, Buffer]] : [])],
          });
          expectSafe(response, 'ops');
          // No funding has these ids: nothing can have been resolved.
          expect(response.status, response.body).toBeGreaterThanOrEqual(400);
        },
      ),
      runs(80),
    );
  });
});

describe('session URL', () => {
  const uniqueExpiry = (() => {
    let next = 0;
    return () => Math.floor(Date.now() / 1000) + 3600 + ++next;
  })();

  it('POST /embedded/session: hostile bodies get 400 { code, message } and store nothing', async () => {
    const token = (valid: string) =>
      fc.oneof(
        { weight: 3, arbitrary: fc.constant(valid) },
        { weight: 2, arbitrary: hostileText.map((tail) => `${valid}${tail}`) },
        { weight: 1, arbitrary: fc.constant(valid.split('.').slice(0, 3).join('.')) },
        { weight: 3, arbitrary: hostileValue },
      );
    const sessionBody = hostileObject({
      accessToken: token(sessionTokens.accessToken),
      refreshToken: token(sessionTokens.refreshToken),
      expiresAt: fc.oneof(
        fc.constant(sessionTokens.expiresAt),
        fc.constant(sessionTokens.expiresAt + 0.5),
        fc.constant(sessionTokens.expiresAt * 1000),
        fc.integer(),
        fc.constantFrom(...hugeNumbers),
        hostileValue,
      ),
    });
    await fc.assert(
      fc.asyncProperty(bodyRequest(jsonBody(sessionBody)), async (request) => {
        const reference = randomUUID();
        const response = await send({
          method: 'POST',
          target: '/embedded/session',
          ...request,
          headers: [['Request-Reference-No', reference], ...request.headers],
        });
        expectSafe(response, 'session');
        const stored = await stack.database.embeddedSession.count({ where: { requestReferenceNo: reference } });
        expect(stored, response.body).toBe(response.status === 200 ? 1 : 0);
      }),
      runs(100),
    );
  });

  it('POST /embedded/session: hostile Request-Reference-No bytes store nothing', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(hostileHeaderValue, { minLength: 1, maxLength: 2 }), async (references) => {
        const expiresAt = uniqueExpiry();
        const response = await send({
          method: 'POST',
          target: '/embedded/session',
          headers: [
            ['Content-Type', 'application/json'],
            ...references.map((reference): [string, Buffer] => ['Request-Reference-No', reference]),
          ],
          body: JSON.stringify({ ...sessionTokens, expiresAt }),
        });
        expectSafe(response, 'session');
        const stored = await stack.database.embeddedSession.count({
          where: { accessTokenExpiresAt: new Date(expiresAt * 1000) },
        });
        expect(stored, response.body).toBe(response.status === 200 ? 1 : 0);
      }),
      runs(60),
    );
  });
});

describe('landing page', () => {
  it('GET /app?sessionId=…: hostile ids get a page, never consume another id', async () => {
    const mutated = fc
      .constantFrom(
        `${pendingSessionId} `,
        ` ${pendingSessionId}`,
        pendingSessionId.toUpperCase(),
        `${pendingSessionId}%00`,
        `${pendingSessionId}%E2%80%AE`,
        `${pendingSessionId}&sessionId=${pendingSessionId}`,
        // One character off (never the same id).
        `${pendingSessionId.slice(0, -1)}${pendingSessionId.endsWith('0') ? '1' : '0'}`,
        `${pendingSessionId}x`,
        `{${pendingSessionId}}`,
      )
      .filter((id) => id !== pendingSessionId);
    const query = fc.oneof(
      {
        weight: 2,
        arbitrary: mutated.map(
          (id) => `sessionId=${id.replaceAll(' ', '%20').replaceAll('{', '%7B').replaceAll('}', '%7D')}`,
        ),
      },
      { weight: 4, arbitrary: queryString(['sessionId'], fc.oneof(fc.uuid(), hostileText)) },
    );
    await fc.assert(
      fc.asyncProperty(query, fc.option(hostileHeaderValue, { freq: 3 }), async (search, cookie) => {
        const response = await send({
          method: 'GET',
          target: `/app?${search}`,
          headers: cookie ? [['Cookie', cookie]] : [],
        });
        expectSafe(response, 'page');
        // 200 only for the id that was launched, which no look-alike names.
        expect(response.status, response.body).not.toBe(200);
        expect(response.headers['set-cookie']).toBeUndefined();
      }),
      runs(80),
    );
    // The pending id was never consumed by a look-alike.
    const real = await fetch(`${stack.apiBase}/app?sessionId=${pendingSessionId}`, { redirect: 'manual' });
    expect(real.status).toBe(200);
  });

  it('HEAD /app?sessionId=… (a link preview, a prefetch) does not use up the id', async () => {
    const sessionId = await launch((await stack.admin.createUser({ kycLevel: 'KYC1' })).userId);
    const head = await send({ method: 'HEAD', target: `/app?sessionId=${sessionId}` });
    expect(head.status).toBe(405);
    expect(head.headers.allow).toBe('GET');
    const get = await fetch(`${stack.apiBase}/app?sessionId=${sessionId}`, { redirect: 'manual' });
    expect(get.status).toBe(200);
  });

  it('POST /app/withdraw and /app/deposit: hostile forms get a page and store nothing unless accepted', async () => {
    const field = (name: string, value: fc.Arbitrary<string>) => value.map((item) => `${name}=${percentEncode(item)}`);
    const pairs = fc.array(
      fc.oneof(
        { weight: 3, arbitrary: field('csrf', fc.oneof(fc.constant(landed.csrf), hostileText)) },
        { weight: 3, arbitrary: field('formKey', fc.oneof(fc.uuid(), hostileText)) },
        { weight: 3, arbitrary: field('amount', fc.oneof(fc.constantFrom(...amountValues), hostileText)) },
        {
          weight: 1,
          arbitrary: fc
            .tuple(fc.constantFrom(...hostileKeys, 'csrf[]', 'amount[x]'), hostileText)
            .map(([name, value]) => `${percentEncode(name)}=${percentEncode(value)}`),
        },
        {
          weight: 1,
          arbitrary: fc
            .tuple(fc.constantFrom('csrf', 'formKey', 'amount'), brokenPercent)
            .map(([name, value]) => `${name}=${value}`),
        },
      ),
      { maxLength: 14 },
    );
    const form = fc.oneof(
      { weight: 8, arbitrary: pairs.map((list) => list.join('&')) },
      { weight: 1, arbitrary: fc.integer({ min: 4097, max: 40_000 }).map((size) => `amount=${'9'.repeat(size)}`) },
      { weight: 1, arbitrary: fc.uint8Array({ maxLength: 64 }).map((bytes) => Buffer.from(bytes).toString('latin1')) },
    );
    const contentType = fc.constantFrom(
      'application/x-www-form-urlencoded',
      'application/x-www-form-urlencoded',
      'application/x-www-form-urlencoded',
      'application/x-www-form-urlencoded; charset=latin1',
      'application/json',
      'multipart/form-data; boundary=x',
      'text/plain',
    );
    const countOwn = async () =>
      (await stack.database.funding.count({ where: { idempotencyKey: { startsWith: landed.prefix } } })) +
      (await stack.database.payment.count({ where: { idempotencyKey: { startsWith: landed.prefix } } }));
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('/app/withdraw', '/app/deposit'),
        form,
        contentType,
        fc.boolean(),
        async (path, body, type, withCookie) => {
          const before = await countOwn();
          const response = await send({
            method: 'POST',
            target: path,
            headers: [['Content-Type', type], ...(withCookie ? [['Cookie', landed.cookie] as [string, string]] : [])],
            body: Buffer.from(body, 'latin1'),
          });
          expectSafe(response, 'page');
          const after = await countOwn();
          expect(after - before, response.body.slice(0, 300)).toBeLessThanOrEqual(response.status === 303 ? 1 : 0);
        },
      ),
      runs(100),
    );
  });

  it('GET /app/activity: hostile cookies and queries get JSON, and only the web session’s own activity', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(fc.constant(Buffer.from(landed.cookie)), hostileHeaderValue),
        queryString(
          ['linkId', 'partnerUserId', 'limit', 'cursor'],
          fc.oneof(fc.constant(linkId), fc.uuid(), hostileText),
        ),
        async (cookie, query) => {
          const response = await send({
            method: 'GET',
            target: `/app/activity${query ? `?${query}` : ''}`,
            headers: [['Cookie', cookie]],
          });
          expectSafe(response, 'page-json');
          if (response.status === 200) {
            // The landed session's own activity, whatever the query names: never the other link's.
            const activity = JSON.parse(response.body) as { available: string; items: Array<{ id: string }> };
            expect(activity, response.body).toEqual({
              available: expect.stringMatching(/^-?\d+\.\d{2,3}$/),
              items: expect.any(Array),
            });
            const ids = activity.items.map((item) => item.id);
            expect(await stack.database.funding.count({ where: { id: { in: ids }, linkId } })).toBe(0);
            expect(await stack.database.payment.count({ where: { id: { in: ids }, linkId } })).toBe(0);
          }
        },
      ),
      runs(60),
    );
  });

  it('GET /app/withdrawals/{id}, /app/deposits/{id} and their status: hostile ids and cookies', async () => {
    const target = fc.tuple(fc.constantFrom('/app/withdrawals/', '/app/deposits/'), pathSegment, fc.boolean());
    await fc.assert(
      fc.asyncProperty(
        target,
        fc.oneof(fc.constant(Buffer.from(landed.cookie)), hostileHeaderValue),
        async ([base, id, status], cookie) => {
          const response = await send({
            method: 'GET',
            target: `${base}${id}${status ? '/status' : ''}`,
            headers: [['Cookie', cookie]],
          });
          expectSafe(response, status ? 'page-json' : 'page');
        },
      ),
      runs(60),
    );
  });
});

describe('hostile profile', () => {
  /** Launches a sandbox user with this profile and opens the landing page until onboarding is done. */
  async function landingOf(profile: Record<string, unknown>): Promise<{ html: string; firstName: string | null }> {
    const user = await stack.admin.createUser({ kycLevel: 'KYC1', balance: '10.00', profile });
    const sessionId = await launch(user.userId);
    const first = await fetch(`${stack.apiBase}/app?sessionId=${sessionId}`, { redirect: 'manual' });
    let html = await first.text();
    expect(first.status, html.slice(0, 400)).toBe(200);
    const cookie = first.headers.getSetCookie()[0]!.split(';')[0]!;
    for (let attempt = 0; html.includes('Opening your account') && attempt < 40; attempt += 1) {
      await new Promise((resolve) => setTimeout(resolve, 250));
      const again = await fetch(`${stack.apiBase}/app`, { headers: { cookie }, redirect: 'manual' });
      html = await again.text();
    }
    const row = await stack.database.appSession.findUniqueOrThrow({
      where: { cookieHash: hashBearer(cookie.split('=')[1]!) },
      include: { embeddedSession: true },
    });
    expectSafe(
      {
        status: 200,
        headers: {
          'content-type': 'text/html',
          'x-content-type-options': 'nosniff',
          'content-security-policy': "default-src 'none'",
        },
        body: html,
      } as unknown as RawResponse,
      'page',
    );
    return { html, firstName: row.embeddedSession.firstName };
  }

  const greetingOf = (html: string) => /<h1 id="greeting">([^<]*)<\/h1>/.exec(html)?.[1];

  it('a first name with markup renders escaped on the landing page', async () => {
    const markup = '<img src=x onerror=alert(1)>';
    const { html } = await landingOf({ name: { firstName: markup } });
    expect(greetingOf(html)).toBe('Hello, &lt;img src=x onerror=alert(1)&gt;');
    expect(html).not.toContain('<img');
    expect(html).not.toContain('onerror=alert(1)>');
  });

  it('a huge first name (100 KB) renders bounded: at most 100 whole characters, no broken one', async () => {
    // An emoji (two UTF-16 units) straddles the 100th unit: a cut by units would leave half of it.
    const firstName = `${'A'.repeat(99)}😀${'<b>x</b>'.repeat(12_800)}`;
    // (The whole profile is bounded too: wallet/profile.ts refuses one over 256 KiB.)
    const { html, firstName: stored } = await landingOf({ name: { firstName } });
    expect(firstName.length).toBeGreaterThan(100_000);
    expect(stored).toBe(`${'A'.repeat(99)}😀`);
    expect(greetingOf(html)).toBe(`Hello, ${'A'.repeat(99)}😀`);
    expect(html).not.toContain('\ufffd');
    expect(html).not.toContain('&lt;b&gt;');
    expect(html.length).toBeLessThan(40_000);
  });
});

describe('connect', () => {
  it('GET /connect/start: hostile queries (no login token of ours) get a 400 page and store no login state', async () => {
    const before = await stack.database.loginState.count();
    await fc.assert(
      fc.asyncProperty(
        fc.option(hostileText, { freq: 3, nil: undefined }),
        fc.oneof(fc.constantFrom('09171234567', '+639171234567', '0917', '+'.repeat(20), '٠٩١٧١٢٣٤٥٦٧'), hostileText),
        queryString(['login', 'mobile', 'partnerUserId'], hostileText),
        async (partnerUserId, mobile, extra) => {
          const search = [
            partnerUserId === undefined ? '' : `partnerUserId=${percentEncode(partnerUserId)}`,
            `mobile=${percentEncode(mobile)}`,
            extra,
          ]
            .filter(Boolean)
            .join('&');
          const response = await send({ method: 'GET', target: `/connect/start?${search}` });
          expectSafe(response, 'page');
          expect(response.status, response.body.slice(0, 300)).toBe(400);
        },
      ),
      runs(80),
    );
    expect(await stack.database.loginState.count()).toBe(before);
  });

  it('POST /ops/links/login-urls: hostile bodies get a 400 problem and mint nothing', async () => {
    const before = await stack.database.loginGrant.count();
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.record(
            { partnerUserId: hostileText, mobile: fc.option(hostileText, { nil: undefined }) },
            { requiredKeys: [] },
          ),
          fc.record({ partnerUserId: fc.constant('ok-user'), mobile: hostileText, extra: hostileText }),
          hostileText,
        ),
        async (body) => {
          const response = await ops({
            method: 'POST',
            target: '/ops/links/login-urls',
            headers: [['Content-Type', 'application/json']],
            body: JSON.stringify(body),
          });
          expectSafe(response, 'ops');
          expect(response.status, response.body.slice(0, 300)).toBeLessThan(500);
          if (response.status === 201)
            expect(JSON.parse(response.body)).toMatchObject({ url: expect.stringContaining('/connect/start?login=') });
        },
      ),
      runs(60),
    );
    // Only bodies that are a valid request minted a URL, each exactly one.
    expect(await stack.database.loginGrant.count()).toBeGreaterThanOrEqual(before);
  });

  it('POST /ops/links/login-urls without PUBLIC_URL: a Host header that names no URL gets a 400 problem and mints nothing', async () => {
    const before = await stack.database.loginGrant.count();
    for (const host of ['localhost:99999', 'a:b:c']) {
      const response = await ops({
        method: 'POST',
        target: '/ops/links/login-urls',
        headers: [['Content-Type', 'application/json']],
        body: JSON.stringify({ partnerUserId: 'host-user' }),
        host,
      });
      // Before: 500, a grant minted that no one received.
      expectSafe(response, 'ops');
      expect(response.status, `${host}: ${response.body.slice(0, 300)}`).toBe(400);
    }
    expect(await stack.database.loginGrant.count()).toBe(before);
  });

  it('GET /connect/callback: hostile queries get a page and never consume a pending login', async () => {
    const state = fc.oneof(
      fc.constantFrom(
        `${pendingLogin.state}x`,
        `${pendingLogin.state} `,
        pendingLogin.state.slice(1),
        pendingLogin.state.toUpperCase(),
      ),
      fc.base64String({ minLength: 4, maxLength: 64 }),
      hostileText,
    );
    const query = fc.tuple(
      fc.option(state, { freq: 5, nil: undefined }),
      queryString(['code', 'error', 'error_description', 'userId', 'profileId', 'state'], hostileText),
    );
    await fc.assert(
      fc.asyncProperty(query, async ([stateValue, rest]) => {
        const search = [
          stateValue === undefined || stateValue === pendingLogin.state ? '' : `state=${percentEncode(stateValue)}`,
          rest,
        ]
          .filter(Boolean)
          .join('&');
        // The pending login's own cookie: a hostile query from the browser that started it.
        const response = await send({
          method: 'GET',
          target: `/connect/callback?${search}`,
          headers: [['Cookie', pendingLogin.cookie]],
        });
        expectSafe(response, 'page');
        expect(response.status, response.body.slice(0, 300)).toBe(400);
      }),
      runs(80),
    );
    const login = await stack.database.loginState.findFirstOrThrow({
      where: { partnerUserId: pendingLogin.partnerUserId },
    });
    expect(login.consumedAt).toBeNull();
    expect(
      await stack.database.linkEvent.count({
        where: { partnerUserId: pendingLogin.partnerUserId, type: { not: 'LOGIN_URL_MINTED' } },
      }),
    ).toBe(0);
  });

  it('a real login whose callback carries hostile userId or profileId never links with them and never fails with 5xx', async () => {
    for (const hostile of ['\u0000', '\u202e0917*****67', '\ud800', 'x'.repeat(64)]) {
      const user = await stack.admin.createUser({ password: 'pw-hostile' });
      const started = await stack.startLogin(`hostile-real-${randomUUID()}`, user.mobile);
      const params = await loginThroughPages(stack.sandbox, started.location.toString(), 'pw-hostile');
      params.set('userId', hostile);
      const response = await send({
        method: 'GET',
        target: `/connect/callback?${[...params].map(([name, value]) => `${name}=${percentEncode(value)}`).join('&')}`,
        headers: [['Cookie', started.cookie]],
      });
      expectSafe(response, 'page');
      const links = await stack.database.link.findMany({ where: { profileId: user.profileId } });
      for (const link of links) {
        expect(link.maskedUserId ?? '').not.toMatch(/[\u202e\ud800-\udfff\ufffd]/);
        expect(link.maskedUserId ?? '').not.toContain('\u0000');
      }
    }
  });
});

describe('every family answers unknown paths and methods in its own style', () => {
  it('methods × paths', async () => {
    const paths: Array<[string, Family]> = [
      ['/app', 'page'],
      ['/app/nothing-here', 'page'],
      ['/app/withdraw', 'page'],
      ['/connect/start', 'page'],
      ['/connect/callback', 'page'],
      ['/connect/elsewhere', 'page'],
      ['/embedded/session', 'session'],
      ['/embedded/elsewhere', 'session'],
      ['/ops/fundings', 'ops'],
      ['/ops/nothing-here', 'ops'],
      ['/nothing-here', 'ops'],
    ];
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'TRACE', 'PROPFIND'),
        fc.constantFrom(...paths),
        async (method, [path, family]) => {
          const response = await (family === 'ops' ? ops : send)({
            method,
            target: path,
            headers: [['Content-Type', 'application/json']],
            body: '{}',
          });
          expectSafe(response, family);
        },
      ),
      runs(60),
    );
  });
});

describe('ops API authorization', () => {
  it('hostile Authorization headers get 401 (then 429) problems, never 5xx', async () => {
    const authorization = fc.oneof(
      hostileHeaderValue,
      hostileHeaderValue.map((value) => Buffer.concat([Buffer.from('Bearer '), value])),
      fc
        .constantFrom('Bearer', 'Bearer ', 'Basic YTpi', `bearer ${'k'.repeat(600)}`)
        .map((value) => Buffer.from(value)),
    );
    await fc.assert(
      fc.asyncProperty(
        authorization,
        fc.constantFrom('/ops/fundings', '/ops/payments?status=NEEDS_REVIEW', `/ops/links/${randomUUID()}`),
        async (value, target) => {
          // From an address of its own: failed attempts are limited per address.
          const response = await rawHttp(stack.apiBase, {
            method: 'GET',
            target,
            headers: [['Authorization', value]],
            localAddress: '127.0.0.3',
          });
          expectSafe(response, 'ops');
          if (!refusedByParser(response)) expect([401, 429]).toContain(response.status);
        },
      ),
      runs(30),
    );
  });
});
