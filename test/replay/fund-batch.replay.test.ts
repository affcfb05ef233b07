// Replays every stored fundBatch history (current and archived) against today's workflow bundle:
// a batch run to completion, and one paused, resumed and cancelled while its items ran. fundBatch
// is auto-upgrade (its runs move to the current build), so a change to its commands must replay
// these: unguarded it is refused, behind patched() it is not (docs/changing-workflows.md).
import { fileURLToPath } from 'node:url';
import { DeterminismViolationError } from '@temporalio/workflow';
import { describe, expect, it } from 'vitest';
import { fundBatchWorkflowType } from '../../workflows/fund-batch.contract.ts';
import {
  historyPaths,
  installQuietReplayRuntime,
  replayStored,
  storedHistoriesOf,
} from '../support/replay-histories.ts';
import { itReplaysARunStartedWithAnIgnoredWait, itReplaysEachAgainstTodaysCode } from '../support/replay-each.ts';

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

  itReplaysARunStartedWithAnIgnoredWait(stored);

  it('replays every history once the same change sits behind patched()', async () => {
    const results = await replayStored({ workflowsPath: fixture('patched-fund-batch-workflows.ts') }, stored);
    expect(results.map((result) => [result.workflowId, result.error])).toEqual(stored.map((name) => [name, undefined]));
  });
});
