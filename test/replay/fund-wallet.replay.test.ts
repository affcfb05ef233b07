// Replays every stored fundWallet history (test/replay/histories, current and archived) against
// today's workflow bundle: a change that would break running fundings fails here, by path name.
// The secret scan of every stored history is in stored-histories.test.ts.
import { fileURLToPath } from 'node:url';
import { DeterminismViolationError } from '@temporalio/workflow';
import { describe, expect, inject, it } from 'vitest';
import { fundWalletWorkflowType } from '../../workflows/fund-wallet.contract.ts';
import { localDatabaseStepsPatch, reviewAfterUnknownPatch } from '../../workflows/fund-wallet.ts';
import { historyFacts, historyPaths, installQuietReplayRuntime, readStoredHistory, replayStored, storedHistoriesOf } from '../support/replay-histories.ts';

installQuietReplayRuntime();
const stored = storedHistoriesOf(fundWalletWorkflowType);

const fixture = (file: string) => fileURLToPath(new URL(`./fixtures/${file}`, import.meta.url));

describe('fundWallet replay', () => {
  it('has a stored history for every funding path', () => {
    expect(stored).toEqual(expect.arrayContaining([...historyPaths[fundWalletWorkflowType]]));
  });

  it.each(stored)('%s replays against today’s workflow code', async (name) => {
    const [result, ...more] = await replayStored({ workflowBundle: { codePath: inject('workflowBundlePath') } }, [name]);
    expect(more).toEqual([]);
    expect(result?.workflowId).toBe(name);
    // The error itself, not just "defined": its message names the mismatching command.
    expect(result?.error).toBeUndefined();
  });

  it('detects a reordered activity call: replay checks something', async () => {
    const results = await replayStored({ workflowsPath: fixture('reordered-workflows.ts') }, stored);
    expect(results).toHaveLength(stored.length);
    for (const result of results) {
      expect(result.error, result.workflowId).toBeInstanceOf(DeterminismViolationError);
    }
  });

  it('replays every history once the same change sits behind patched()', async () => {
    const results = await replayStored({ workflowsPath: fixture('patched-workflows.ts') }, stored);
    expect(results.map((result) => [result.workflowId, result.error])).toEqual(stored.map((name) => [name, undefined]));
  });
});

/** What a stored history shows, read from the file: its input, result, patches, activities, timers. */
const facts = async (name: string) => historyFacts(await readStoredHistory(name));
const count = (activities: string[], type: string) => activities.filter((activity) => activity === type).length;

describe('fundWallet paths: what each stored history shows', () => {
  it('continued-reconcile-approved: a run continued as new goes straight to retrieve, after the 60 s timer of poll 200', async () => {
    const { input, result, patches, activities, timers } = await facts('continued-reconcile-approved');
    expect(input).toMatchObject({ reconcile: { polls: 200, executeAttempts: 1 } });
    expect(result).toMatchObject({ status: 'APPROVED', errorCode: null });
    expect(patches).toEqual([localDatabaseStepsPatch]);
    expect(activities).toEqual(['loadFunding', 'retrieveTransfer', 'finishFunding']);
    expect(timers).toBe(1);
  });

  it('execute-not-executed-then-approved: an unknown execute, retrieve shows CREATED, the second execute is approved', async () => {
    const { result, activities, timers } = await facts('execute-not-executed-then-approved');
    expect(result).toMatchObject({ status: 'APPROVED', errorCode: null });
    expect(activities).toEqual(['loadFunding', 'markCreating', 'createTransfer', 'beginExecute', 'executeTransfer', 'markReconciling', 'retrieveTransfer', 'executeTransfer', 'finishFunding']);
    expect(timers).toBe(1);
  });

  it('execute-expired: the execute (retried by Temporal after a 429) is answered TRANSFER_EXPIRED', async () => {
    const { result, activities, activityAttempts, timers } = await facts('execute-expired');
    expect(result).toMatchObject({ status: 'FAILED', errorCode: 'TRANSFER_EXPIRED' });
    expect(result).toHaveProperty('transferId', expect.any(String));
    expect(activities).toEqual(['loadFunding', 'markCreating', 'createTransfer', 'beginExecute', 'executeTransfer', 'finishFunding']);
    expect(activityAttempts.at(-1)).toBeGreaterThan(1);
    expect(timers).toBe(0);
  });

  it.each(['execute-late-review-resolved', 'execute-late-review-swept'])(
    '%s: four executes stay unknown with the transfer CREATED, NEEDS_REVIEW (patched), the resolve update settles it APPROVED',
    async (name) => {
      const { result, patches, activities, updatesCompleted } = await facts(name);
      expect(result).toMatchObject({ status: 'APPROVED', errorCode: null });
      expect(patches).toEqual([localDatabaseStepsPatch, reviewAfterUnknownPatch]);
      expect(count(activities, 'executeTransfer')).toBe(4);
      expect(activities.slice(-2)).toEqual(['parkFundingForReview', 'resolveFunding']);
      expect(updatesCompleted).toBe(1);
    },
  );

  it('execute-late-review-resolved and -swept differ in who resolved them: ops, or the reconciliation sweep', async () => {
    const resolvedBy = async (name: string) => {
      const text = JSON.stringify(await readStoredHistory(name));
      const accepted = (JSON.parse(text) as { events: Array<Record<string, unknown>> }).events.find(
        (event) => event.eventType === 'EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED',
      ) as { workflowExecutionUpdateAcceptedEventAttributes: { acceptedRequest: { input: { args: { payloads: Array<{ data: string }> } } } } };
      const data = accepted.workflowExecutionUpdateAcceptedEventAttributes.acceptedRequest.input.args.payloads[0]!.data;
      return (JSON.parse(Buffer.from(data, 'base64').toString('utf8')) as { resolvedBy: string }).resolvedBy;
    };
    expect(await resolvedBy('execute-late-review-swept')).toBe('reconciliation');
    expect(await resolvedBy('execute-late-review-resolved')).not.toBe('reconciliation');
  });

  it('retrieve-refused-review-resolved: an unknown execute, 12 retrieves refused (404), NEEDS_REVIEW, resolved by ops', async () => {
    const { result, activities, updatesCompleted } = await facts('retrieve-refused-review-resolved');
    expect(result).toMatchObject({ status: 'APPROVED', errorCode: null });
    expect(count(activities, 'executeTransfer')).toBe(1);
    expect(count(activities, 'retrieveTransfer')).toBe(12);
    expect(activities.slice(-2)).toEqual(['parkFundingForReview', 'resolveFunding']);
    expect(updatesCompleted).toBe(1);
  });

  it('create-failed: createTransfer fails after its 15 attempts; nothing is executed', async () => {
    const { result, activities, activityAttempts } = await facts('create-failed');
    expect(result).toMatchObject({ status: 'FAILED', errorCode: 'CREATE_FAILED', transferId: null });
    expect(activities).toEqual(['loadFunding', 'markCreating', 'createTransfer', 'finishFunding']);
    expect(activityAttempts).toEqual([15]);
  });

  it('cancelled-after-create: cancelled once the transfer was created and stored, before any execute', async () => {
    const { result, activities } = await facts('cancelled-after-create');
    expect(result).toMatchObject({ status: 'FAILED', errorCode: 'CANCELLED' });
    expect(result).toHaveProperty('transferId', expect.any(String));
    expect(activities).toContain('createTransfer');
    expect(activities).not.toContain('executeTransfer');
    expect(activities.at(-1)).toBe('finishFunding');
  });
});
