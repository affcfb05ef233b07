// The ops console's role map (contract-decisions section 15): CONSOLE_OIDC_ROLES maps the identity
// provider's group names to walletflow's scopes, `group=scope+scope,group=scope` (the scopes of
// OPS_API_KEYS, section 12). A person acts with the union of the scopes of their groups.
import { opsScopes, type OpsScope } from './ops-keys.ts';

export class ConsoleRolesError extends Error {
  readonly code = 'CONSOLE_ROLES_INVALID';
}

const isScope = (value: string): value is OpsScope => (opsScopes as readonly string[]).includes(value);

/** Group name → its scopes. A group named twice is refused (which line would win is not obvious). */
export function parseConsoleRoles(entries: readonly string[]): ReadonlyMap<string, ReadonlySet<OpsScope>> {
  const roles = new Map<string, ReadonlySet<OpsScope>>();
  entries.forEach((entry, index) => {
    const at = entry.lastIndexOf('=');
    const group = entry.slice(0, at).trim();
    const scopes = entry
      .slice(at + 1)
      .split('+')
      .map((scope) => scope.trim());
    if (at <= 0 || group === '') throw new ConsoleRolesError(`entry ${index + 1}: must be group=scope+scope`);
    const unknown = scopes.filter((scope) => !isScope(scope));
    if (unknown.length > 0 || scopes.length === 0)
      throw new ConsoleRolesError(
        `entry ${index + 1} (${group}): scopes must be +-separated from ${opsScopes.join(', ')}`,
      );
    if (roles.has(group)) throw new ConsoleRolesError(`the group ${group} is named twice`);
    roles.set(group, new Set(scopes.filter(isScope)));
  });
  return roles;
}

/** The scopes a person's groups grant: the union of their groups' scopes (none: no access). */
export function scopesOfGroups(
  roles: ReadonlyMap<string, ReadonlySet<OpsScope>>,
  groups: readonly string[],
): Set<OpsScope> {
  const scopes = new Set<OpsScope>();
  for (const group of groups) for (const scope of roles.get(group) ?? []) scopes.add(scope);
  return scopes;
}
