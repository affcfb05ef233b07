// The tables the purge schedule empties of expired rows, named here, where the purge workflow's
// contract and the capabilities that own them all see them: the logins and sessions of links
// (links/purge.ts says what is kept for the audit and why), and the console's sign-ins, sessions
// and attempt counts (access/), and the audit's budget counts of minutes that are over (audit/:
// never the audit's rows).
export const linkPurgeTables = ['login_state', 'login_grant', 'app_session', 'embedded_session'] as const;
export const accessPurgeTables = ['console_sign_in', 'console_session', 'attempt_count'] as const;
export const auditPurgeTables = ['ops_action_budget'] as const;
export const purgeTables = [...linkPurgeTables, ...accessPurgeTables, ...auditPurgeTables] as const;
export type LinkPurgeTable = (typeof linkPurgeTables)[number];
export type AccessPurgeTable = (typeof accessPurgeTables)[number];
export type PurgeTable = (typeof purgeTables)[number];
