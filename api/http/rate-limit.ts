// In-process rate limits for the public routes: a sliding-window counter per client address (IPv6
// by its /64, which one subscriber usually holds whole); each route family answers 429 its own way.
import { createHash } from 'node:crypto';
import { isIP } from 'node:net';
import type { Request, RequestHandler, Response } from 'express';
import { htmlAnswer, retryAfterHeader } from './route-spec.ts';

export interface RateLimiterOptions {
  /** Requests allowed per address within one window. */
  limit: number;
  windowMs?: number;
  /** Addresses tracked at most; beyond it stale entries are swept, then the oldest dropped. */
  maxAddresses?: number;
  now?: () => number;
}

export type RateVerdict = { allowed: true } | { allowed: false; retryAfterSeconds: number };

export interface RateLimiter {
  take(address: string | undefined): RateVerdict;
}

/** An IPv6 address as its eight 16-bit groups (an embedded dotted IPv4 as the last two); null when it is none. */
function ipv6Groups(address: string): number[] | null {
  const bare = address.replace(/%.*$/s, '');
  if (isIP(bare) !== 6) return null;
  let text = bare.toLowerCase();
  const dotted = /^(.*:)(\d{1,3}(?:\.\d{1,3}){3})$/.exec(text);
  if (dotted) {
    const [a = 0, b = 0, c = 0, d = 0] = dotted[2]!.split('.').map(Number);
    text = `${dotted[1]}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head = '', tail] = text.split('::');
  const parse = (part: string) => (part === '' ? [] : part.split(':').map((group) => Number.parseInt(group, 16)));
  const headGroups = parse(head);
  const tailGroups = tail === undefined ? [] : parse(tail);
  const groups =
    tail === undefined
      ? headGroups
      : [...headGroups, ...Array<number>(8 - headGroups.length - tailGroups.length).fill(0), ...tailGroups];
  return groups.length === 8 && groups.every((group) => Number.isInteger(group) && group >= 0 && group <= 0xffff)
    ? groups
    : null;
}

/**
 * The key an address counts under: IPv4 as is; an IPv4-mapped IPv6 address (`::ffff:198.51.100.7`,
 * `::ffff:c633:6407`, written out in full or not) as its IPv4 address, so one client is one key
 * however the address reached us; any other IPv6 address by its first 64 bits.
 */
export function rateKeyOf(address: string | undefined): string {
  if (!address) return 'unknown';
  // What is no address (a forwarded header a trusted proxy passed on as sent) counts under a short digest of it: the
  // key is stored in columns of 64 characters (attempt counts, the audit) and must never be the caller's text.
  if (isIP(address) === 0)
    return `not-an-address:${createHash('sha256').update(address, 'utf8').digest('hex').slice(0, 32)}`;
  const groups = ipv6Groups(address);
  if (!groups) return address;
  if (groups.slice(0, 5).every((group) => group === 0) && groups[5] === 0xffff) {
    const [high = 0, low = 0] = groups.slice(6);
    return `${high >> 8}.${high & 0xff}.${low >> 8}.${low & 0xff}`;
  }
  return `${groups
    .slice(0, 4)
    .map((group) => group.toString(16))
    .join(':')}::/64`;
}

interface Window {
  start: number;
  current: number;
  previous: number;
}

/**
 * The sliding-window approximation: the previous window's count, weighted by how much of it still
 * overlaps the last `windowMs`, plus the current window's. No burst of twice the limit at a window
 * boundary, and one small record per address.
 */
export function createRateLimiter(options: RateLimiterOptions): RateLimiter {
  const windowMs = options.windowMs ?? 60_000;
  const maxAddresses = options.maxAddresses ?? 100_000;
  const now = options.now ?? Date.now;
  const windows = new Map<string, Window>();

  const roll = (entry: Window, at: number): void => {
    const elapsedWindows = Math.floor((at - entry.start) / windowMs);
    if (elapsedWindows <= 0) return;
    entry.previous = elapsedWindows === 1 ? entry.current : 0;
    entry.current = 0;
    entry.start += elapsedWindows * windowMs;
  };

  const sweep = (at: number): void => {
    for (const [key, entry] of windows) if (at - entry.start >= 2 * windowMs) windows.delete(key);
    // Still full (a flood of distinct addresses): forget the oldest; a Map iterates in insertion order.
    for (const key of windows.keys()) {
      if (windows.size < maxAddresses) break;
      windows.delete(key);
    }
  };

  return {
    take(address) {
      const at = now();
      const key = rateKeyOf(address);
      let entry = windows.get(key);
      if (!entry) {
        if (windows.size >= maxAddresses) sweep(at);
        entry = { start: at, current: 0, previous: 0 };
        windows.set(key, entry);
      }
      roll(entry, at);
      const overlap = 1 - (at - entry.start) / windowMs;
      const weighted = entry.previous * overlap + entry.current;
      if (weighted + 1 > options.limit) {
        // When the count falls under the limit again: the previous window's weight fades linearly,
        // and the current window's count leaves with the window.
        const excess = weighted + 1 - options.limit;
        const fadeMs =
          entry.previous > 0 && excess <= entry.previous * overlap
            ? (excess / entry.previous) * windowMs
            : entry.start + windowMs - at;
        return { allowed: false, retryAfterSeconds: Math.max(1, Math.ceil(fadeMs / 1000)) };
      }
      entry.current += 1;
      return { allowed: true };
    },
  };
}

/** A middleware that counts every request and lets `refuse` answer (Retry-After is already set). */
export function limitRequests(
  limiter: RateLimiter,
  refuse: (req: Request, res: Response, retryAfterSeconds: number) => void,
): RequestHandler {
  return (req, res, next) => {
    const verdict = limiter.take(req.ip);
    if (verdict.allowed) {
      next();
      return;
    }
    res.setHeader('Retry-After', String(verdict.retryAfterSeconds));
    refuse(req, res, verdict.retryAfterSeconds);
  };
}

/** The 429 page of the pages limited per address (the landing page's, the standalone login's), as routes declare it. */
export const rateLimitedPageAnswer = htmlAnswer('too many requests from this address (PUBLIC_RATE_LIMIT_PER_MINUTE)', {
  'Retry-After': retryAfterHeader,
});
