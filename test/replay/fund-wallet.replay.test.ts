// Replays every stored fundWallet history (test/replay/histories) against today's workflow bundle,
// and reads what each path's history shows. fundWallet is pinned: a run started on a versioned build
// finishes on it, so today's captures check today's code against its own paths; the previous
// release's runs (unversioned) move to today's build, so its histories, archived under
// archive/release-360981c, replay here too (docs/changing-workflows.md, the first versioned deploy). The secret scan of
// every stored history is in stored-histories.test.ts.
import { fileURLToPath } from 'node:url';
import { DeterminismViolationError } from '@temporalio/workflow';
import { describe, expect, it } from 'vitest';
import { fundWalletWorkflowType } from '../../workflows/fund-wallet.contract.ts';
import { onePassPatch, reviewAfterUnknownPatch, takeOverTrustsNothingPatch } from '../../workflows/fund-wallet.ts';
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
const stored = storedHistoriesOf(fundWalletWorkflowType);

const fixture = (file: string) => fileURLToPath(new URL(`./fixtures/${file}`, import.meta.url));

describe('fundWallet replay', () => {
  it('has a stored history for every funding path', () => {
    expect(stored).toEqual(expect.arrayContaining([...historyPaths[fundWalletWorkflowType]]));
  });

  itReplaysEachAgainstTodaysCode(stored);

  it('detects a reordered activity call: replay checks something', async () => {
    const results = await replayStored({ workflowsPath: fixture('reordered-workflows.ts') }, stored);
    expect(results).toHaveLength(stored.length);
    for (const result of results) {
      expect(result.error, result.workflowId).toBeInstanceOf(DeterminismViolationError);
    }
  });
});

/** What a stored history shows, read from the file: its input, result, patches, activities, timers. */
const facts = async (name: string) => historyFacts(await readStoredHistory(name));
const count = (activities: string[], type: string) => activities.filter((activity) => activity === type).length;

/** Events of the types given, counted in a stored history. */
const eventCount = async (name: string, eventType: string) =>
  ((await readStoredHistory(name)) as { events: Array<{ eventType: string }> }).events.filter(
    (event) => event.eventType === eventType,
  ).length;

describe('fundWallet paths today: a fresh funding in one pass', () => {
  it('code-approved: one workflow task, no activity task, one local activity, one status write, the one-pass gate’s marker', async () => {
    const { result, patches, activities } = await facts('code-approved');
    expect(result).toMatchObject({ status: 'APPROVED', errorCode: null, transferId: expect.any(String) });
    expect(patches).toEqual([onePassPatch]);
    expect(activities).toEqual(['fundInOnePass']);
    expect(await eventCount('code-approved', 'EVENT_TYPE_WORKFLOW_TASK_COMPLETED')).toBe(1);
    expect(await eventCount('code-approved', 'EVENT_TYPE_ACTIVITY_TASK_SCHEDULED')).toBe(0);
    // Kind, recipient type and PENDING are set by the start; the final status is the one write of
    // WalletflowStatus (the other is Temporal's TemporalChangeVersion, which the gate's marker sets).
    expect(await eventCount('code-approved', 'EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES')).toBe(2);
    // The local activity's marker and the gate's.
    expect(await eventCount('code-approved', 'EVENT_TYPE_MARKER_RECORDED')).toBe(2);
  });

  it('every path captured today takes today’s branch at the previous release’s gates (a new run records their markers)', async () => {
    const current = stored.filter((name) => !name.startsWith('archive/'));
    expect(current.length).toBeGreaterThan(0);
    for (const name of current) {
      const { patches } = await facts(name);
      expect(patches[0], name).toBe(onePassPatch);
      expect(
        patches.every((patch) => [onePassPatch, takeOverTrustsNothingPatch, reviewAfterUnknownPatch].includes(patch)),
        name,
      ).toBe(true);
    }
  });

  it.each(['m133-rejected', 'declined', 'token-approved-with-refresh'])(
    '%s: the whole funding in the one pass',
    async (name) => {
      const { activities } = await facts(name);
      expect(activities).toEqual(['fundInOnePass']);
    },
  );

  it('execute-unknown-reconciled: the pass reports the unknown execute; RECONCILING and retrieve settle it, never a second execute', async () => {
    const { result, activities } = await facts('execute-unknown-reconciled');
    expect(result).toMatchObject({ status: 'APPROVED', errorCode: null });
    expect(activities).toEqual(['fundInOnePass', 'markReconciling', 'retrieveTransfer', 'finishFunding']);
  });

  it('execute-not-executed-then-approved: after the pass’s unknown execute, retrieve shows CREATED and the execute activity sends it again', async () => {
    const { result, activities } = await facts('execute-not-executed-then-approved');
    expect(result).toMatchObject({ status: 'APPROVED', errorCode: null });
    expect(activities).toEqual([
      'fundInOnePass',
      'markReconciling',
      'retrieveTransfer',
      'executeTransfer',
      'finishFunding',
    ]);
  });

  it('execute-expired: the pass’s execute refused with 429 (nothing sent) goes to the execute activity after the Retry-After', async () => {
    const { result, activities, timers } = await facts('execute-expired');
    expect(result).toMatchObject({ status: 'FAILED', errorCode: 'TRANSFER_EXPIRED' });
    expect(activities).toEqual(['fundInOnePass', 'executeTransfer', 'finishFunding']);
    // The wallet's Retry-After on the pass's 429, waited on a durable timer before the execute activity.
    expect(timers).toBe(1);
  });

  it('create-failed: the pass’s create refused with 429 waits the Retry-After on a durable timer, then the steps retry it', async () => {
    const { result, activities, activityAttempts, timers } = await facts('create-failed');
    expect(result).toMatchObject({ status: 'FAILED', errorCode: 'CREATE_FAILED', transferId: null });
    expect(activities).toEqual(['fundInOnePass', 'loadFunding', 'markCreating', 'createTransfer', 'finishFunding']);
    expect(activityAttempts).toEqual([15]);
    expect(timers).toBe(1);
  });

  it('cancelled: a funding cancelled before its workflow ran is handed to the steps, which finish it as the record says', async () => {
    const { result, activities } = await facts('cancelled');
    expect(result).toMatchObject({ status: 'FAILED', errorCode: 'CANCELLED' });
    expect(activities).toEqual(['fundInOnePass', 'loadFunding', 'finishFunding']);
  });

  it('cancelled-during-create: cancelled while the pass’s create ran; the pass run again after its task failed hands over', async () => {
    const { result, activities } = await facts('cancelled-during-create');
    expect(result).toMatchObject({ status: 'FAILED', errorCode: 'CANCELLED', transferId: null });
    // The first task's completion was refused (the cancel signal arrived while the pass ran), so
    // its local activity's result was lost: the pass ran again, found the funding FAILED (not
    // PENDING) and handed over; the steps read the record and finished with it. Nothing executed.
    expect(await eventCount('cancelled-during-create', 'EVENT_TYPE_WORKFLOW_TASK_FAILED')).toBe(1);
    expect(activities).toEqual(['fundInOnePass', 'loadFunding', 'finishFunding']);
  });

  it.each(['execute-late-review-resolved', 'execute-late-review-swept'])(
    '%s: the pass’s execute and three execute activities stay unknown: NEEDS_REVIEW, then resolved',
    async (name) => {
      const { result, activities, updatesCompleted } = await facts(name);
      expect(result).toMatchObject({ status: 'APPROVED', errorCode: null });
      expect(count(activities, 'fundInOnePass') + count(activities, 'executeTransfer')).toBe(4);
      expect(activities.slice(-2)).toEqual(['parkFundingForReview', 'resolveFunding']);
      expect(updatesCompleted).toBe(1);
    },
  );

  it('continued-reconcile-approved: a run continued as new goes straight to retrieve, not through the pass, after the 60 s timer of poll 200', async () => {
    const { input, result, activities, timers } = await facts('continued-reconcile-approved');
    expect(input).toMatchObject({ reconcile: { polls: 200, executeAttempts: 1 } });
    expect(result).toMatchObject({ status: 'APPROVED', errorCode: null });
    expect(activities).toEqual(['loadFunding', 'retrieveTransfer', 'finishFunding']);
    expect(timers).toBe(1);
  });

  it('execute-late-review-resolved and -swept differ in who resolved them: ops, or the reconciliation sweep', async () => {
    const resolvedBy = async (name: string) => {
      const accepted = ((await readStoredHistory(name)) as { events: Array<Record<string, unknown>> }).events.find(
        (event) => event.eventType === 'EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED',
      ) as {
        workflowExecutionUpdateAcceptedEventAttributes: {
          acceptedRequest: { input: { args: { payloads: Array<{ data: string }> } } };
        };
      };
      const data = accepted.workflowExecutionUpdateAcceptedEventAttributes.acceptedRequest.input.args.payloads[0]!.data;
      return (JSON.parse(Buffer.from(data, 'base64').toString('utf8')) as { resolvedBy: string }).resolvedBy;
    };
    expect(await resolvedBy('execute-late-review-swept')).toBe('reconciliation');
    expect(await resolvedBy('execute-late-review-resolved')).not.toBe('reconciliation');
  });

  it('retrieve-refused-review-resolved: the pass’s execute unknown, 12 retrieves refused (404), NEEDS_REVIEW, resolved by ops', async () => {
    const { result, activities, updatesCompleted } = await facts('retrieve-refused-review-resolved');
    expect(result).toMatchObject({ status: 'APPROVED', errorCode: null });
    expect(activities).not.toContain('executeTransfer');
    expect(count(activities, 'retrieveTransfer')).toBe(12);
    expect(activities.slice(-2)).toEqual(['parkFundingForReview', 'resolveFunding']);
    expect(updatesCompleted).toBe(1);
  });
});

describe('fundWallet paths today: a run that takes a funding over from another run', () => {
  it('taken-over-created-transfer: a transfer another run created and stored is retrieved before any execute, then executed once', async () => {
    const { result, activities } = await facts('taken-over-created-transfer');
    expect(result).toMatchObject({ status: 'APPROVED', errorCode: null, transferId: expect.any(String) });
    expect(activities).toEqual([
      'fundInOnePass',
      'loadFunding',
      'beginExecute',
      'markReconciling',
      'retrieveTransfer',
      'executeTransfer',
      'finishFunding',
    ]);
  });

  it('taken-over-executing-approved: a funding another run moved to EXECUTING is only retrieved, never executed again', async () => {
    const { result, activities } = await facts('taken-over-executing-approved');
    expect(result).toMatchObject({ status: 'APPROVED', errorCode: null });
    expect(activities).toEqual([
      'fundInOnePass',
      'loadFunding',
      'markReconciling',
      'retrieveTransfer',
      'finishFunding',
    ]);
  });
});
