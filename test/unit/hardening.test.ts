// The pieces of the API's hardening that need no server: the sliding-window rate limiter and its
// address keys, the mapping of unreadable requests to 4xx, and forged list cursors.
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { clientErrorOf } from '../../api/http/client-errors.ts';
import { decodeCursor, encodeCursor, listDateSchema } from '../../lib/page-cursor.ts';
import { createRateLimiter, rateKeyOf } from '../../api/http/rate-limit.ts';

describe('rate limiter', () => {
  it('allows the limit within a window, then refuses with a Retry-After within the window', () => {
    let now = 1_000_000;
    const limiter = createRateLimiter({ limit: 3, windowMs: 60_000, now: () => now });
    expect([1, 2, 3].map(() => limiter.take('198.51.100.1').allowed)).toEqual([true, true, true]);
    const refused = limiter.take('198.51.100.1');
    expect(refused).toEqual({ allowed: false, retryAfterSeconds: 60 });
    now += 59_000;
    expect(limiter.take('198.51.100.1')).toEqual({ allowed: false, retryAfterSeconds: 1 });
    // Refusals are not counted: the client is not punished for asking.
    expect(limiter.take('198.51.100.2').allowed).toBe(true);
  });

  it('slides: the previous window still counts by its overlap, so no double burst at a boundary', () => {
    let now = 0;
    const limiter = createRateLimiter({ limit: 10, windowMs: 60_000, now: () => now });
    // The window starts at the address's first request; nine more arrive at its very end.
    expect(limiter.take('a').allowed).toBe(true);
    now = 59_000;
    for (let i = 0; i < 9; i += 1) expect(limiter.take('a').allowed).toBe(true);
    // Just past the boundary, nearly all of the previous window overlaps the last minute: the
    // client waits until enough of it has faded (1/60 of 10 per second: 5 s for 0.83 requests).
    now = 61_000;
    expect(limiter.take('a')).toEqual({ allowed: false, retryAfterSeconds: 5 });
    // Half a window later, half of the previous count has faded: five more fit.
    now = 90_000;
    const allowed = Array.from({ length: 6 }, () => limiter.take('a').allowed);
    expect(allowed).toEqual([true, true, true, true, true, false]);
    // Two windows later, the slate is clean.
    now = 200_000;
    expect(Array.from({ length: 10 }, () => limiter.take('a').allowed).every(Boolean)).toBe(true);
  });

  it('keeps its memory bounded under a flood of distinct addresses', () => {
    let now = 0;
    const limiter = createRateLimiter({ limit: 1, windowMs: 1000, maxAddresses: 100, now: () => now });
    for (let i = 0; i < 10_000; i += 1) {
      now += 1;
      expect(limiter.take(`10.0.${Math.floor(i / 256)}.${i % 256}`).allowed).toBe(true);
    }
    // The most recent addresses are still counted.
    expect(limiter.take('10.0.39.15').allowed).toBe(false);
  });

  it('keys IPv4 as is, IPv4-mapped IPv6 as IPv4, and IPv6 by its /64', () => {
    expect(rateKeyOf('198.51.100.7')).toBe('198.51.100.7');
    expect(rateKeyOf('::ffff:198.51.100.7')).toBe('198.51.100.7');
    expect(rateKeyOf('2001:db8:1:2::1')).toBe('2001:db8:1:2::/64');
    expect(rateKeyOf('2001:0db8:0001:0002:ffff:ffff:ffff:ffff')).toBe('2001:db8:1:2::/64');
    expect(rateKeyOf('2001:db8::1')).toBe('2001:db8:0:0::/64');
    expect(rateKeyOf('::1')).toBe('0:0:0:0::/64');
    expect(rateKeyOf(undefined)).toBe('unknown');
  });

  it('keys what is no address (a forwarded header a trusted proxy passed on as sent) by a short digest, never the text', () => {
    // Found by a read: the text was the key, and a wrong key from such a client was counted under a subject longer
    // than its column (varchar 64): PostgreSQL refused the insert (22001), and the wrong key was answered 500, not 401.
    const sent = `not-an-address-${'x'.repeat(70)}`;
    const key = rateKeyOf(sent);
    expect(key.length).toBeLessThanOrEqual(64);
    expect(key).not.toContain('xxxx');
    expect(rateKeyOf(sent)).toBe(key);
    expect(rateKeyOf(`${sent}y`)).not.toBe(key);
    expect(rateKeyOf('unknown')).toMatch(/^not-an-address:/);
  });

  it('keys an IPv4-mapped IPv6 address as its IPv4 address in every spelling, never in one bucket shared by every IPv4 client', () => {
    for (const spelling of [
      '::ffff:198.51.100.7',
      '::FFFF:198.51.100.7',
      '::ffff:c633:6407',
      '::FFFF:C633:6407',
      '0:0:0:0:0:ffff:198.51.100.7',
      '0000:0000:0000:0000:0000:ffff:c633:6407',
      '::0:ffff:198.51.100.7',
    ]) {
      expect(rateKeyOf(spelling), spelling).toBe('198.51.100.7');
    }
    expect(rateKeyOf('::ffff:c633:6408')).toBe('198.51.100.8');
    // Not mapped: IPv6 by the /64, as any other.
    expect(rateKeyOf('::fffe:c633:6407')).toBe('0:0:0:0::/64');
    expect(rateKeyOf('fe80::1%eth0')).toBe('fe80:0:0:0::/64');
  });
});

describe('unreadable requests', () => {
  it('map to the client error they are, never to a 500', () => {
    expect(clientErrorOf({ type: 'entity.too.large', limit: 16384 })).toEqual({
      status: 413,
      code: 'BODY_TOO_LARGE',
      message: 'the body must be at most 16384 bytes',
    });
    expect(clientErrorOf({ type: 'parameters.too.many' })?.status).toBe(413);
    expect(clientErrorOf({ type: 'entity.parse.failed', status: 400 })?.code).toBe('MALFORMED_JSON');
    expect(clientErrorOf({ type: 'charset.unsupported', status: 415 })).toMatchObject({
      status: 415,
      code: 'UNSUPPORTED_CHARSET',
    });
    expect(clientErrorOf({ type: 'encoding.unsupported', status: 415 })).toMatchObject({
      status: 415,
      code: 'UNSUPPORTED_CONTENT_ENCODING',
    });
    expect(
      clientErrorOf(Object.assign(new Error('incorrect header check'), { code: 'Z_DATA_ERROR', status: 400 }))?.code,
    ).toBe('MALFORMED_BODY');
    expect(clientErrorOf(Object.assign(new URIError('Failed to decode param'), { status: 400 }))).toMatchObject({
      status: 400,
      code: 'BAD_REQUEST',
    });
  });

  it('leave server faults alone', () => {
    expect(clientErrorOf(new Error('connection refused'))).toBeNull();
    expect(clientErrorOf(Object.assign(new Error('x'), { status: 503 }))).toBeNull();
    expect(clientErrorOf('a string')).toBeNull();
    expect(clientErrorOf(null)).toBeNull();
  });
});

describe('list date filters', () => {
  it('take ISO-8601 date-times between 1970 and 9999 only (PostgreSQL has no year 0)', () => {
    const from = listDateSchema('from');
    expect(from.safeParse('2025-03-01T10:00:00Z').success).toBe(true);
    expect(from.safeParse('9999-12-31T23:59:59+14:00').success).toBe(true);
    for (const value of [
      '0000-01-01T00:00:00Z',
      '1969-12-31T23:59:59Z',
      '9999-12-31T23:59:59-23:59',
      '2025-02-30T00:00:00Z',
      '2025-03-01',
    ]) {
      expect(from.safeParse(value).success, value).toBe(false);
    }
  });
});

describe('list cursors', () => {
  const id = '4b8f7a51-2f0e-4c7e-9a57-7d7f2a9a0b11';
  const forged = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

  it('round-trip', () => {
    const createdAt = new Date('2025-03-01T10:00:00.123Z');
    expect(decodeCursor(encodeCursor(createdAt, id))).toEqual({ createdAt, id });
  });

  it('refuse forged ones PostgreSQL could not compare with, or that are not ours at all', () => {
    for (const value of [
      ['-271821-04-20T00:00:00.000Z', id],
      ['+275760-09-13T00:00:00.000Z', id],
      ['1969-12-31T23:59:59.999Z', id],
      ['2025-03-01', id],
      [0, id],
      ['2025-03-01T10:00:00.123Z', 'x'],
      ['2025-03-01T10:00:00.123Z'],
      null,
      { a: 1 },
    ]) {
      expect(decodeCursor(forged(value)), JSON.stringify(value)).toBeNull();
    }
    expect(decodeCursor('not base64 at all!')).toBeNull();
    expect(decodeCursor(createHash('sha256').update('x').digest('base64url'))).toBeNull();
  });
});
