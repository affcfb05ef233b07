// The replay files' first promise, declared once: one test per stored history, "<name> replays against
// today's workflow code". Every history of the file is replayed by one replay worker on the suite's
// bundle, the first time a test asks; each test reads its own result. A replay worker per history
// loaded the bundle into a workflow context each time: about 0.14 s a history, 54 of them for
// fundWallet alone.
import type { ReplayResult } from '@temporalio/worker';
import { expect, inject, it } from 'vitest';
import { replayStored } from './replay-histories.ts';

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
