// Ops API keys (contract-decisions section 12): OPS_API_KEYS entries `name:scopes:key`, scopes
// `+`-separated; a bare `key` is named `default` and holds every scope. The name is what audits
// record; the key itself is never logged or stored.

export const opsScopes = ['read', 'fund', 'pay', 'resolve', 'accounts', 'admin', 'approve'] as const;
export type OpsScope = (typeof opsScopes)[number];

export interface OpsKey {
  name: string;
  scopes: ReadonlySet<OpsScope>;
  key: string;
  /** A bare entry (no name, every scope): refused in production (lib/config/production-checks.ts). */
  bare?: true;
}

/** The name a bare key gets. */
export const DEFAULT_KEY_NAME = 'default';

/** Who resolves a review from the wallet's own final state (the sweep), as its records say. */
export const RECONCILIATION_ACTOR = 'reconciliation';

/**
 * Names walletflow records for acts of its own, or shows where a record names no one: no key may take one (compared
 * without case), or a person's resolve would read as walletflow's own reconciliation.
 */
const reservedNames: ReadonlySet<string> = new Set([RECONCILIATION_ACTOR, 'unknown']);

const namePattern = /^[A-Za-z0-9._-]{1,64}$/;
const isScope = (value: string): value is OpsScope => (opsScopes as readonly string[]).includes(value);

export class OpsKeyError extends Error {
  readonly code = 'OPS_KEY_INVALID';
}

/**
 * One OPS_API_KEYS entry. The error names the entry by its position and name, never by its key.
 */
export function parseOpsKeyEntry(entry: string, position = 1): OpsKey {
  const parts = entry.split(':');
  if (parts.length === 1) return { name: DEFAULT_KEY_NAME, scopes: new Set(opsScopes), key: entry, bare: true };
  const [name = '', scopeList = '', ...rest] = parts;
  const key = rest.join(':');
  if (parts.length < 3 || key.length === 0)
    throw new OpsKeyError(`entry ${position}: must be name:scopes:key or a bare key`);
  if (!namePattern.test(name))
    throw new OpsKeyError(`entry ${position}: the name must be 1 to 64 of A-Z a-z 0-9 . _ -`);
  if (reservedNames.has(name.toLowerCase()))
    throw new OpsKeyError(`entry ${position}: the name ${name} is walletflow's own (it records its own acts so)`);
  const scopes = scopeList.split('+');
  const unknown = scopes.filter((scope) => !isScope(scope));
  if (scopeList === '' || unknown.length > 0) {
    throw new OpsKeyError(`entry ${position} (${name}): scopes must be +-separated from ${opsScopes.join(', ')}`);
  }
  return { name, scopes: new Set(scopes.filter(isScope)), key };
}

/**
 * OPS_KEY_OWNERS: `name=subject` entries, each naming the person an ops key acts for by their subject at the console's
 * identity provider. Maker-checker then counts the key and that person as one: a batch one made, the other may not
 * approve, and what both stored unapproved in 24 hours adds up. Answers the key names, without case, mapped to the
 * identity walletflow records for that person (`oidc:<subject>`, domain/actor.ts). A name need not be a key of
 * OPS_API_KEYS now: a key retired by a rotation keeps its owner for the batches it stored that still await approval
 * (`retiredOwnerNames` tells them apart, for a warning at start: a typo there ties nothing).
 */
export function parseKeyOwners(entries: readonly string[]): Map<string, string> {
  const owners = new Map<string, string>();
  entries.forEach((entry, index) => {
    const at = entry.indexOf('=');
    const name = at < 0 ? '' : entry.slice(0, at);
    const subject = at < 0 ? '' : entry.slice(at + 1);
    if (!namePattern.test(name) || subject.length === 0 || subject.length > 255 || /[()\s]/.test(subject))
      throw new OpsKeyError(
        `entry ${index + 1}: must be name=subject (a key's name; the person's subject at the identity provider, 1 to 255 characters, no spaces or parentheses)`,
      );
    // The console shows a person as `Name (oidc:<subject>)`: the subject is what follows `oidc:`.
    if (subject.startsWith('oidc:'))
      throw new OpsKeyError(`entry ${index + 1}: give ${name}'s subject without its oidc: prefix`);
    if (owners.has(name.toLowerCase())) throw new OpsKeyError(`entry ${index + 1}: ${name} is given an owner twice`);
    owners.set(name.toLowerCase(), `oidc:${subject}`);
  });
  return owners;
}

/** The names OPS_KEY_OWNERS gives an owner that are no key now: a retired key's, or a typo (warned at start). */
export function retiredOwnerNames(owners: ReadonlyMap<string, string>, keys: readonly OpsKey[]): string[] {
  const known = new Set(keys.map((key) => key.name.toLowerCase()));
  return [...owners.keys()].filter((name) => !known.has(name));
}

/**
 * Every entry. Names must be unique (an audit must say which key acted), except among bare keys: several (as
 * OPS_API_KEYS held before names) all act as `default`. A named entry never shares its name, `default` included.
 */
export function parseOpsKeys(entries: readonly (string | OpsKey)[]): OpsKey[] {
  const keys = entries.map((entry, index) => (typeof entry === 'string' ? parseOpsKeyEntry(entry, index + 1) : entry));
  /** Each name (without case) given so far, and whether every entry under it was bare. */
  const names = new Map<string, boolean>();
  const secrets = new Set<string>();
  for (const key of keys) {
    // Compared without case: an approval by `Alice` of `alice`'s batch is the same person's.
    const name = key.name.toLowerCase();
    const allBare = names.get(name);
    if (allBare !== undefined && !(allBare && key.bare === true))
      throw new OpsKeyError(
        `the name ${key.name} is used twice, or in another case (a bare key is named ${DEFAULT_KEY_NAME})`,
      );
    if (secrets.has(key.key)) throw new OpsKeyError(`the key named ${key.name} is also given under another name`);
    names.set(name, key.bare === true);
    secrets.add(key.key);
  }
  return keys;
}
