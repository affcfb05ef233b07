// Checks a presented ops key against OPS_API_KEYS for whoever asks with one: the ops API's bearer
// (ops-auth.ts) and the console's sign-in with a key (api/console/). Keys are compared as SHA-256
// digests in constant time, every one of them, so the time taken says nothing of which matched.
// Wrong keys are guesses and are limited per client address (IPv6 by its /64): past `maxFailures`
// within the window that address's wrong keys are refused with the wait left. A valid key is never
// locked out (one client behind a shared proxy or carrier NAT must not lock out ops). One guard per
// process, shared by both doors, so a guesser cannot double its tries by using the other. A
// console session signed in with a key keeps the key's fingerprint (an HMAC under the fingerprint
// key, the same in every process), by which the guard finds the key again.
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { parseOpsKeys, type OpsKey } from '../../lib/ops-keys.ts';
import { rateKeyOf } from '../http/rate-limit.ts';

export interface OpsKeyGuardOptions {
  /** OpsKeys, or OPS_API_KEYS entries (`name:scopes:key` or a bare key). */
  keys: readonly (string | OpsKey)[];
  /** IDEMPOTENCY_FINGERPRINT_KEY: what a key's fingerprint is keyed with (the same in every process). */
  fingerprintKey: Buffer;
  /** Wrong keys allowed per address within `windowMs` before refusing; absent: 20. */
  maxFailures?: number;
  windowMs?: number;
  now?: () => number;
  /**
   * Addresses whose wrong keys are counted at once; past it the oldest are forgotten
   * (rotating IPv6 /64s within one window grew the map without bound). Absent: 10,000.
   */
  maxTrackedAddresses?: number;
}

export type KeyCheck = { kind: 'accepted'; key: OpsKey } | { kind: 'wrong' } | { kind: 'limited'; waitMs: number };

export interface OpsKeyGuard {
  /** The key `presented` from `ip` (undefined: none was sent, which guesses nothing and is not counted). */
  check(ip: string | undefined, presented: string | undefined): KeyCheck;
  trackedAddresses(): number;
  /** What a console session signed in with `key` keeps of it: an HMAC, never the key. */
  fingerprintOf(key: OpsKey): string;
  /** The key of a fingerprint, if it is one of this walletflow's keys now. */
  keyOfFingerprint(fingerprint: string): OpsKey | undefined;
}

const digest = (value: string) => createHash('sha256').update(value, 'utf8').digest();

export function createOpsKeyGuard(options: OpsKeyGuardOptions): OpsKeyGuard {
  // Comparing fixed-length digests keeps the comparison constant-time whatever the lengths.
  const keys = parseOpsKeys(options.keys).map((key) => ({ key, digest: digest(key.key) }));
  const fingerprintOf = (key: OpsKey) => createHmac('sha256', options.fingerprintKey).update(`console-session-key\0${key.key}`, 'utf8').digest('hex');
  const byFingerprint = new Map(keys.map(({ key }) => [fingerprintOf(key), key]));
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

  return {
    check(ip, presented) {
      const address = rateKeyOf(ip);
      let accepted: OpsKey | undefined;
      if (presented !== undefined) {
        const presentedDigest = digest(presented);
        // Every key is compared, so the time taken does not say which one matched.
        for (const candidate of keys) if (timingSafeEqual(presentedDigest, candidate.digest) && !accepted) accepted = candidate.key;
      }
      if (accepted) return { kind: 'accepted', key: accepted };
      const waitMs = blockedFor(address);
      if (waitMs > 0) return { kind: 'limited', waitMs };
      if (presented !== undefined) recordFailure(address);
      return { kind: 'wrong' };
    },
    trackedAddresses: () => failures.size,
    fingerprintOf,
    keyOfFingerprint: (fingerprint) => byFingerprint.get(fingerprint),
  };
}
