// The console's history pages on the real database. The audit's filter by person (audit/ops-actions.ts
// listOpsActions): a key's name matches in any case, as keys are named (lib/ops-keys.ts); a person's identity only in
// the case their provider gives it, as maker-checker compares them (domain/actor.ts): two people whose subjects differ
// only in case are two people in the audit too. And the cursors of the audit and of a link's history
// (lib/page-cursor.ts decodeTimeIdCursor): a forged one is refused before it reaches PostgreSQL.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listOpsActions } from '../../audit/ops-actions.ts';
import { linkEvents } from '../../links/link-view.ts';
import { createDatabase, type Database } from '../../lib/database.ts';
import { testDatabaseUrl } from '../support/test-database.ts';

let database: Database;
beforeAll(() => {
  database = createDatabase(testDatabaseUrl(), { maxConnections: 2 });
});
afterAll(async () => {
  await database.$disconnect();
});

describe("the audit's filter by person", () => {
  it('matches a key’s name in any case, and a person’s identity only in their provider’s case', async () => {
    const run = randomUUID().slice(0, 8);
    const path = `/ops/fundings/${run}/cancel`;
    const actors = {
      key: `maria-${run}`,
      upper: `Maria Santos (oidc:Ma-${run})`,
      lower: `Maria Santos (oidc:ma-${run})`,
    };
    for (const keyName of Object.values(actors))
      await database.opsAction.create({ data: { keyName, method: 'POST', path, status: 202, client: '192.0.2.1' } });
    const whoMatches = async (person: string) => {
      const page = await listOpsActions(database, { person, limit: 50, action: { pathPrefix: path } });
      if (page.kind !== 'page') throw new Error(page.kind);
      return page.items.map((item) => item.keyName).sort();
    };
    // A key's name, any case.
    expect(await whoMatches(`MARIA-${run}`)).toEqual([actors.key]);
    // A person's recorded name whole, or their identity: theirs only, not the other subject's.
    expect(await whoMatches(actors.lower)).toEqual([actors.lower]);
    expect(await whoMatches(actors.upper)).toEqual([actors.upper]);
    expect(await whoMatches(`oidc:ma-${run}`)).toEqual([actors.lower]);
    expect(await whoMatches(`Maria Santos (OIDC:MA-${run})`)).toEqual([]);
    // A display name names every person who carries it: the audit does not know which one is meant.
    expect(await whoMatches('Maria Santos')).toEqual([actors.upper, actors.lower].sort());
  });

  it('finds a write refused for a person’s ended session whose note kept their identity alone (a name too long)', async () => {
    const run = randomUUID().slice(0, 8);
    const path = `/console/fundings/${run}/cancel`;
    const person = `${'Maria Santos de la Cruz '.repeat(4).trim()} (oidc:ma-${run})`;
    // The console's note for an ended session whose name and identity would not fit (console-router.ts): the identity.
    const { id } = await database.opsAction.create({
      data: {
        keyName: null,
        channel: 'console',
        actor: `session ended: oidc:ma-${run}`,
        method: 'POST',
        path,
        status: 303,
        client: '192.0.2.1',
      },
    });
    const page = await listOpsActions(database, { person, limit: 50, action: { pathPrefix: path } });
    if (page.kind !== 'page') throw new Error(page.kind);
    // Before: the pattern's backslashes were lost in the SQL template, the identity read as '', and nothing matched.
    expect(page.items.map((item) => String(item.id))).toEqual([String(id)]);
    // A subject too long for the note (a provider's may be 100 characters) is kept to the note's room, and found by the
    // person's name or identity all the same.
    const subject = `oidc:${'s'.repeat(90)}-${run}`;
    const long = await database.opsAction.create({
      data: {
        keyName: null,
        channel: 'console',
        actor: `session ended: ${subject}`.slice(0, 100),
        method: 'POST',
        path,
        status: 303,
        client: '192.0.2.1',
      },
    });
    for (const who of [`Maria Santos (${subject})`, subject]) {
      const found = await listOpsActions(database, { person: who, limit: 50, action: { pathPrefix: path } });
      if (found.kind !== 'page') throw new Error(found.kind);
      expect(
        found.items.map((item) => String(item.id)),
        who,
      ).toEqual([String(long.id)]);
    }
  });
});

describe('a forged cursor of the audit or of a link’s history', () => {
  it('is refused before it reaches PostgreSQL: an id past a bigint, a year before 1970 (none has a year 0)', async () => {
    const forged = ['2026-01-01T00:00:00.000Z|9999999999999999999', '0000-01-01T00:00:00.000Z|1'].map((text) =>
      Buffer.from(text).toString('base64url'),
    );
    for (const cursor of forged) {
      // Before: each reached PostgreSQL (a bigint out of range, a year 0) and the page answered 500.
      expect(await listOpsActions(database, { cursor, limit: 10 }), cursor).toEqual({ kind: 'invalid-cursor' });
      expect(await linkEvents(database, randomUUID(), { cursor, limit: 10 }), cursor).toBeNull();
    }
    // One the pages wrote goes on.
    const written = Buffer.from('2026-01-01T00:00:00.000Z|9223372036854775807').toString('base64url');
    expect(await listOpsActions(database, { cursor: written, limit: 10 })).toMatchObject({ kind: 'page' });
    expect(await linkEvents(database, randomUUID(), { cursor: written, limit: 10 })).toMatchObject({ items: [] });
  });
});
