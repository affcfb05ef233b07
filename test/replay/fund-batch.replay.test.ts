// Replays every stored fundBatch history (current and archived) against today's workflow bundle:
// a batch run to completion, and one paused, resumed and cancelled while its items ran. fundBatch
// is auto-upgrade (its runs move to the current build), so a change to its commands must replay
// these: unguarded it is refused, behind patched() it is not (docs/changing-workflows.md).
import { fileURLToPath } from 'node:url';
import { DeterminismViolationError } from '@temporalio/workflow';
import { describe, expect, inject, it } from 'vitest';
import { fundBatchWorkflowType } from '../../workflows/fund-batch.contract.ts';
import {
  historyPaths,
  installQuietReplayRuntime,
  replayStored,
  replayStoredWithInput,
  storedHistoriesOf,
} from '../support/replay-histories.ts';
import { itReplaysEachAgainstTodaysCode } from '../support/replay-each.ts';

installQuietReplayRuntime();
const stored = storedHistoriesOf(fundBatchWorkflowType);

const fixture = (file: string) => fileURLToPath(new URL(`./fixtures/${file}`, import.meta.url));

describe('fundBatch replay', () => {
  it('has a stored history for every batch path', () => {
    expect(stored).toEqual(expect.arrayContaining([...historyPaths[fundBatchWorkflowType]]));
  });

  itReplaysEachAgainstTodaysCode(stored);

  it('detects a reordered activity call: replay checks something', async () => {
    const results = await replayStored({ workflowsPath: fixture('reordered-fund-batch-workflows.ts') }, stored);
    expect(results).toHaveLength(stored.length);
    for (const result of results) {
      expect(result.error, result.workflowId).toBeInstanceOf(DeterminismViolationError);
    }
  });

  it('replays a run a build before the carried wait started with a resumeAt in its input (it ignored it, and so does this build)', async () => {
    // A run continued as new on this build with a wait pending, moved back by a rollback, starts on a build that does
    // not know `resumeAt` and dispatches at once; promoted again, this build replays it. Before the patch
    // (in-flight-rate.ts CARRIED_WAIT_PATCH), it waited first: a timer where the history has an activity.
    const bundle = { workflowBundle: { codePath: inject('workflowBundlePath') } };
    const results = await replayStoredWithInput(bundle, stored, (input) => ({
      ...input,
      resumeAt: Date.parse('2999-01-01T00:00:00Z'),
    }));
    expect(results.map((result) => [result.workflowId, result.error])).toEqual(stored.map((name) => [name, undefined]));
  });

  it('replays every history once the same change sits behind patched()', async () => {
    const results = await replayStored({ workflowsPath: fixture('patched-fund-batch-workflows.ts') }, stored);
    expect(results.map((result) => [result.workflowId, result.error])).toEqual(stored.map((name) => [name, undefined]));
  });
});
