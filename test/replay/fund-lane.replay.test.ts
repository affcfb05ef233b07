// Replays every stored fundLane history against today's workflow bundle: a lane's first run, which
// carried a funding to APPROVED and one to REJECTED, then waited, then continued as new. fundLane
// is auto-upgrade (a lane runs for as long as the deployment does and moves to the current build),
// so a change to its commands must replay these: unguarded it is refused, behind patched() it is
// not (docs/changing-workflows.md).
import { describe, expect, it } from 'vitest';
import { fundLaneWorkflowType } from '../../workflows/fund-lane.contract.ts';
import { historyPaths, installQuietReplayRuntime, storedHistoriesOf } from '../support/replay-histories.ts';
import { itReplaysARunStartedWithAnIgnoredWait, itReplaysEachAgainstTodaysCode } from '../support/replay-each.ts';

installQuietReplayRuntime();
const stored = storedHistoriesOf(fundLaneWorkflowType);

describe('fundLane replay', () => {
  it('has a stored history for every lane path', () => {
    expect(stored).toEqual(expect.arrayContaining([...historyPaths[fundLaneWorkflowType]]));
  });

  itReplaysEachAgainstTodaysCode(stored);

  itReplaysARunStartedWithAnIgnoredWait(stored);
});
