// Prisma's schema engine (WebAssembly build) driven through the pg driver adapter, so migrations
// apply and diff with no native engine download and no network access. Used by migrate.ts, the
// drift test and the migration generator.
import { readFile, readdir } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';
import pg from 'pg';
import { PrismaPg } from '@prisma/adapter-pg';
import { bindMigrationAwareSqlAdapterFactory } from '@prisma/driver-adapter-utils';
import * as engineBindings from '@prisma/schema-engine-wasm/schema_engine_bg';
import type { MigrationList, SchemaEngine } from '@prisma/schema-engine-wasm';

const prismaDir = path.dirname(fileURLToPath(import.meta.url));
export const schemaPath = path.join(prismaDir, 'schema.prisma');
export const migrationsDir = path.join(prismaDir, 'migrations');

let wasmReady: Promise<void> | undefined;

const PG_CHAR_OID = 18;
const PG_TEXT_OID = 25;
let charColumnsPatched = false;

/**
 * The schema engine's catalog queries return PostgreSQL's one-byte `"char"` type (OID 18), which
 * @prisma/adapter-pg 7.10 has no column mapping for ("Column type 'char' could not be
 * deserialized"). A `"char"` value is plain text, so result fields of that type are read as text.
 * Only the migration tooling installs this; the application's queries never select `"char"`.
 */
function readCharColumnsAsText(): void {
  if (charColumnsPatched) return;
  charColumnsPatched = true;
  type FieldDescription = { dataTypeID: number };
  const resultPrototype = (pg as unknown as { Result: { prototype: { addFields(fields: FieldDescription[]): void } } })
    .Result.prototype;
  const addFields = resultPrototype.addFields;
  resultPrototype.addFields = function (this: unknown, fields: FieldDescription[]) {
    for (const field of fields) if (field.dataTypeID === PG_CHAR_OID) field.dataTypeID = PG_TEXT_OID;
    addFields.call(this, fields);
  };
}

/** Instantiates the engine's WebAssembly module once, without `--experimental-wasm-modules`. */
function loadWasm(): Promise<void> {
  wasmReady ??= (async () => {
    const require = createRequire(import.meta.url);
    const entry = require.resolve('@prisma/schema-engine-wasm');
    const wasmPath = path.join(path.dirname(entry), 'schema_engine_bg.wasm');
    const bytes = await readFile(wasmPath);
    const { instance } = await WebAssembly.instantiate(bytes, {
      './schema_engine_bg.js': engineBindings as unknown as WebAssembly.ModuleImports,
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
  const factory = bindMigrationAwareSqlAdapterFactory(new PrismaPg({ connectionString: databaseUrl }));
  const schema = await readFile(schemaPath, 'utf8');
  const debug = (): void => {};
  const { SchemaEngine: Engine } = engineBindings as unknown as { SchemaEngine: typeof SchemaEngine };
  try {
    const engine = await Engine.new({ datamodels: [[schemaPath, schema]] }, debug, factory);
    return {
      engine,
      close: async () => {
        engine.free();
      },
    };
  } catch (error) {
    throw factory.errorRegistry.lookupError(error as Error)?.error ?? error;
  }
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
  const handle = await openSchemaEngine(databaseUrl);
  try {
    const result = await handle.engine.applyMigrations({
      migrationsList: await loadMigrationList(),
      filters: noFilters,
    });
    return result.appliedMigrationNames;
  } finally {
    await handle.close();
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
