// What a console session may still do, asked on every request (a page, a write, each push of a
// stream): a sign-in is only as good as what it rests on now. A key session holds while
// OPS_API_KEYS has its key (the same secret under the same name) and no identity provider is
// configured; an OpenID Connect session while the same provider is configured and the person's
// groups still have a role under CONSOLE_OIDC_ROLES. Either way it acts with the scopes its
// sign-in granted that are still granted: never more than at sign-in (a new role needs a new
// sign-in), and less as soon as a key or a group loses one. What the provider says of the person
// later (a group left there) is not seen before they sign in again, anywhere: that sign-in narrows every session of
// theirs (access/console-sessions.ts narrowToGroups; docs/security.md).
import type { ConsoleGrant, ConsoleSessionView } from '../../access/console-sessions.ts';
import type { ConsoleConfig } from '../../lib/config.ts';
import { scopesOfGroups } from '../../lib/console-roles.ts';
import type { OpsKey, OpsScope } from '../../lib/ops-keys.ts';
import type { OpsKeyGuard } from '../ops/ops-key-guard.ts';

export interface ConsoleGrants {
  /** What a sign-in with `key` rests on. */
  ofKey(key: OpsKey): ConsoleGrant;
  /** What a sign-in through the provider rests on: the person's groups that have a role. */
  ofGroups(groups: readonly string[]): ConsoleGrant;
  /** The scopes `session` may use now; null when its sign-in holds no more (then it is no session). */
  scopesNow(session: Pick<ConsoleSessionView, 'personId' | 'scopes' | 'grant'>): ReadonlySet<OpsScope> | null;
}

/** The key's person id: its name without regard to case, as key names are compared. */
export const keyPersonId = (key: Pick<OpsKey, 'name'>): string => `key:${key.name.toLowerCase()}`;

/**
 * The issuer a session records and is compared by: CONSOLE_OIDC_ISSUER without a trailing slash, as sessions have
 * recorded it since before the variable was kept as given (discovery needs it so): a slash added or dropped in the
 * setting signs no one out.
 */
export const issuerOfRecord = (issuer: string): string => issuer.replace(/\/+$/, '');

export function createConsoleGrants(
  config: Pick<ConsoleConfig, 'oidc'>,
  keys: Pick<OpsKeyGuard, 'fingerprintOf' | 'keyOfFingerprint'>,
): ConsoleGrants {
  const grantedNow = (session: Pick<ConsoleSessionView, 'personId' | 'grant'>): ReadonlySet<OpsScope> | null => {
    const grant = session.grant;
    if (!grant) return null;
    if (grant.via === 'key') {
      if (config.oidc) return null;
      const key = keys.keyOfFingerprint(grant.keyFingerprint);
      return key && keyPersonId(key) === session.personId ? key.scopes : null;
    }
    if (!config.oidc || issuerOfRecord(config.oidc.issuer) !== grant.issuer) return null;
    return scopesOfGroups(config.oidc.roles, grant.groups);
  };
  return {
    ofKey: (key) => ({ via: 'key', keyFingerprint: keys.fingerprintOf(key) }),
    ofGroups(groups) {
      if (!config.oidc) throw new Error('ofGroups: no identity provider is configured');
      const roles = config.oidc.roles;
      return {
        via: 'oidc',
        issuer: issuerOfRecord(config.oidc.issuer),
        groups: [...new Set(groups)].filter((group) => roles.has(group)),
      };
    },
    scopesNow(session) {
      const granted = grantedNow(session);
      if (!granted) return null;
      const scopes = new Set([...session.scopes].filter((scope) => granted.has(scope)));
      return scopes.size > 0 ? scopes : null;
    },
  };
}
