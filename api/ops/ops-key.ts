// The ops key a request was let through with (ops-auth.ts keeps it on res.locals): its name, what
// audits record, and its scopes, for what a route allows beyond its own scope.
import type { OpsKey, OpsScope } from '../../lib/ops-keys.ts';

/** Called by opsAuth on every request it lets through: the key's name and scopes, never the key. */
export function rememberOpsKey(locals: Record<string, unknown>, key: Pick<OpsKey, 'name' | 'scopes'>): void {
  locals.opsKeyName = key.name;
  locals.opsActor = key.name;
  locals.opsKeyScopes = key.scopes;
}

/** The acting key's name, set by opsAuth on every request it lets through (what audits record). */
export function opsKeyNameOf(locals: Record<string, unknown>): string {
  const name = locals.opsKeyName;
  if (typeof name !== 'string') throw new Error('opsKeyNameOf: the request did not pass opsAuth');
  return name;
}

/** Whether the acting key has `scope` (for what a route allows beyond its own scope, by its body). */
export function opsKeyHasScope(locals: Record<string, unknown>, scope: OpsScope): boolean {
  const scopes = locals.opsKeyScopes;
  if (!(scopes instanceof Set)) throw new Error('opsKeyHasScope: the request did not pass opsAuth');
  return scopes.has(scope);
}
