// Replays every stored purgeExpired history (current and archived) against today's workflow
// bundle: a purge of expired logins and sessions.
import { describe, expect, it } from 'vitest';
import { purgeExpiredWorkflowType } from '../../workflows/purge-expired.contract.ts';
import { historyPaths, installQuietReplayRuntime, storedHistoriesOf } from '../support/replay-histories.ts';
import { itReplaysEachAgainstTodaysCode } from '../support/replay-each.ts';

installQuietReplayRuntime();
const stored = storedHistoriesOf(purgeExpiredWorkflowType);

describe('purgeExpired replay', () => {
  it('has a stored history for every purge path', () => {
    expect(stored).toEqual(expect.arrayContaining([...historyPaths[purgeExpiredWorkflowType]]));
  });

  itReplaysEachAgainstTodaysCode(stored);
});
