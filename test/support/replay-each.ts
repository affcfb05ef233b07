// The replay files' first promise, declared once: one test per stored history, "<name> replays against
// today's workflow code". Every history of the file is replayed by one replay worker on the suite's
// bundle, the first time a test asks; each test reads its own result. A replay worker per history
// loaded the bundle into a workflow context each time: about 0.14 s a history, 54 of them for
// fundWallet alone.
import type { ReplayResult } from '@temporalio/worker';
import { expect, inject, it } from 'vitest';
import { replayStored, replayStoredWithInput } from './replay-histories.ts';

export function itReplaysEachAgainstTodaysCode(stored: string[]): void {
  let replayed: Promise<Map<string, ReplayResult>> | undefined;
  const resultOf = async (name: string) => {
    replayed ??= replayStored({ workflowBundle: { codePath: inject('workflowBundlePath') } }, stored).then(
      (results) => new Map(results.map((result) => [result.workflowId, result])),
    );
    const results = await replayed;
    // Each history once, and nothing else.
    expect([...results.keys()].sort()).toEqual([...stored].sort());
    return results.get(name);
  };
  it.each(stored)('%s replays against today’s workflow code', async (name) => {
    const result = await resultOf(name);
    expect(result?.workflowId).toBe(name);
    // The error itself, not just "defined": its message names the mismatching command.
    expect(result?.error).toBeUndefined();
  });
}

/**
 * A run a build before the carried wait (workflows/in-flight-rate.ts CARRIED_WAIT_PATCH) started with a `resumeAt` in
 * its input, which it ignored: today's code replays it as that build ran it (a run continued as new with a wait
 * pending, moved back by a rollback, then promoted again).
 */
export function itReplaysARunStartedWithAnIgnoredWait(stored: string[]): void {
  it('replays a run a build before the carried wait started with a resumeAt in its input (it ignored it, and so does this build)', async () => {
    const bundle = { workflowBundle: { codePath: inject('workflowBundlePath') } };
    const results = await replayStoredWithInput(bundle, stored, (input) => ({
      ...input,
      resumeAt: Date.parse('2999-01-01T00:00:00Z'),
    }));
    expect(results.map((result) => [result.workflowId, result.error])).toEqual(stored.map((name) => [name, undefined]));
  });
}
