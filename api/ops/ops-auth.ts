// Authentication of the ops API: `Authorization: Bearer <key>` against OPS_API_KEYS, compared in
// constant time; each key has a name (what audits record) and scopes. The scope a route needs is
// checked by the route itself, registered with it from its declaration (api/http/route-registration.ts):
// this only says who is asking (api/http/actor.ts). Wrong keys are guesses and are limited per client address (IPv6 by its /64): past `maxFailures` within the
// window that address's wrong keys get 429 with Retry-After. A valid key is never locked out (one client behind a shared
// proxy or carrier NAT must not lock out ops), and a request without a key guesses nothing: 401,
// not counted.
import { createHash, timingSafeEqual } from 'node:crypto';
import type { RequestHandler } from 'express';
import { parseOpsKeys, type OpsKey } from '../../lib/ops-keys.ts';
import { sendProblem } from '../http/problem.ts';
import { rateKeyOf } from '../http/rate-limit.ts';
import { rememberOpsKey } from './ops-key.ts';

export interface OpsAuthOptions {
  /** OpsKeys, or OPS_API_KEYS entries (`name:scopes:key` or a bare key). */
  keys: readonly (string | OpsKey)[];
  /** Wrong keys allowed per address within `windowMs` before answering 429; absent: 20. */
  maxFailures?: number;
  windowMs?: number;
  now?: () => number;
  /**
   * Addresses whose wrong keys are counted at once; past it the oldest are forgotten
   * (rotating IPv6 /64s within one window grew the map without bound). Absent: 10,000.
   */
  maxTrackedAddresses?: number;
}

const digest = (value: string) => createHash('sha256').update(value, 'utf8').digest();

export function opsAuth(options: OpsAuthOptions): RequestHandler & { trackedAddresses(): number } {
  // Comparing fixed-length digests keeps the comparison constant-time whatever the lengths.
  const keys = parseOpsKeys(options.keys).map((key) => ({ key, digest: digest(key.key) }));
  const maxFailures = options.maxFailures ?? 20;
  const windowMs = options.windowMs ?? 60_000;
  const now = options.now ?? Date.now;
  const failures = new Map<string, { count: number; since: number }>();
  const maxTracked = options.maxTrackedAddresses ?? 10_000;

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
    if (failures.size > maxTracked) {
      for (const [key, value] of failures) if (now() - value.since >= windowMs) failures.delete(key);
      // Still too many within one window: the oldest go (a Map iterates in insertion order).
      for (const key of failures.keys()) {
        if (failures.size <= maxTracked) break;
        failures.delete(key);
      }
    }
  };

  const handler: RequestHandler = (req, res, next) => {
    const address = rateKeyOf(req.ip);
    const header = req.get('authorization') ?? '';
    // The scheme name is case-insensitive (RFC 9110 section 11.1).
    const match = /^Bearer +([\x21-\x7e]{1,512})$/i.exec(header);
    let accepted: OpsKey | undefined;
    if (match?.[1]) {
      const presented = digest(match[1]);
      // Every key is compared, so the time taken does not say which one matched.
      for (const candidate of keys) if (timingSafeEqual(presented, candidate.digest) && !accepted) accepted = candidate.key;
    }
    if (!accepted) {
      const waitMs = blockedFor(address);
      if (waitMs > 0) {
        res.setHeader('Retry-After', String(Math.ceil(waitMs / 1000)));
        sendProblem(res, { status: 429, code: 'TOO_MANY_FAILED_ATTEMPTS', title: 'Too Many Requests', detail: 'too many requests with a wrong ops API key; wait and retry' });
        return;
      }
      if (match) recordFailure(address);
      res.setHeader('WWW-Authenticate', 'Bearer realm="walletflow-ops"');
      sendProblem(res, {
        status: 401,
        code: 'UNAUTHORIZED',
        title: 'Unauthorized',
        detail: match ? 'the ops API key is not valid' : 'send Authorization: Bearer <ops API key>',
      });
      return;
    }
    // Who did it, for audits: the key's name, never the key.
    rememberOpsKey(res.locals, accepted);
    next();
  };
  return Object.assign(handler, { trackedAddresses: () => failures.size });
}
