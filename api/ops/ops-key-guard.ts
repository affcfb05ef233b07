// Checks a presented ops key against OPS_API_KEYS for whoever asks with one: the ops API's bearer
// (ops-auth.ts) and the console's sign-in with a key (api/console/). Keys are compared as SHA-256
// digests in constant time, every one of them, so the time taken says nothing of which matched.
// Wrong keys are guesses and are limited per client address (IPv6 by its /64), counted in
// PostgreSQL (access/attempt-limits.ts) so that every API process and both doors count against
// one limit; past it that address's wrong keys are refused with the wait left. The same wrong key
// sent again guesses nothing new: each process counts it once a minute from an address (requests
// with it at the same moment share that one count), and answers the repeats 401, or 429 while it
// knows the address is held back: a client left with a rotated-out key, or one trying every route
// with a key it knows is wrong, is not locked out by its repeats. A valid key never
// touches the count and is never locked out (one client behind a shared proxy or carrier NAT must
// not lock out ops). A console session signed in with a key keeps the key's fingerprint (an HMAC
// under the fingerprint key, the same in every process), by which the guard finds the key again.
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { AttemptLimiter } from '../../access/attempt-limits.ts';
import { parseOpsKeys, type OpsKey } from '../../lib/ops-keys.ts';
import { rateKeyOf } from '../http/rate-limit.ts';

export interface OpsKeyGuardOptions {
  /** OpsKeys, or OPS_API_KEYS entries (`name:scopes:key` or a bare key). */
  keys: readonly (string | OpsKey)[];
  /** The count of wrong keys per address, shared by every API process. */
  wrongKeys: AttemptLimiter;
  /** IDEMPOTENCY_FINGERPRINT_KEY: what a key's fingerprint is keyed with (the same in every process). */
  fingerprintKey: Buffer;
  /** Tests: this process's clock, for how long it remembers a wrong key it counted (default: Date.now). */
  now?: () => number;
  /** Wrong keys remembered at once, at most (default 10,000): past it the oldest are counted again when sent again. */
  maxRememberedWrongKeys?: number;
}

export type KeyCheck = { kind: 'accepted'; key: OpsKey } | { kind: 'wrong' } | { kind: 'limited'; waitMs: number };

export interface OpsKeyGuard {
  /** The key `presented` from `ip` (undefined: none was sent, which guesses nothing and is not counted). */
  check(ip: string | undefined, presented: string | undefined): Promise<KeyCheck>;
  /** What a console session signed in with `key` keeps of it: an HMAC, never the key. */
  fingerprintOf(key: OpsKey): string;
  /** The key of a fingerprint, if it is one of this walletflow's keys now. */
  keyOfFingerprint(fingerprint: string): OpsKey | undefined;
  /** Wrong keys remembered now as counted (tests, and the bound on this process's memory). */
  rememberedWrongKeys(): number;
}

const digest = (value: string) => createHash('sha256').update(value, 'utf8').digest();

/** How long a wrong key counted from an address is not counted again from it (the limit's window). */
const REPEAT_WINDOW_MS = 60_000;
/** Wrong keys remembered at once, at most (the oldest forgotten first: such a key is counted again, no more). */
const MAX_REMEMBERED_WRONG_KEYS = 10_000;

export function createOpsKeyGuard(options: OpsKeyGuardOptions): OpsKeyGuard {
  // Comparing fixed-length digests keeps the comparison constant-time whatever the lengths.
  const keys = parseOpsKeys(options.keys).map((key) => ({ key, digest: digest(key.key) }));
  const fingerprintOf = (key: OpsKey) =>
    createHmac('sha256', options.fingerprintKey).update(`console-session-key\0${key.key}`, 'utf8').digest('hex');
  const byFingerprint = new Map(keys.map(({ key }) => [fingerprintOf(key), key]));
  const now = options.now ?? Date.now;
  const maxRemembered = options.maxRememberedWrongKeys ?? MAX_REMEMBERED_WRONG_KEYS;
  /** What a wrong key is remembered by: an HMAC under this process's own secret, never the key or its bare digest. */
  const seenSecret = randomBytes(32);
  /** Each wrong key counted lately from an address → until when it is not counted again; in that order. */
  const counted = new Map<string, number>();
  /** Each wrong key being counted now from an address: the requests that bring it meanwhile share the verdict. */
  const counting = new Map<string, Promise<KeyCheck>>();
  const countedLately = (seen: string, at: number): boolean => {
    const until = counted.get(seen);
    if (until === undefined) return false;
    if (until > at) return true;
    counted.delete(seen);
    return false;
  };
  const rememberCounted = (seen: string, at: number): void => {
    counted.delete(seen);
    counted.set(seen, at + REPEAT_WINDOW_MS);
    // Expired ones first (they are in expiry order), then the oldest past the bound (such a key is counted again).
    for (const [oldest, until] of counted) {
      if (until > at && counted.size <= maxRemembered) break;
      counted.delete(oldest);
    }
  };
  const countWrongKey = async (address: string, seen: string, at: number): Promise<KeyCheck> => {
    const verdict = await options.wrongKeys.take(address);
    if (!verdict.allowed) return { kind: 'limited', waitMs: verdict.retryAfterSeconds * 1000 };
    rememberCounted(seen, at);
    return { kind: 'wrong' };
  };

  return {
    async check(ip, presented) {
      const address = rateKeyOf(ip);
      let accepted: OpsKey | undefined;
      if (presented !== undefined) {
        const presentedDigest = digest(presented);
        // Every key is compared, so the time taken does not say which one matched.
        for (const candidate of keys)
          if (timingSafeEqual(presentedDigest, candidate.digest) && !accepted) accepted = candidate.key;
      }
      if (accepted) return { kind: 'accepted', key: accepted };
      const at = now();
      const seen =
        presented === undefined
          ? undefined
          : createHmac('sha256', seenSecret).update(`${address}\0${presented}`, 'utf8').digest('base64url');
      if (seen === undefined || countedLately(seen, at)) {
        // No key, or the same wrong key again, guesses nothing new: not counted, and refused for a wait only if this
        // process knows of one.
        const waitMs = options.wrongKeys.knownBlockedForMs(address);
        return waitMs > 0 ? { kind: 'limited', waitMs } : { kind: 'wrong' };
      }
      // The same wrong key already being counted (requests sent at once): the same verdict, one count.
      const under = counting.get(seen);
      if (under) return under;
      const verdict = countWrongKey(address, seen, at).finally(() => counting.delete(seen));
      counting.set(seen, verdict);
      return verdict;
    },
    rememberedWrongKeys: () => counted.size,
    fingerprintOf,
    keyOfFingerprint: (fingerprint) => byFingerprint.get(fingerprint),
  };
}
