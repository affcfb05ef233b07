// When a process read its settings (api/console/console-auth.ts settingsReadAtOf), as readConsoleSession weighs a
// session whose key this process lacks: signed in before the process started, it rests on older settings and ends for
// good; after, it may rest on newer ones and is refused for that request only.
import type { Request, Response } from 'express';
import { describe, expect, it } from 'vitest';
import type { ConsoleSessions, ConsoleSessionView } from '../../access/console-sessions.ts';
import { consoleCookieNames, readConsoleSession } from '../../api/console/console-auth.ts';
import type { ConsoleGrants } from '../../api/console/console-grants.ts';

const names = consoleCookieNames(false);
const cookie = 'a'.repeat(32);

describe('a process’s settings read', () => {
  it('is dated when the process started though its first read of the database’s clock answers seconds later', async () => {
    // Found in CI: a process started under load without a removed key's entry refused that key's session, signed in
    // a moment before it started, for one request only, because its first clock read's wait was subtracted from when
    // it started.
    const startedAt = Date.now();
    const session: ConsoleSessionView = {
      id: 'session-1',
      personId: 'key:auditor',
      personName: 'auditor',
      via: 'key',
      scopes: new Set(['read']),
      grant: null,
      csrfToken: 'csrf',
      expiresAt: new Date(startedAt + 60_000),
      lastSeenAt: new Date(startedAt - 200),
      touchDue: false,
      signedInAt: new Date(startedAt - 200),
    };
    const narrowed: Array<{ id: string; left: unknown }> = [];
    const sessions = {
      // The database's clock as the question reaches it, answered after a second: a new process's first connection.
      databaseTime: () => {
        const at = new Date(Date.now());
        return new Promise<Date>((resolve) => setTimeout(() => resolve(at), 1000));
      },
      readOrEnded: async () => ({ session, ended: null }),
      read: async () => session,
      narrow: async (id: string, left: unknown) => {
        narrowed.push({ id, left });
      },
      touch: async () => {},
    } as unknown as ConsoleSessions;
    const grants = { scopesNow: () => null } as unknown as ConsoleGrants;
    const handler = readConsoleSession(sessions, grants, names);
    const res = { locals: {} } as unknown as Response;
    await new Promise<void>((resolve, reject) => {
      void Promise.resolve(
        handler({ headers: { cookie: `${names.session}=${cookie}` } } as Request, res, (error?: unknown) =>
          error ? reject(error as Error) : resolve(),
        ),
      ).catch(reject);
    });
    // Before: dated a second early, after this sign-in: refused, and nothing ended.
    expect(narrowed).toEqual([{ id: 'session-1', left: null }]);
    expect(res.locals).not.toHaveProperty('consoleSession');
  });
});
