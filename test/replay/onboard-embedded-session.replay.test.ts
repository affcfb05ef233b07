// Replays every stored onboardEmbeddedSession history (current and archived) against today's
// workflow bundle: linked, the profile refused (REAUTH_REQUIRED), the profile unavailable until
// the retries ran out (failEmbeddedSession).
import { describe, expect, inject, it } from 'vitest';
import { onboardEmbeddedSessionWorkflowType } from '../../workflows/onboard-embedded-session.contract.ts';
import { historyPaths, installQuietReplayRuntime, replayStored, storedHistoriesOf } from '../support/replay-histories.ts';

installQuietReplayRuntime();
const stored = storedHistoriesOf(onboardEmbeddedSessionWorkflowType);

describe('onboardEmbeddedSession replay', () => {
  it('has a stored history for every onboarding path', () => {
    expect(stored).toEqual(expect.arrayContaining([...historyPaths[onboardEmbeddedSessionWorkflowType]]));
  });

  it.each(stored)('%s replays against today’s workflow code', async (name) => {
    const [result, ...more] = await replayStored({ workflowBundle: { codePath: inject('workflowBundlePath') } }, [name]);
    expect(more).toEqual([]);
    expect(result?.workflowId).toBe(name);
    expect(result?.error).toBeUndefined();
  });
});
