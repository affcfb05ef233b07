// Replays every stored fundBatch history (current and archived) against today's workflow bundle:
// a batch run to completion, and one paused, resumed and cancelled while its items ran.
import { describe, expect, inject, it } from 'vitest';
import { fundBatchWorkflowType } from '../../workflows/fund-batch.contract.ts';
import { historyPaths, installQuietReplayRuntime, replayStored, storedHistoriesOf } from '../support/replay-histories.ts';

installQuietReplayRuntime();
const stored = storedHistoriesOf(fundBatchWorkflowType);

describe('fundBatch replay', () => {
  it('has a stored history for every batch path', () => {
    expect(stored).toEqual(expect.arrayContaining([...historyPaths[fundBatchWorkflowType]]));
  });

  it.each(stored)('%s replays against today’s workflow code', async (name) => {
    const [result, ...more] = await replayStored({ workflowBundle: { codePath: inject('workflowBundlePath') } }, [name]);
    expect(more).toEqual([]);
    expect(result?.workflowId).toBe(name);
    expect(result?.error).toBeUndefined();
  });
});
