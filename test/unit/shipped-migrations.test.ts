// Applied migrations are never edited (promise 17b): a database records each migration's SHA-256
// in _prisma_migrations, so a shipped file changed by even a comment no longer matches what every
// existing database applied. prisma/migrations/checksums.sha256 (sha256sum's format, so
// `cd prisma/migrations && sha256sum -c checksums.sha256` checks it too) holds one line per
// migration; `npm run db:migration:new` appends the new one's line. A change a database needs is a
// new migration, never an edit of one that shipped.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { migrationsDir, readShippedChecksums, sha256Of } from '../../prisma/migration-checksums.ts';

const directories = readdirSync(migrationsDir, { withFileTypes: true })
  .filter((entry) => entry.isDirectory())
  .map((entry) => entry.name)
  .sort();

describe('shipped migrations', () => {
  const listed = readShippedChecksums();

  it('every migration has its checksum listed, and every listed one exists', () => {
    expect([...listed.keys()].sort()).toEqual(directories);
  });

  it.each(directories)('%s is byte for byte what shipped', (directory) => {
    const content = readFileSync(path.join(migrationsDir, directory, 'migration.sql'));
    expect(
      sha256Of(content),
      `${directory}/migration.sql changed after it shipped: restore it (git log -p on the file) and put the change in a new migration`,
    ).toBe(listed.get(directory));
  });
});
