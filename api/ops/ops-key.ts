// The ops key a request was let through with, as the request's actor (api/http/actor.ts): its
// name, what audits record, and its scopes, for what a route allows beyond its own scope.
import type { OpsKey, OpsScope } from '../../lib/ops-keys.ts';
import { actorOf, setActor } from '../http/actor.ts';

/** Called by opsAuth on every request it lets through: the key's name and scopes, never the key. */
export function rememberOpsKey(locals: Record<string, unknown>, key: Pick<OpsKey, 'name' | 'scopes'>): void {
  setActor(locals, { kind: 'key', name: key.name, scopes: key.scopes });
}

/** The acting key's name, set by opsAuth on every request it lets through (what audits record). */
export function opsKeyNameOf(locals: Record<string, unknown>): string {
  const actor = actorOf(locals);
  if (!actor) throw new Error('opsKeyNameOf: the request did not pass opsAuth');
  return actor.name;
}

/** Whether the acting key has `scope` (for what a route allows beyond its own scope, by its body). */
export function opsKeyHasScope(locals: Record<string, unknown>, scope: OpsScope): boolean {
  const actor = actorOf(locals);
  if (!actor) throw new Error('opsKeyHasScope: the request did not pass opsAuth');
  return actor.scopes.has(scope);
}
