// A console session's limits (access/console-sessions.ts) read by today's settings, whatever the sign-in's were: the
// idle time and the lifetime are CONSOLE_IDLE_MINUTES and CONSOLE_SESSION_HOURS as they are set now. Against the
// worker's PostgreSQL, on a test's clock (the database compares the times, never a process).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createConsoleSessions } from '../../access/console-sessions.ts';
import { createDatabase, type Database } from '../../lib/database.ts';
import { testDatabaseUrl } from '../support/test-database.ts';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
let database: Database;
beforeAll(() => {
  database = createDatabase(testDatabaseUrl(), { maxConnections: 2 });
});
afterAll(() => database?.$disconnect());

const person = { personId: 'key:maria', personName: 'maria', via: 'key' as const, scopes: new Set(['read' as const]) };
const grant = { via: 'key' as const, keyFingerprint: 'f'.repeat(43) };

describe('a console session', () => {
  it('ends by CONSOLE_SESSION_HOURS as set now: lowered from a week to an hour, the sessions already open end by it', async () => {
    let now = Date.UTC(2026, 11, 4, 9, 0);
    const clock = () => now;
    // Signed in when sessions lived for a week.
    const signedInUnder = createConsoleSessions(database, { idleMs: 60 * MINUTE, lifetimeMs: 168 * HOUR }, clock);
    const { cookieValue } = await signedInUnder.start(person, grant);
    // The person keeps acting, well within the idle time, for two hours.
    for (let step = 0; step < 4; step += 1) {
      now += 30 * MINUTE;
      const session = await signedInUnder.read(cookieValue);
      expect(session).not.toBeNull();
      await signedInUnder.touch(session!);
    }
    // CONSOLE_SESSION_HOURS lowered to 8: two hours in, still live, and its end of life is the new one.
    const eightHours = createConsoleSessions(database, { idleMs: 60 * MINUTE, lifetimeMs: 8 * HOUR }, clock);
    expect((await eightHours.read(cookieValue))?.expiresAt).toEqual(new Date(Date.UTC(2026, 11, 4, 17, 0)));
    // Lowered to 1 (an incident): two hours in, it has ended, though the person acted a moment ago. Before: live for
    // the rest of the week it signed in under.
    const oneHour = createConsoleSessions(database, { idleMs: 60 * MINUTE, lifetimeMs: 1 * HOUR }, clock);
    expect(await oneHour.read(cookieValue)).toBeNull();
    // And it is over for good: raising the setting again brings nothing back; whose it was is still known (a sign-out
    // from its browser signs that person out everywhere).
    expect(await signedInUnder.readOrEnded(cookieValue)).toEqual({
      session: null,
      ended: { personId: 'key:maria', personName: 'maria', via: 'key' },
    });
  });

  it('is never kept past the lifetime it signed in under, however long the setting is made since', async () => {
    let now = Date.UTC(2026, 11, 4, 9, 0);
    const clock = () => now;
    const signedInUnder = createConsoleSessions(database, { idleMs: 24 * 60 * MINUTE, lifetimeMs: 1 * HOUR }, clock);
    const { cookieValue } = await signedInUnder.start(person, grant);
    now += 2 * HOUR;
    const raised = createConsoleSessions(database, { idleMs: 24 * 60 * MINUTE, lifetimeMs: 168 * HOUR }, clock);
    expect(await raised.read(cookieValue)).toBeNull();
    expect(await raised.read(cookieValue)).toBeNull();
  });
});

describe('an idle session', () => {
  it('is idle from the person’s last act, to the second: an act soon after another still starts the idle time again', async () => {
    let now = Date.UTC(2026, 11, 4, 9, 0);
    const clock = () => now;
    const sessions = createConsoleSessions(database, { idleMs: 15 * MINUTE, lifetimeMs: 8 * HOUR }, clock);
    const { cookieValue } = await sessions.start(person, grant);
    // Acts 29 s after signing in, then nothing for 14 minutes 58 seconds: idle for less than 15 minutes.
    now += 29_000;
    await sessions.touch((await sessions.read(cookieValue))!);
    now += 15 * MINUTE - 2_000;
    // Before: an act within 30 s of the last one written was not written, and the session ended 28 s early.
    expect(await sessions.read(cookieValue)).toMatchObject({ personId: person.personId });
    now += 3_000;
    expect(await sessions.read(cookieValue)).toBeNull();
  });

  it('once found over, stays over when CONSOLE_IDLE_MINUTES is raised: nothing brings it back', async () => {
    let now = Date.UTC(2026, 11, 4, 9, 0);
    const clock = () => now;
    const fifteenMinutes = createConsoleSessions(database, { idleMs: 15 * MINUTE, lifetimeMs: 8 * HOUR }, clock);
    const { cookieValue } = await fifteenMinutes.start(person, grant);
    now += 20 * MINUTE;
    expect(await fifteenMinutes.read(cookieValue)).toBeNull();
    const anHour = createConsoleSessions(database, { idleMs: 60 * MINUTE, lifetimeMs: 8 * HOUR }, clock);
    expect(await anHour.read(cookieValue)).toBeNull();
  });

  it('stays over when CONSOLE_IDLE_MINUTES is raised, though no request read it while it was idle; a live one takes the longer time from its next act', async () => {
    let now = Date.UTC(2026, 11, 4, 9, 0);
    const clock = () => now;
    const fifteenMinutes = createConsoleSessions(database, { idleMs: 15 * MINUTE, lifetimeMs: 8 * HOUR }, clock);
    const idle = (await fifteenMinutes.start(person, grant)).cookieValue;
    const live = (await fifteenMinutes.start(person, grant)).cookieValue;
    // The person acts in `live` 10 minutes in; `idle` is left on a shared desk, and nothing asks for it.
    now += 10 * MINUTE;
    await fifteenMinutes.touch((await fifteenMinutes.read(live))!);
    // 20 minutes in, the setting is raised to an hour (the API restarted with it).
    now += 10 * MINUTE;
    const anHour = createConsoleSessions(database, { idleMs: 60 * MINUTE, lifetimeMs: 8 * HOUR }, clock);
    // Before: read under the hour, the desk's session was live again for 40 more minutes.
    expect(await anHour.read(idle)).toBeNull();
    // The live one: its end under 15 minutes is 25 minutes in; an act now writes its end under the hour.
    await anHour.touch((await anHour.read(live))!);
    now += 30 * MINUTE;
    expect(await anHour.read(live)).toMatchObject({ personId: person.personId });
  });
});
