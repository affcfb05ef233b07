// The list of shipped migrations' checksums, prisma/migrations/checksums.sha256, in sha256sum's
// format (`<hex>  <directory>/migration.sql`): the SHA-256 that prisma migrate records in
// _prisma_migrations.checksum for each file. A migration that shipped never changes
// (test/unit/shipped-migrations.test.ts); a new one gets its line from `npm run db:migration:new`.
import { createHash } from 'node:crypto';
import { appendFileSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { projectRoot } from '../lib/project-root.ts';

export const migrationsDir = path.join(projectRoot, 'prisma/migrations');

export const checksumsFile = path.join(migrationsDir, 'checksums.sha256');

export const sha256Of = (content: string | Uint8Array): string => createHash('sha256').update(content).digest('hex');

/** Directory name → the checksum it shipped with. */
export function readShippedChecksums(): Map<string, string> {
  const listed = new Map<string, string>();
  for (const line of readFileSync(checksumsFile, 'utf8').split('\n')) {
    if (line.trim() === '') continue;
    const match = /^([0-9a-f]{64}) {2}([^/]+)\/migration\.sql$/.exec(line);
    if (!match) throw new Error(`${checksumsFile}: not a sha256sum line: ${line}`);
    listed.set(match[2]!, match[1]!);
  }
  return listed;
}

/** Records a new migration's checksum (npm run db:migration:new). */
export function recordChecksum(directory: string, content: string): void {
  appendFileSync(checksumsFile, `${sha256Of(content)}  ${directory}/migration.sql\n`);
}
