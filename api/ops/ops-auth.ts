// Authentication of the ops API: `Authorization: Bearer <key>` against OPS_API_KEYS, compared in
// constant time. Wrong keys are guesses and are limited per client address: past `maxFailures`
// within the window every request from that address gets 429 with Retry-After, a right key too
// (otherwise the limit would still answer guesses). A request that presents no bearer key guesses
// nothing: it gets 401 and does not count.
import { createHash, timingSafeEqual } from 'node:crypto';
import type { RequestHandler } from 'express';
import { sendProblem } from '../http/problem.ts';

export interface OpsAuthOptions {
  keys: string[];
  /** Wrong keys allowed per address within `windowMs` before answering 429; absent: 20. */
  maxFailures?: number;
  windowMs?: number;
  now?: () => number;
}

const digest = (value: string) => createHash('sha256').update(value, 'utf8').digest();

export function opsAuth(options: OpsAuthOptions): RequestHandler {
  // Comparing fixed-length digests keeps the comparison constant-time whatever the lengths.
  const keyDigests = options.keys.map(digest);
  const maxFailures = options.maxFailures ?? 20;
  const windowMs = options.windowMs ?? 60_000;
  const now = options.now ?? Date.now;
  const failures = new Map<string, { count: number; since: number }>();

  const blockedFor = (address: string): number => {
    const entry = failures.get(address);
    if (!entry) return 0;
    const elapsed = now() - entry.since;
    if (elapsed >= windowMs) {
      failures.delete(address);
      return 0;
    }
    return entry.count >= maxFailures ? windowMs - elapsed : 0;
  };
  const recordFailure = (address: string) => {
    const entry = failures.get(address);
    if (!entry || now() - entry.since >= windowMs) failures.set(address, { count: 1, since: now() });
    else entry.count += 1;
    if (failures.size > 10_000) {
      for (const [key, value] of failures) if (now() - value.since >= windowMs) failures.delete(key);
    }
  };

  return (req, res, next) => {
    const address = req.ip ?? 'unknown';
    const waitMs = blockedFor(address);
    if (waitMs > 0) {
      res.setHeader('Retry-After', String(Math.ceil(waitMs / 1000)));
      sendProblem(res, { status: 429, code: 'TOO_MANY_FAILED_ATTEMPTS', title: 'Too Many Requests', detail: 'too many requests with a wrong ops API key; wait and retry' });
      return;
    }
    const header = req.get('authorization') ?? '';
    // The scheme name is case-insensitive (RFC 9110 section 11.1).
    const match = /^Bearer +([\x21-\x7e]{1,512})$/i.exec(header);
    let accepted = false;
    let presented: Buffer | undefined;
    if (match?.[1]) {
      presented = digest(match[1]);
      for (const key of keyDigests) accepted = timingSafeEqual(presented, key) || accepted;
    }
    if (!accepted) {
      if (presented) recordFailure(address);
      res.setHeader('WWW-Authenticate', 'Bearer realm="walletflow-ops"');
      sendProblem(res, {
        status: 401,
        code: 'UNAUTHORIZED',
        title: 'Unauthorized',
        detail: presented ? 'the ops API key is not valid' : 'send Authorization: Bearer <ops API key>',
      });
      return;
    }
    // Who did it, for audits (e.g. a payment resolution), without the key itself.
    res.locals.opsActor = `ops-key:${presented!.toString('hex').slice(0, 12)}`;
    next();
  };
}
