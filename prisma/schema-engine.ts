// Prisma's schema engine (WebAssembly build) driven through the pg driver adapter, so migrations
// apply and diff with no native engine download and no network access. Used by cli/migrate.ts, the
// drift test and the migration generator.
import { readFile, readdir } from 'node:fs/promises';
import path from 'node:path';
import { createRequire } from 'node:module';
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { PrismaPg } from '@prisma/adapter-pg';
import { bindMigrationAwareSqlAdapterFactory, ColumnTypeEnum } from '@prisma/driver-adapter-utils';
import * as engineBindings from '@prisma/schema-engine-wasm/schema_engine_bg';
import type { MigrationList, SchemaEngine } from '@prisma/schema-engine-wasm';
import { dropDatabase, ensureDatabaseExists, sessionConnection } from '../lib/database.ts';
import { projectRoot } from '../lib/project-root.ts';

const prismaDir = path.join(projectRoot, 'prisma');
export const schemaPath = path.join(prismaDir, 'schema.prisma');
export { migrationsDir } from './migration-checksums.ts';
import { migrationsDir } from './migration-checksums.ts';

let wasmReady: Promise<void> | undefined;

const PG_CHAR_OID = 18;
const PG_TEXT_OID = 25;
const CHAR_COLUMN_MARK = '\u0000walletflow-char';
let charColumnsPatched = false;

/**
 * The schema engine's catalog queries return PostgreSQL's one-byte `"char"` type (OID 18, e.g.
 * pg_constraint.contype), which @prisma/adapter-pg 7.10 cannot map ("Column type 'char' could not
 * be deserialized"). pg reads such a field as text with a mark on its name; runScriptsWhole's
 * companion, reportCharColumns, turns the mark into the adapter's Character column type, which is
 * what the engine asks for. Only the migration tooling installs this; the application's own
 * queries never select `"char"`.
 */
function readCharColumnsAsText(): void {
  if (charColumnsPatched) return;
  charColumnsPatched = true;
  type FieldDescription = { dataTypeID: number; name: string };
  const resultPrototype = (pg as unknown as { Result: { prototype: { addFields(fields: FieldDescription[]): void } } })
    .Result.prototype;
  const addFields = resultPrototype.addFields;
  resultPrototype.addFields = function (this: unknown, fields: FieldDescription[]) {
    for (const field of fields) {
      if (field.dataTypeID === PG_CHAR_OID) {
        field.dataTypeID = PG_TEXT_OID;
        field.name += CHAR_COLUMN_MARK;
      }
    }
    addFields.call(this, fields);
  };
}

interface MigrationAdapter {
  executeScript(script: string): Promise<void>;
  queryRaw(query: unknown): Promise<{ columnNames: string[]; columnTypes: number[] }>;
}

/**
 * Two fixes to the pg adapter for migration work:
 * - its executeScript splits a migration on every `;`, which breaks `$$`-quoted function bodies
 *   (triggers); PostgreSQL's simple query protocol runs a whole script in one call, as the native
 *   engine behind `prisma migrate deploy` does;
 * - `"char"` columns marked by readCharColumnsAsText are reported as Character columns.
 */
function adaptForMigrations<T extends MigrationAdapter>(adapter: T): T {
  const internals = adapter as unknown as { client: pg.Pool | pg.PoolClient; onError(error: unknown): never };
  adapter.executeScript = async (script: string) => {
    try {
      await internals.client.query(script);
    } catch (error) {
      internals.onError(error);
    }
  };
  const queryRaw = adapter.queryRaw.bind(adapter);
  adapter.queryRaw = async (query: unknown) => {
    const result = await queryRaw(query);
    result.columnNames.forEach((name, index) => {
      if (name.endsWith(CHAR_COLUMN_MARK)) {
        result.columnNames[index] = name.slice(0, -CHAR_COLUMN_MARK.length);
        result.columnTypes[index] = ColumnTypeEnum.Character;
      }
    });
    return result;
  };
  return adapter;
}

/**
 * The pg adapter for the schema engine. Its own connectToShadowDb builds the shadow pool from the
 * main connection string (which wins over the shadow database name), so "shadow" work would land
 * in the main database; here the shadow database gets a URL of its own and is dropped on dispose.
 */
class MigrationPg extends PrismaPg {
  /** The adapters connected to the main database: the engine never disposes them (their pools would idle for 10 s). */
  readonly connected: Array<{ dispose(): Promise<void> }> = [];
  constructor(private readonly databaseUrl: string) {
    super(sessionConnection(databaseUrl));
  }
  override async connect() {
    const adapter = await super.connect();
    this.connected.push(adapter);
    return adaptForMigrations(adapter);
  }
  override async connectToShadowDb() {
    const name = `prisma_migrate_shadow_db_${randomUUID().replace(/-/g, '')}`;
    const shadowUrl = await ensureDatabaseExists(this.databaseUrl, name);
    const adapter = await new PrismaPg(sessionConnection(shadowUrl)).connect();
    const dispose = adapter.dispose.bind(adapter);
    adapter.dispose = async () => {
      await dispose();
      await dropDatabase(this.databaseUrl, name);
    };
    return adaptForMigrations(adapter);
  }
}

/**
 * The engine's imports, its timers unref'd: the engine leaves a timer behind once its work is done, and that timer kept
 * `walletflow migrate` running for 10 s after it printed what it applied. While the engine works, its connections keep
 * the process alive; its timers never need to.
 */
function withUnrefTimers(imports: WebAssembly.ModuleImports): WebAssembly.ModuleImports {
  return Object.fromEntries(
    Object.entries(imports).map(([name, value]) =>
      name.startsWith('__wbg_setTimeout_') && typeof value === 'function'
        ? [
            name,
            (...args: unknown[]) => {
              const timer = (value as (...args: unknown[]) => unknown)(...args) as { unref?: () => void } | undefined;
              timer?.unref?.();
              return timer;
            },
          ]
        : [name, value],
    ),
  );
}

/** Instantiates the engine's WebAssembly module once, without `--experimental-wasm-modules`. */
function loadWasm(): Promise<void> {
  wasmReady ??= (async () => {
    const require = createRequire(import.meta.url);
    const entry = require.resolve('@prisma/schema-engine-wasm');
    const wasmPath = path.join(path.dirname(entry), 'schema_engine_bg.wasm');
    const bytes = await readFile(wasmPath);
    const { instance } = await WebAssembly.instantiate(bytes, {
      './schema_engine_bg.js': withUnrefTimers(engineBindings as unknown as WebAssembly.ModuleImports),
    });
    const bindings = engineBindings as unknown as { __wbg_set_wasm(exports: WebAssembly.Exports): void };
    bindings.__wbg_set_wasm(instance.exports);
    (instance.exports.__wbindgen_start as () => void)();
  })();
  return wasmReady;
}

export interface EngineHandle {
  engine: SchemaEngine;
  close(): Promise<void>;
}

/** Opens the schema engine on `databaseUrl`, with the project's schema loaded. */
export async function openSchemaEngine(databaseUrl: string): Promise<EngineHandle> {
  await loadWasm();
  readCharColumnsAsText();
  const adapters = new MigrationPg(databaseUrl);
  const factory = bindMigrationAwareSqlAdapterFactory(adapters);
  const schema = await readFile(schemaPath, 'utf8');
  const debug = (): void => {};
  const { SchemaEngine: Engine } = engineBindings as unknown as { SchemaEngine: typeof SchemaEngine };
  // Its connections ended whatever happened: an open pool kept `walletflow migrate` alive after its work.
  const endConnections = () => Promise.all(adapters.connected.splice(0).map((adapter) => adapter.dispose()));
  let engine: SchemaEngine;
  try {
    engine = await Engine.new({ datamodels: [[schemaPath, schema]] }, debug, factory);
  } catch (error) {
    await endConnections();
    throw error;
  }
  return {
    engine,
    close: async () => {
      try {
        engine.free();
      } finally {
        await endConnections();
      }
    },
  };
}

/** Reads prisma/migrations the way `prisma migrate deploy` does. */
export async function loadMigrationList(): Promise<MigrationList> {
  const lockfileName = 'migration_lock.toml';
  const lockContent = await readFile(path.join(migrationsDir, lockfileName), 'utf8').catch(() => null);
  const entries = await readdir(migrationsDir, { withFileTypes: true });
  const directories = await Promise.all(
    entries
      .filter((entry) => entry.isDirectory())
      .map(async (entry) => {
        const file = 'migration.sql';
        const content = await readFile(path.join(migrationsDir, entry.name, file), 'utf8')
          .then((value) => ({ tag: 'ok' as const, value }))
          .catch((error: Error) => ({ tag: 'error' as const, value: error.message }));
        return { path: entry.name, migrationFile: { path: file, content } };
      }),
  );
  directories.sort((a, b) => a.path.localeCompare(b.path));
  return {
    baseDir: migrationsDir,
    lockfile: { path: lockfileName, content: lockContent },
    shadowDbInitScript: '',
    migrationDirectories: directories,
  };
}

export const noFilters = { externalTables: [], externalEnums: [] };

/** Applies every migration not yet applied; returns the names applied now. */
export async function applyMigrations(databaseUrl: string): Promise<string[]> {
  const migrationsList = await loadMigrationList();
  await refuseInvalidIndexes(databaseUrl, migrationsList);
  const handle = await openSchemaEngine(databaseUrl);
  try {
    const result = await handle.engine.applyMigrations({ migrationsList, filters: noFilters });
    return result.appliedMigrationNames;
  } finally {
    await handle.close();
  }
}

/**
 * Refuses to apply a migration that creates an index PostgreSQL marks invalid under its name: a `CREATE INDEX
 * CONCURRENTLY` that failed or was cancelled (the way docs/running-at-scale.md offers to build a large table's indexes
 * before an upgrade) leaves one, or one is being built so now. The migration's `CREATE INDEX IF NOT EXISTS` would skip
 * it, leaving an index every write keeps up and no read uses. Names the index and what to do. An invalid index no
 * pending migration names stops nothing: with nothing to apply (a service's start while an index is built by hand),
 * migrate applies nothing, as ever.
 */
/** Whether `sql` creates an index named `index` (quoted, as every migration names its indexes, or bare). */
function createsIndex(sql: string, index: string): boolean {
  const name = index.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return new RegExp(
    `CREATE\\s+(UNIQUE\\s+)?INDEX\\s+(CONCURRENTLY\\s+)?(IF\\s+NOT\\s+EXISTS\\s+)?("${name}"|${name}\\b)`,
    'i',
  ).test(sql);
}

async function refuseInvalidIndexes(databaseUrl: string, migrations: MigrationList): Promise<void> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const { rows: invalid } = await client.query<{ index: string; table: string }>(`
      SELECT c.relname AS index, t.relname AS table
      FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_class t ON t.oid = i.indrelid
      WHERE NOT i.indisvalid AND c.relnamespace = current_schema()::regnamespace
      ORDER BY c.relname`);
    if (invalid.length === 0) return;
    const { rows: table } = await client.query<{ exists: boolean }>(
      `SELECT to_regclass('_prisma_migrations') IS NOT NULL AS exists`,
    );
    const { rows: applied } = table[0]?.exists
      ? await client.query<{ name: string }>(`
          SELECT migration_name AS name FROM _prisma_migrations WHERE finished_at IS NOT NULL AND rolled_back_at IS NULL`)
      : { rows: [] };
    const done = new Set(applied.map((row) => row.name));
    const pendingSql = migrations.migrationDirectories
      .filter((directory) => !done.has(directory.path))
      .map((directory) => (directory.migrationFile.content.tag === 'ok' ? directory.migrationFile.content.value : ''))
      .join('\n');
    const rows = invalid.filter((row) => createsIndex(pendingSql, row.index));
    if (rows.length === 0) return;
    const names = rows.map((row) => `${row.index} (on ${row.table})`).join(', ');
    throw new Error(
      `nothing migrated: ${rows.length === 1 ? 'an index is' : 'indexes are'} invalid: ${names}. A CREATE INDEX ` +
        'CONCURRENTLY that failed or was cancelled leaves one, and one under way is invalid until it ends; a ' +
        'migration would skip it (IF NOT EXISTS). Wait for a build under way to end, or drop each (DROP INDEX ' +
        'CONCURRENTLY <name>) and build it again, then migrate again.',
    );
  } finally {
    await client.end();
  }
}

/**
 * The SQL that would take a database built from prisma/migrations to schema.prisma.
 * Empty (only comments) when they agree. Uses a throw-away shadow database.
 */
export async function diffMigrationsToSchema(databaseUrl: string): Promise<string> {
  const handle = await openSchemaEngine(databaseUrl);
  try {
    const schema = await readFile(schemaPath, 'utf8');
    const result = await handle.engine.diff({
      from: { tag: 'migrations', ...(await loadMigrationList()) },
      to: { tag: 'schemaDatamodel', files: [{ path: schemaPath, content: schema }] },
      script: true,
      exitCode: null,
      filters: noFilters,
    } as Parameters<SchemaEngine['diff']>[0]);
    return result.stdout ?? '';
  } finally {
    await handle.close();
  }
}

/** True when a diff script holds no statement. */
export function isEmptyMigration(sql: string): boolean {
  return sql
    .split('\n')
    .map((line) => line.trim())
    .every((line) => line === '' || line.startsWith('--'));
}
