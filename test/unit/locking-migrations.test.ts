// The upgrade from the previous release runs every migration since it while that release still serves
// (docs/running-at-scale.md): a migration that takes a table the previous release writes makes its writes (and, for
// an ALTER TABLE or a DROP INDEX, its reads) wait for as long as it runs. docs/running-at-scale.md names each such
// migration with the tables it takes, in one table; this test reads the migrations and holds the docs to them, so a
// new one that takes a table cannot ship without its line.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const root = path.resolve(import.meta.dirname, '../..');
const migrationsDir = path.join(root, 'prisma/migrations');
/** The previous release's last migration (360981c): the ones after it run during the upgrade. */
const previousReleaseLast = '20261127050000_ledger_entries_per_statement';

const migrations = readdirSync(migrationsDir, { withFileTypes: true })
  .filter((entry) => entry.isDirectory())
  .map((entry) => entry.name)
  .sort();
const sqlOf = (name: string) =>
  readFileSync(path.join(migrationsDir, name, 'migration.sql'), 'utf8').replace(/--[^\n]*/g, '');

/** The statements of a migration: split at semicolons outside dollar-quoted bodies (a function's). */
function statements(sql: string): string[] {
  const parts: string[] = [];
  let current = '';
  let quoted = false;
  for (let index = 0; index < sql.length; index += 1) {
    if (sql.startsWith('$$', index)) {
      quoted = !quoted;
      current += '$$';
      index += 1;
      continue;
    }
    if (sql[index] === ';' && !quoted) {
      parts.push(current.trim());
      current = '';
    } else current += sql[index];
  }
  if (current.trim() !== '') parts.push(current.trim());
  return parts.filter((part) => part !== '');
}

const name = String.raw`"?(\w+)"?`;
/** Each index's table, from every CREATE INDEX of every migration: what a DROP INDEX takes. */
const indexTables = new Map<string, string>();
for (const migration of migrations)
  for (const statement of statements(sqlOf(migration))) {
    const match = new RegExp(
      String.raw`^CREATE (?:UNIQUE )?INDEX (?:CONCURRENTLY )?(?:IF NOT EXISTS )?${name} ON (?:ONLY )?${name}`,
      'i',
    ).exec(statement);
    if (match) indexTables.set(match[1]!, match[2]!);
  }

/** The tables a statement takes a lock on for as long as it runs (not CONCURRENTLY). */
function tablesTaken(statement: string): string[] {
  const patterns = [
    String.raw`^CREATE (?:UNIQUE )?INDEX (?!CONCURRENTLY)(?:IF NOT EXISTS )?${name} ON (?:ONLY )?${name}`,
    String.raw`^ALTER TABLE (?:IF EXISTS )?(?:ONLY )?${name}`,
    String.raw`^(?:CREATE (?:OR REPLACE )?(?:CONSTRAINT )?|DROP |ALTER )TRIGGER (?:IF EXISTS )?${name}[\s\S]*?\sON (?:ONLY )?${name}`,
    String.raw`^UPDATE (?:ONLY )?${name}`,
    String.raw`^DELETE FROM (?:ONLY )?${name}`,
    String.raw`^TRUNCATE (?:TABLE )?(?:ONLY )?${name}`,
  ];
  for (const pattern of patterns) {
    const match = new RegExp(pattern, 'i').exec(statement);
    if (match) return [match.at(-1)!];
  }
  const dropped = new RegExp(String.raw`^DROP INDEX (?!CONCURRENTLY)(?:IF EXISTS )?${name}`, 'i').exec(statement);
  if (dropped) return [indexTables.get(dropped[1]!) ?? `(the table of ${dropped[1]})`];
  return [];
}

/** The tables of the previous release (created by its migrations). */
const previousTables = new Set(
  migrations
    .filter((migration) => migration <= previousReleaseLast)
    .flatMap((migration) =>
      [...sqlOf(migration).matchAll(/CREATE TABLE (?:IF NOT EXISTS )?"?(\w+)"?/gi)].map((m) => m[1]!),
    ),
);

/** Each migration of the upgrade that takes a table the previous release writes: the tables it takes. */
function migrationsTakingTables(): Map<string, string[]> {
  const taken = new Map<string, string[]>();
  for (const migration of migrations.filter((each) => each > previousReleaseLast)) {
    const tables = [
      ...new Set(
        statements(sqlOf(migration))
          .flatMap(tablesTaken)
          .filter((table) => previousTables.has(table)),
      ),
    ].sort();
    if (tables.length > 0) taken.set(migration, tables);
  }
  return taken;
}

describe('the migrations of the upgrade from the previous release', () => {
  it('finds what a migration takes: indexes built without CONCURRENTLY, ALTER TABLE, triggers, a DROP INDEX by its table', () => {
    expect(tablesTaken('CREATE INDEX "a_idx" ON "funding"("x")')).toEqual(['funding']);
    expect(tablesTaken('CREATE INDEX CONCURRENTLY "a_idx" ON "funding"("x")')).toEqual([]);
    expect(tablesTaken('CREATE UNIQUE INDEX IF NOT EXISTS a_idx ON ops_action (x)')).toEqual(['ops_action']);
    expect(tablesTaken('ALTER TABLE "link_event" ALTER COLUMN "actor" TYPE VARCHAR(200)')).toEqual(['link_event']);
    expect(
      tablesTaken('CREATE TRIGGER "t" AFTER TRUNCATE ON "funding" FOR EACH STATEMENT EXECUTE FUNCTION f()'),
    ).toEqual(['funding']);
    expect(tablesTaken('DROP INDEX "funding_transfer_id_idx"')).toEqual(['funding']);
    expect(tablesTaken('CREATE TABLE "x" ("id" INT)')).toEqual([]);
  });

  it('are each named in docs/running-at-scale.md with every table of the previous release they take', () => {
    const doc = readFileSync(path.join(root, 'docs/running-at-scale.md'), 'utf8');
    const rows = new Map(
      [...doc.matchAll(/^\| `(\d{14}_\w+)` \| ([^|]+) \|/gm)].map((row) => [
        row[1]!,
        [...row[2]!.matchAll(/`(\w+)`/g)].map((table) => table[1]!).sort(),
      ]),
    );
    const taken = migrationsTakingTables();
    expect(taken.size).toBeGreaterThan(0);
    for (const [migration, tables] of taken) expect(rows.get(migration), migration).toEqual(tables);
    // And no row for a migration that takes none: the table is the list, not a guess.
    expect([...rows.keys()].filter((migration) => !taken.has(migration))).toEqual([]);
  });
});
