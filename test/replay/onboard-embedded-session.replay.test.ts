// Replays every stored onboardEmbeddedSession history against today's workflow bundle: linked, the
// profile refused (REAUTH_REQUIRED), the profile unavailable until the retries ran out
// (failEmbeddedSession); each runs its steps as local activities, past the gate the previous release's
// histories (archive/release-360981c, replayed here too) need.
import { describe, expect, it } from 'vitest';
import { onboardEmbeddedSessionWorkflowType } from '../../workflows/onboard-embedded-session.contract.ts';
import { localStepsPatch } from '../../workflows/onboard-embedded-session.ts';
import {
  historyFacts,
  historyPaths,
  installQuietReplayRuntime,
  readStoredHistory,
  storedHistoriesOf,
} from '../support/replay-histories.ts';
import { itReplaysEachAgainstTodaysCode } from '../support/replay-each.ts';

installQuietReplayRuntime();
const stored = storedHistoriesOf(onboardEmbeddedSessionWorkflowType);

describe('onboardEmbeddedSession replay', () => {
  it('has a stored history for every onboarding path', () => {
    expect(stored).toEqual(expect.arrayContaining([...historyPaths[onboardEmbeddedSessionWorkflowType]]));
  });

  itReplaysEachAgainstTodaysCode(stored);
});

describe('onboardEmbeddedSession paths: what each stored history shows', () => {
  it.each(stored.filter((name) => !name.startsWith('archive/')))(
    '%s: its steps are local activities (no activity task), past the local-steps gate',
    async (name) => {
      const history = (await readStoredHistory(name)) as { events: Array<{ eventType: string }> };
      const { activities, patches } = historyFacts(history);
      expect(activities[0]).toBe('linkEmbeddedSession');
      expect(history.events.filter((event) => event.eventType === 'EVENT_TYPE_ACTIVITY_TASK_SCHEDULED')).toEqual([]);
      expect(patches).toEqual([localStepsPatch]);
    },
  );

  it('onboarding-profile-unavailable: linkEmbeddedSession’s retries run out, then failEmbeddedSession', async () => {
    const { activities, result } = historyFacts(await readStoredHistory('onboarding-profile-unavailable'));
    expect(activities).toEqual(['linkEmbeddedSession', 'failEmbeddedSession']);
    expect(result).toMatchObject({ status: 'FAILED', errorCode: 'ONBOARDING_FAILED' });
  });
});
