// Replays every stored fundWallet history (test/replay/histories, current and archived) against
// today's workflow bundle: a change that would break running fundings fails here, by path name.
// The secret scan of every stored history is in stored-histories.test.ts.
import { fileURLToPath } from 'node:url';
import { DeterminismViolationError } from '@temporalio/workflow';
import { describe, expect, inject, it } from 'vitest';
import { fundWalletWorkflowType } from '../../workflows/fund-wallet.contract.ts';
import { historyPaths, installQuietReplayRuntime, replayStored, storedHistoriesOf } from '../support/replay-histories.ts';

installQuietReplayRuntime();
const stored = storedHistoriesOf(fundWalletWorkflowType);

const fixture = (file: string) => fileURLToPath(new URL(`./fixtures/${file}`, import.meta.url));

describe('fundWallet replay', () => {
  it('has a stored history for every funding path', () => {
    expect(stored).toEqual(expect.arrayContaining([...historyPaths[fundWalletWorkflowType]]));
  });

  it.each(stored)('%s replays against today’s workflow code', async (name) => {
    const [result, ...more] = await replayStored({ workflowBundle: { codePath: inject('workflowBundlePath') } }, [name]);
    expect(more).toEqual([]);
    expect(result?.workflowId).toBe(name);
    // The error itself, not just "defined": its message names the mismatching command.
    expect(result?.error).toBeUndefined();
  });

  it('detects a reordered activity call: replay checks something', async () => {
    const results = await replayStored({ workflowsPath: fixture('reordered-workflows.ts') }, stored);
    expect(results).toHaveLength(stored.length);
    for (const result of results) {
      expect(result.error, result.workflowId).toBeInstanceOf(DeterminismViolationError);
    }
  });

  it('replays every history once the same change sits behind patched()', async () => {
    const results = await replayStored({ workflowsPath: fixture('patched-workflows.ts') }, stored);
    expect(results.map((result) => [result.workflowId, result.error])).toEqual(stored.map((name) => [name, undefined]));
  });
});
