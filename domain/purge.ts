// The tables the purge schedule empties of expired rows (links/purge.ts says what is kept for the
// audit and why): named here, where the purge workflow's contract and the links capability both see them.
export const purgeTables = ['login_state', 'login_grant', 'app_session', 'embedded_session'] as const;
export type PurgeTable = (typeof purgeTables)[number];
