// The workflow bundle made once per version of the code (harness/workflow-bundle-file.ts): the suite's
// global setup, the soak's and bench's stacks and `walletflow dev` take the bundle a run before made of
// the same sources instead of a webpack run each; its traced twin is where a worker looks for it.
import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, inject, it } from 'vitest';
import { sourcesDigest } from '../../harness/compiled-code.ts';
import { workflowBundleFile, workflowBundlesRoot } from '../../harness/workflow-bundle-file.ts';
import { buildIdOf } from '../../lib/workflow-bundle.ts';
import { tracedBundlePath } from '../../lib/tracing-bundle.ts';
import { fundWalletWorkflowType } from '../../workflows/fund-wallet.contract.ts';

describe('the workflow bundle of the code', () => {
  it('is found again by the name of the sources it was made of, not made again; the suite runs one of them', async () => {
    // The suite's: made (or found) by the global setup, of the sources as they were when the run began.
    expect(path.dirname(inject('workflowBundlePath'))).toBe(workflowBundlesRoot);
    const file = await workflowBundleFile();
    expect(path.dirname(file)).toBe(workflowBundlesRoot);
    expect(path.basename(file).startsWith(`${sourcesDigest()}-`)).toBe(true);
    const before = await stat(file);
    expect(await workflowBundleFile()).toBe(file);
    // The same file: not written again (its inode and size), only marked as in use.
    const after = await stat(file);
    expect([after.ino, after.size]).toEqual([before.ino, before.size]);
    const code = await readFile(file, 'utf8');
    expect(code).toContain(fundWalletWorkflowType);
    expect(code).not.toContain('_tracer-data');
  });

  it('has its traced twin where a worker with tracing on looks for it, with the interceptors in it', async () => {
    const plain = await workflowBundleFile();
    const traced = await workflowBundleFile({ tracing: true });
    expect(traced).toBe(tracedBundlePath(plain));
    const code = await readFile(traced, 'utf8');
    expect(code).toContain('_tracer-data');
    expect(buildIdOf(code)).not.toBe(buildIdOf(await readFile(plain, 'utf8')));
  }, 120_000);
});
