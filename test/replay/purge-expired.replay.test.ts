// Replays every stored purgeExpired history (current and archived) against today's workflow
// bundle: a purge of expired logins and sessions.
import { describe, expect, inject, it } from 'vitest';
import { purgeExpiredWorkflowType } from '../../workflows/purge-expired.contract.ts';
import {
  historyPaths,
  installQuietReplayRuntime,
  replayStored,
  storedHistoriesOf,
} from '../support/replay-histories.ts';

installQuietReplayRuntime();
const stored = storedHistoriesOf(purgeExpiredWorkflowType);

describe('purgeExpired replay', () => {
  it('has a stored history for every purge path', () => {
    expect(stored).toEqual(expect.arrayContaining([...historyPaths[purgeExpiredWorkflowType]]));
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
