// Replays every stored reconcileFundings history (current and archived) against today's workflow
// bundle: a sweep that repaired stuck fundings.
import { describe, expect, it } from 'vitest';
import { reconcileFundingsWorkflowType } from '../../workflows/sweep.contract.ts';
import { historyPaths, installQuietReplayRuntime, storedHistoriesOf } from '../support/replay-histories.ts';
import { itReplaysEachAgainstTodaysCode } from '../support/replay-each.ts';

installQuietReplayRuntime();
const stored = storedHistoriesOf(reconcileFundingsWorkflowType);

describe('reconcileFundings replay', () => {
  it('has a stored history for every sweep path', () => {
    expect(stored).toEqual(expect.arrayContaining([...historyPaths[reconcileFundingsWorkflowType]]));
  });

  itReplaysEachAgainstTodaysCode(stored);
});
