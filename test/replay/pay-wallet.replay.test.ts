// Replays every stored payWallet history against today's workflow bundle (success, insufficient
// balance, the review paths that end by the `resolve` update, the lost answer, the rate limits, a
// resumed run) and reads what each shows, and the previous release's histories (archive/release-360981c):
// its unversioned runs move to today's build and replay on the gates it keeps for them.
import { fileURLToPath } from 'node:url';
import { DeterminismViolationError } from '@temporalio/workflow';
import { describe, expect, it } from 'vitest';
import { payWalletWorkflowType } from '../../workflows/pay-wallet.contract.ts';
import {
  alreadyExecutedSucceededPatch,
  localDatabaseStepsPatch,
  MAX_NOT_SENT,
  resumedCountsUnknownPatch,
} from '../../workflows/pay-wallet.ts';
import {
  historyFacts,
  historyPaths,
  installQuietReplayRuntime,
  readStoredHistory,
  replayStored,
  storedHistoriesOf,
} from '../support/replay-histories.ts';
import { itReplaysEachAgainstTodaysCode } from '../support/replay-each.ts';

installQuietReplayRuntime();
const stored = storedHistoriesOf(payWalletWorkflowType);

const fixture = (file: string) => fileURLToPath(new URL(`./fixtures/${file}`, import.meta.url));

describe('payWallet replay', () => {
  it('has a stored history for every payment path', () => {
    expect(stored).toEqual(expect.arrayContaining([...historyPaths[payWalletWorkflowType]]));
  });

  itReplaysEachAgainstTodaysCode(stored);

  it('detects a reordered activity call: replay checks something', async () => {
    const results = await replayStored({ workflowsPath: fixture('reordered-pay-wallet-workflows.ts') }, stored);
    expect(results).toHaveLength(stored.length);
    for (const result of results) {
      expect(result.error, result.workflowId).toBeInstanceOf(DeterminismViolationError);
    }
  });
});

const facts = async (name: string) => historyFacts(await readStoredHistory(name));
const count = (activities: string[], type: string) => activities.filter((activity) => activity === type).length;

describe('payWallet paths: what each stored history shows', () => {
  it('every path captured today takes today’s branch at the previous release’s gates (a new run records their markers)', async () => {
    const current = stored.filter((name) => !name.startsWith('archive/'));
    expect(current.length).toBeGreaterThan(0);
    for (const name of current) {
      const { patches } = await facts(name);
      expect(patches[0], name).toBe(localDatabaseStepsPatch);
      expect(
        patches.every((patch) =>
          [localDatabaseStepsPatch, alreadyExecutedSucceededPatch, resumedCountsUnknownPatch].includes(patch),
        ),
        name,
      ).toBe(true);
    }
  });

  it('payment-lost-answer-review-resolved: an execute refused after one whose answer was lost goes to review; the resolve update ends it', async () => {
    const { result, activities, updatesCompleted } = await facts('payment-lost-answer-review-resolved');
    expect(activities.slice(-2)).toEqual(['parkForReview', 'resolvePayment']);
    expect(updatesCompleted).toBe(1);
    expect(result).toMatchObject({ status: 'SUCCEEDED' });
  });

  it('payment-lost-answer-already-executed: PAYMENT_ALREADY_EXECUTED after a lost answer ends it SUCCEEDED, no review', async () => {
    const { result, activities, updatesCompleted } = await facts('payment-lost-answer-already-executed');
    expect(result).toMatchObject({ status: 'SUCCEEDED', errorCode: null });
    expect(count(activities, 'executePayment')).toBe(2);
    expect(activities).not.toContain('parkForReview');
    expect(activities.at(-1)).toBe('finishPayment');
    expect(updatesCompleted).toBe(0);
  });

  it('payment-not-sent-exhausted-failed: MAX_NOT_SENT executes refused with 429, Retry-After timers between, then FAILED', async () => {
    const { result, activities, timers } = await facts('payment-not-sent-exhausted-failed');
    expect(result).toMatchObject({ status: 'FAILED', errorCode: 'RATE_LIMITED' });
    expect(count(activities, 'executePayment')).toBe(MAX_NOT_SENT);
    expect(timers).toBe(MAX_NOT_SENT - 1);
    expect(activities).not.toContain('parkForReview');
  });

  it('payment-resumed-executing-succeeded: a run started by the sweep in EXECUTING counts the earlier execute and ends SUCCEEDED', async () => {
    const { result, activities } = await facts('payment-resumed-executing-succeeded');
    expect(result).toMatchObject({ status: 'SUCCEEDED', errorCode: null });
    expect(activities).toEqual(['loadPayment', 'executePayment', 'finishPayment']);
  });
});
