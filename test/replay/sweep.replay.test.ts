// Replays every stored reconcileFundings history (current and archived) against today's workflow
// bundle: a sweep that repaired stuck fundings.
import { describe, expect, inject, it } from 'vitest';
import { reconcileFundingsWorkflowType } from '../../workflows/sweep.contract.ts';
import {
  historyPaths,
  installQuietReplayRuntime,
  replayStored,
  storedHistoriesOf,
} from '../support/replay-histories.ts';

installQuietReplayRuntime();
const stored = storedHistoriesOf(reconcileFundingsWorkflowType);

describe('reconcileFundings replay', () => {
  it('has a stored history for every sweep path', () => {
    expect(stored).toEqual(expect.arrayContaining([...historyPaths[reconcileFundingsWorkflowType]]));
  });

  it.each(stored)('%s replays against today’s workflow code', async (name) => {
    const [result, ...more] = await replayStored({ workflowBundle: { codePath: inject('workflowBundlePath') } }, [
      name,
    ]);
    expect(more).toEqual([]);
    expect(result?.workflowId).toBe(name);
    expect(result?.error).toBeUndefined();
  });
});
