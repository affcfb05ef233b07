// worker/heap-policy.ts: the flags the worker sets on its own V8 exist in this Node's V8.
// v8.setFlagsFromString ignores a flag it does not know, so a Node upgrade that dropped one would
// quietly take the policy away; node's command line refuses an unknown flag, which this checks.
// And the worker says which malloc it runs on (its `worker polling` line).
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import path from 'node:path';
import { findJemalloc } from '../../stack/child-process.ts';
import { nativeAllocator, workerV8Flags } from '../../worker/heap-policy.ts';

describe('the worker heap policy', () => {
  it.each(workerV8Flags)('%s is a flag this V8 knows', (flag) => {
    const result = spawnSync(process.execPath, [flag, '-e', '0'], { encoding: 'utf8' });
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
  });

  it('an unknown flag is refused the same way (the check above can fail)', () => {
    const result = spawnSync(process.execPath, ['--heap-growing-percentage=25', '-e', '0'], { encoding: 'utf8' });
    expect(result.status).not.toBe(0);
  });
});

describe('nativeAllocator', () => {
  const root = path.resolve(import.meta.dirname, '../..');
  const allocatorOf = (env: NodeJS.ProcessEnv) =>
    spawnSync(
      process.execPath,
      ['--import', 'tsx', '-e', "import('./worker/heap-policy.ts').then((m) => console.log(m.nativeAllocator()))"],
      {
        cwd: root,
        env,
        encoding: 'utf8',
      },
    ).stdout.trim();

  it('is glibc in a process nothing was preloaded into', () => {
    // This test process too: jemalloc only if whoever ran the suite preloaded it.
    expect(nativeAllocator()).toBe((process.env.LD_PRELOAD ?? '').includes('libjemalloc') ? 'jemalloc' : 'glibc');
    expect(allocatorOf({ ...process.env, LD_PRELOAD: '' })).toBe('glibc');
  });

  const jemalloc = findJemalloc();
  it.skipIf(!jemalloc)('is jemalloc when the stacks preload it', () => {
    expect(allocatorOf({ ...process.env, LD_PRELOAD: jemalloc! })).toBe('jemalloc');
  });
});
