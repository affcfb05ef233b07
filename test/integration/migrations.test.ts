// The schema and its migrations: they agree, they apply offline, and the wallet call record is
// append-only.
import { inject, describe, expect, it } from 'vitest';
import pg from 'pg';
import { randomUUID } from 'node:crypto';
import { dropDatabase, ensureDatabaseExists } from '../../lib/database.ts';
import { applyMigrations, diffMigrationsToSchema, isEmptyMigration } from '../../prisma/schema-engine.ts';
import { readShippedChecksums } from '../../prisma/migration-checksums.ts';
import { testDatabaseUrl } from '../support/test-database.ts';

const databaseUrl = inject('databaseUrl');

describe('prisma migrations', () => {
  it('match schema.prisma (a drift means a migration is missing: npm run db:migration:new)', async () => {
    const sql = await diffMigrationsToSchema(databaseUrl);
    expect(isEmptyMigration(sql), `schema.prisma differs from prisma/migrations:\n${sql}`).toBe(true);
  });

  it('are recorded like prisma migrate deploy and re-applying them applies nothing', async () => {
    expect(await applyMigrations(databaseUrl)).toEqual([]);
    const client = new pg.Client({ connectionString: databaseUrl });
    await client.connect();
    try {
      const rows = await client.query(
        'SELECT migration_name, finished_at FROM _prisma_migrations ORDER BY migration_name',
      );
      expect(rows.rowCount).toBeGreaterThan(0);
      for (const row of rows.rows) expect(row.finished_at).not.toBeNull();
    } finally {
      await client.end();
    }
  });

  it('record the checksums prisma/migrations/checksums.sha256 lists: the list is what every database holds', async () => {
    const client = new pg.Client({ connectionString: databaseUrl });
    await client.connect();
    try {
      const rows = await client.query<{ migration_name: string; checksum: string }>(
        'SELECT migration_name, checksum FROM _prisma_migrations',
      );
      expect(new Map(rows.rows.map((row) => [row.migration_name, row.checksum]))).toEqual(readShippedChecksums());
    } finally {
      await client.end();
    }
  });

  it('keep wallet_call append-only', async () => {
    const client = new pg.Client({ connectionString: databaseUrl });
    await client.connect();
    try {
      const inserted = await client.query(
        `INSERT INTO wallet_call (request_reference_no, service, operation, method, path, http_status, outcome, duration_ms, started_at)
         VALUES ($1, 'transfers', 'transfers.retrieve', 'GET', '/transfers/x', 200, 'ok', 5, now()) RETURNING id`,
        ['3b0f1d5e-8c1b-4c1e-9a51-0d9a6f0f2d11'],
      );
      const id = inserted.rows[0].id;
      await expect(client.query(`UPDATE wallet_call SET http_status = 500 WHERE id = $1`, [id])).rejects.toThrow(
        /append-only/,
      );
      await expect(client.query(`DELETE FROM wallet_call WHERE id = $1`, [id])).rejects.toThrow(/append-only/);
    } finally {
      await client.end();
    }
  });

  it('run on a database without PostgreSQL’s JIT, whether walletflow made it or the suite copied it from its template', async () => {
    const name = `walletflow_settings_${randomUUID().replace(/-/g, '')}`;
    const made = await ensureDatabaseExists(databaseUrl, name);
    try {
      for (const url of [made, testDatabaseUrl()]) {
        const client = new pg.Client({ connectionString: url });
        await client.connect();
        try {
          // Off by the database's own setting (the embedded server starts with it off too: its own is not enough for a
          // database of another server).
          const { rows } = await client.query<{ setting: string; source: string }>(
            "SELECT setting, source FROM pg_settings WHERE name = 'jit'",
          );
          expect(rows[0], url).toEqual({ setting: 'off', source: 'database' });
        } finally {
          await client.end();
        }
      }
    } finally {
      await dropDatabase(databaseUrl, name);
    }
  });

  it('leave no connection open once applied or diffed, so `walletflow migrate` exits when it is done', async () => {
    // A connection left in the pool, and a timer the engine left behind, kept `walletflow migrate` running for 10 s
    // after it printed what it applied.
    const name = `walletflow_migrate_${randomUUID().replace(/-/g, '')}`;
    const url = await ensureDatabaseExists(databaseUrl, name);
    const server = new pg.Client({ connectionString: databaseUrl });
    await server.connect();
    // The connections to the database once those ended have left pg_stat_activity (a backend leaves it a moment after
    // its client closed): a pool left open stays for its 10 s, past these 3.
    const connectionsTo = async (database: string) => {
      const deadline = Date.now() + 3000;
      for (;;) {
        const { rows } = await server.query<{ count: string }>(
          'SELECT count(*) FROM pg_stat_activity WHERE datname = $1',
          [database],
        );
        const count = Number(rows[0]!.count);
        if (count === 0 || Date.now() > deadline) return count;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    };
    // What keeps this process alive (sockets, ref'd timers), by kind: the engine left a timer of 10 s behind.
    const aliveBy = () =>
      process.getActiveResourcesInfo().reduce<Record<string, number>>((counts, kind) => {
        counts[kind] = (counts[kind] ?? 0) + 1;
        return counts;
      }, {});
    try {
      const aliveBefore = aliveBy();
      expect((await applyMigrations(url)).length).toBeGreaterThan(0);
      expect(aliveBy().Timeout ?? 0).toBeLessThanOrEqual(aliveBefore.Timeout ?? 0);
      expect(await connectionsTo(name)).toBe(0);
      const shadowDatabases = async () =>
        Number(
          (
            await server.query<{ count: string }>(
              "SELECT count(*) FROM pg_database WHERE datname LIKE 'prisma\\_migrate\\_shadow\\_db\\_%'",
            )
          ).rows[0]!.count,
        );
      const shadowsBefore = await shadowDatabases();
      expect(isEmptyMigration(await diffMigrationsToSchema(url))).toBe(true);
      expect(await connectionsTo(name)).toBe(0);
      // The diff's shadow database is dropped once it is done.
      expect(await shadowDatabases()).toBeLessThanOrEqual(shadowsBefore);
    } finally {
      await server.end();
      await dropDatabase(databaseUrl, name);
    }
  });

  it('refuse to apply a migration that creates an index left invalid under its name (a CREATE INDEX CONCURRENTLY that failed), naming it; an invalid index no pending migration creates stops nothing', async () => {
    // This worker's own database, made again after the file: one of its indexes marked invalid, as PostgreSQL leaves a
    // concurrent build that failed or was cancelled, or one under way.
    const url = testDatabaseUrl();
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    const mark = (valid: boolean, index = 'ops_action_at_id_idx') =>
      client.query(`UPDATE pg_index SET indisvalid = ${valid} WHERE indexrelid = '${index}'::regclass`);
    const creator = '20261127191233_console_pages';
    try {
      await mark(false);
      // Nothing to apply: a service's start while the index is being built by hand migrates nothing, and is not
      // refused. Before: every migrate refused while any index was invalid: no service started until the build ended.
      expect(await applyMigrations(url)).toEqual([]);
      // The migration that creates it (CREATE INDEX IF NOT EXISTS "ops_action_at_id_idx") not applied yet: it would
      // skip the invalid index, so nothing is migrated. (It drops the index it replaces: made again for it.)
      await client.query(`DELETE FROM _prisma_migrations WHERE migration_name = $1`, [creator]);
      await client.query(`CREATE INDEX "ops_action_at_idx" ON "ops_action" ("at")`);
      await expect(applyMigrations(url)).rejects.toThrow(
        /nothing migrated: an index is invalid: ops_action_at_id_idx \(on ops_action\)\. .*DROP INDEX CONCURRENTLY/,
      );
      // The index valid again, and the one that migration drops (DROP INDEX "ops_action_at_idx") invalid instead: a
      // pending migration that names it without creating it is no refusal. It is applied.
      await mark(true);
      await mark(false, 'ops_action_at_idx');
      expect(await applyMigrations(url)).toEqual([creator]);
    } finally {
      await mark(true);
      await client.end();
    }
  });
});
