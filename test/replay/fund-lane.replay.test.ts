// Replays every stored fundLane history against today's workflow bundle: a lane's first run, which
// carried a funding to APPROVED and one to REJECTED, then waited, then continued as new. fundLane
// is auto-upgrade (a lane runs for as long as the deployment does and moves to the current build),
// so a change to its commands must replay these: unguarded it is refused, behind patched() it is
// not (docs/changing-workflows.md).
import { describe, expect, inject, it } from 'vitest';
import { fundLaneWorkflowType } from '../../workflows/fund-lane.contract.ts';
import {
  historyPaths,
  installQuietReplayRuntime,
  replayStoredWithInput,
  storedHistoriesOf,
} from '../support/replay-histories.ts';
import { itReplaysEachAgainstTodaysCode } from '../support/replay-each.ts';

installQuietReplayRuntime();
const stored = storedHistoriesOf(fundLaneWorkflowType);

describe('fundLane replay', () => {
  it('has a stored history for every lane path', () => {
    expect(stored).toEqual(expect.arrayContaining([...historyPaths[fundLaneWorkflowType]]));
  });

  itReplaysEachAgainstTodaysCode(stored);

  it('replays a run a build before the carried wait started with a resumeAt in its input (it ignored it, and so does this build)', async () => {
    // As fund-batch.replay.test.ts's: a lane continued as new with a wait pending, then run on a build before it.
    const bundle = { workflowBundle: { codePath: inject('workflowBundlePath') } };
    const results = await replayStoredWithInput(bundle, stored, (input) => ({
      ...input,
      resumeAt: Date.parse('2999-01-01T00:00:00Z'),
    }));
    expect(results.map((result) => [result.workflowId, result.error])).toEqual(stored.map((name) => [name, undefined]));
  });
});
