// Applied migrations are never edited (promise 17b): a database records each migration's SHA-256
// in _prisma_migrations, so a shipped file changed by even a comment no longer matches what every
// existing database applied. prisma/migrations/checksums.sha256 (sha256sum's format, so
// `cd prisma/migrations && sha256sum -c checksums.sha256` checks it too) holds one line per
// migration; `npm run db:migration:new` appends the new one's line. A change a database needs is a
// new migration, never an edit of one that shipped.
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { checksumsFile, migrationsDir, readShippedChecksums, sha256Of } from '../../prisma/migration-checksums.ts';
import { projectRoot } from '../../lib/project-root.ts';

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

  // An edit committed together with its new checksum passes the check above: the checksums' own history is the
  // record. Every checksum a commit ever listed is today's, but for the two edits made before this was checked (what
  // they added is added again by 20261204060000_funding_lanes_edits_again, for a database that applied the file before
  // them).
  it('lists every migration with the checksum it was first committed with: no commit edited one', () => {
    const known = new Set([
      '20261202121733_funding_lanes/migration.sql a64536e5',
      '20261202121733_funding_lanes/migration.sql a626dae7',
    ]);
    const relative = path.relative(projectRoot, checksumsFile);
    const git = (...args: string[]) => execFileSync('git', args, { cwd: projectRoot, encoding: 'utf8' });
    // The whole history, every branch of a merge too: a shallow clone would hold only today's list, and prove nothing.
    expect(git('rev-parse', '--is-shallow-repository').trim(), 'a shallow clone: fetch the whole history').toBe(
      'false',
    );
    const commits = git('log', '--full-history', '--format=%H', '--', relative).split('\n').filter(Boolean);
    const today = new Map(
      readFileSync(checksumsFile, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((line) => [line.slice(66), line.slice(0, 64)] as const),
    );
    const edited: string[] = [];
    for (const commit of commits)
      for (const line of git('show', `${commit}:${relative}`).split('\n').filter(Boolean)) {
        const [file, sum] = [line.slice(66), line.slice(0, 64)];
        if (today.get(file) !== sum && !known.has(`${file} ${sum.slice(0, 8)}`))
          edited.push(
            `${file}: ${sum.slice(0, 8)} at ${commit.slice(0, 7)}, ${today.get(file)?.slice(0, 8) ?? 'gone'} now`,
          );
      }
    expect(edited, 'a shipped migration was changed: restore it and put the change in a new migration').toEqual([]);
    expect(commits.length).toBeGreaterThan(0);
  });
});
