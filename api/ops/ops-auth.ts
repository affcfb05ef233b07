// Authentication and scopes of the ops API: `Authorization: Bearer <key>` against OPS_API_KEYS,
// compared in constant time; each key has a name (what audits record) and scopes, and each route
// needs the one scope it declares (opsRouteScopes): without it 403 SCOPE_REQUIRED. Wrong keys are
// guesses and are limited per client address (IPv6 by its /64): past `maxFailures` within the
// window that address's wrong keys get 429 with Retry-After. A valid key is never locked out (one client behind a shared
// proxy or carrier NAT must not lock out ops), and a request without a key guesses nothing: 401,
// not counted.
import { createHash, timingSafeEqual } from 'node:crypto';
import type { RequestHandler } from 'express';
import { parseOpsKeys, type OpsKey, type OpsScope } from '../../lib/ops-keys.ts';
import { sendProblem } from '../http/problem.ts';
import { rateKeyOf } from '../http/rate-limit.ts';
import { rememberOpsKey } from './ops-key.ts';
import { opsRoutes } from './ops-routes.ts';

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

/** `/fundings/{fundingId}` as the pattern of the paths it names (a parameter is one segment). */
function templatePattern(template: string): RegExp {
  const literals = template.split(/\{[^}]+\}/).map((part) => part.replace(/[.*+?^$()|[\]\\]/g, '\\$&'));
  return new RegExp(`^${literals.join('[^/]+')}$`);
}

/**
 * The scope each ops route needs, by method and path under /ops, as each route declares it next to
 * its handler (ops-routes.ts). A request that no route takes needs `admin` (test/unit/ops-auth.test.ts
 * checks that every route of the app is listed).
 */
export const opsRouteScopes: ReadonlyArray<{ method: string; path: RegExp; scope: OpsScope }> = opsRoutes.map((route) => {
  if (typeof route.access !== 'object' || !('opsScope' in route.access)) throw new Error(`ops route ${route.operationId} declares no scope`);
  return { method: route.method.toUpperCase(), path: templatePattern(route.path.slice('/ops'.length)), scope: route.access.opsScope };
});

/** The scope a request to `path` (under /ops) needs. */
export function scopeFor(method: string, path: string): OpsScope {
  const normalized = path.length > 1 ? path.replace(/\/+$/, '') : path;
  const verb = method === 'HEAD' ? 'GET' : method;
  return opsRouteScopes.find((route) => route.method === verb && route.path.test(normalized))?.scope ?? 'admin';
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
    const scope = scopeFor(req.method, req.path);
    if (!accepted.scopes.has(scope)) {
      sendProblem(res, {
        status: 403,
        code: 'SCOPE_REQUIRED',
        title: 'Forbidden',
        detail: `the ops API key ${accepted.name} lacks the scope ${scope} that ${req.method} /ops${req.path} needs`,
      });
      return;
    }
    // Who did it, for audits: the key's name, never the key.
    rememberOpsKey(res.locals, accepted);
    next();
  };
  return Object.assign(handler, { trackedAddresses: () => failures.size });
}
