// The sandbox identity provider wired to the ops console, for `walletflow dev` (and whoever wants
// the same staff): a few staff members, a maker, a checker, a reader and an administrator, in groups
// CONSOLE_OIDC_ROLES maps to scopes, so a newcomer tries the whole maker-checker flow in the browser
// on the first run; and the console's CONSOLE_OIDC_* variables for walletflow's API.
import { randomBytes } from 'node:crypto';
import { startIdentityProvider, type RunningIdentityProvider, type StaffMember } from '../sandbox/identity-provider.ts';

/** The dev stack's staff; every one signs in with the sandbox's password. */
export const consoleStaff: readonly (StaffMember & { role: string })[] = [
  {
    username: 'maker',
    password: 'sandbox-pass',
    name: 'Maria Santos',
    groups: ['walletflow-makers'],
    role: 'uploads batches, funds, adjusts balances',
  },
  {
    username: 'checker',
    password: 'sandbox-pass',
    name: 'Jose Reyes',
    groups: ['walletflow-checkers'],
    role: 'approves batches, resolves reviews',
  },
  {
    username: 'reader',
    password: 'sandbox-pass',
    name: 'Ana Cruz',
    groups: ['walletflow-readers'],
    role: 'sees everything, changes nothing',
  },
  {
    username: 'admin',
    password: 'sandbox-pass',
    name: 'Rosa Lim',
    groups: ['walletflow-admins'],
    role: 'webhooks, redeliveries, links',
  },
];

/** CONSOLE_OIDC_ROLES for those groups (contract-decisions sections 12 and 15). */
export const consoleRoles = [
  'walletflow-makers=read+fund+accounts',
  'walletflow-checkers=read+approve+resolve',
  'walletflow-readers=read',
  'walletflow-admins=read+admin+accounts+resolve',
].join(',');

export const CONSOLE_CLIENT_ID = 'walletflow-console';

export interface ConsoleIdentity {
  provider: RunningIdentityProvider;
  /** The API's CONSOLE_OIDC_* variables for this provider. */
  env: Record<string, string>;
}

/** Starts the provider with the console at `apiBase` as its one client. */
export async function startConsoleIdentity(apiBase: string, port: number): Promise<ConsoleIdentity> {
  const clientSecret = randomBytes(24).toString('base64url');
  const provider = await startIdentityProvider({
    port,
    clients: [{ clientId: CONSOLE_CLIENT_ID, clientSecret, redirectUris: [`${apiBase}/console/oidc/callback`] }],
    staff: consoleStaff,
  });
  return {
    provider,
    env: {
      CONSOLE_OIDC_ISSUER: provider.issuer,
      CONSOLE_OIDC_CLIENT_ID: CONSOLE_CLIENT_ID,
      CONSOLE_OIDC_CLIENT_SECRET: clientSecret,
      CONSOLE_OIDC_ROLES: consoleRoles,
    },
  };
}
