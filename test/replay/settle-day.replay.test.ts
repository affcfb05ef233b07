// Replays every stored settleDay history (current and archived) against today's workflow bundle: a
// day settled in one run, the first run of a day that continues as new, and the last run of such a
// chain (its input carries where the run before got to). settleDay is auto-upgrade (a big day's
// run moves to the current build), so a change to its commands must replay these or go behind
// patched() (docs/changing-workflows.md). Each history shows the path it is named for.
import { describe, expect, it } from 'vitest';
import { settleDayWorkflowType, type SettleDayInput } from '../../workflows/settle-day.contract.ts';
import {
  historyFacts,
  historyPaths,
  installQuietReplayRuntime,
  readStoredHistory,
  storedHistoriesOf,
} from '../support/replay-histories.ts';
import { itReplaysEachAgainstTodaysCode } from '../support/replay-each.ts';

installQuietReplayRuntime();
const stored = storedHistoriesOf(settleDayWorkflowType);

describe('settleDay replay', () => {
  it('has a stored history for every settlement path', () => {
    expect(stored).toEqual(expect.arrayContaining([...historyPaths[settleDayWorkflowType]]));
  });

  itReplaysEachAgainstTodaysCode(stored);

  it('each path shows what it is named for: one run; a run that continues as new; the run that finishes a chain', async () => {
    const settled = historyFacts(await readStoredHistory('settlement-settled'));
    expect(settled).toMatchObject({
      activities: ['beginSettlementRun', 'settleItems', 'settleItems', 'finishSettlementRun'],
      continuedAsNew: false,
      patches: [],
      result: { checked: 1, matched: 1 },
    });
    const continued = historyFacts(await readStoredHistory('settlement-continued-as-new'));
    expect(continued).toMatchObject({
      activities: ['beginSettlementRun', 'settleItems', 'settleItems'],
      continuedAsNew: true,
      patches: [],
    });
    const finished = historyFacts(await readStoredHistory('settlement-continued-finished'));
    expect(finished).toMatchObject({
      activities: ['settleItems', 'finishSettlementRun'],
      continuedAsNew: false,
      patches: [],
      result: { checked: 6, matched: 6 },
    });
    // Ids, dates, cursors and counts only.
    expect(finished.input as SettleDayInput).toEqual({
      runId: expect.any(String),
      date: expect.stringMatching(/^\d{4}-\d{2}-\d{2}$/),
      maxInFlight: 4,
      pageSize: 2,
      itemsPerActivity: 2,
      activitiesPerRun: 2,
      side: 'payments',
      after: null,
      inFlight: expect.any(Number),
      rateLimited: 0,
    });
  });
});
