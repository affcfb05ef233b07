// The schema and its migrations: they agree, they apply offline, and the wallet call record is
// append-only.
import { inject, describe, expect, it } from 'vitest';
import pg from 'pg';
import { applyMigrations, diffMigrationsToSchema, isEmptyMigration } from '../../prisma/schema-engine.ts';
import { readShippedChecksums } from '../../prisma/migration-checksums.ts';

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
});
