// Replays every stored deliverWebhooks history (current and archived) against today's workflow
// bundle: a run of the webhook deliverer whose round delivered an event, and one whose round saw
// a refusal and the retry that delivered it; each run continues as new.
import { describe, expect, it } from 'vitest';
import type { DeliveryRoundReport } from '../../workflows/deliver-webhooks.contract.ts';
import { deliverWebhooksWorkflowType } from '../../workflows/deliver-webhooks.contract.ts';
import {
  historyFacts,
  historyPaths,
  installQuietReplayRuntime,
  readStoredHistory,
  storedHistoriesOf,
} from '../support/replay-histories.ts';
import { itReplaysEachAgainstTodaysCode } from '../support/replay-each.ts';

installQuietReplayRuntime();
const stored = storedHistoriesOf(deliverWebhooksWorkflowType);

/** The round's report: the result of the run's one delivery activity. */
function roundReport(history: unknown): DeliveryRoundReport {
  const events = (
    history as {
      events: Array<{ activityTaskCompletedEventAttributes?: { result?: { payloads?: Array<{ data?: string }> } } }>;
    }
  ).events;
  const data = events.find((event) => event.activityTaskCompletedEventAttributes)?.activityTaskCompletedEventAttributes
    ?.result?.payloads?.[0]?.data;
  return JSON.parse(Buffer.from(data ?? '', 'base64').toString('utf8')) as DeliveryRoundReport;
}

describe('deliverWebhooks replay', () => {
  it('has a stored history for every delivery path', () => {
    expect(stored).toEqual(expect.arrayContaining([...historyPaths[deliverWebhooksWorkflowType]]));
  });

  it('stores what each path did: delivery rounds, then continue-as-new', async () => {
    for (const name of historyPaths[deliverWebhooksWorkflowType]) {
      const facts = historyFacts(await readStoredHistory(name));
      expect(facts.activities, name).toEqual(['deliverDueWebhooks']);
      expect(facts.continuedAsNew, name).toBe(true);
    }
    expect(roundReport(await readStoredHistory('webhooks-delivered'))).toMatchObject({
      succeeded: expect.any(Number) as number,
      failed: 0,
    });
    expect(roundReport(await readStoredHistory('webhooks-delivered')).succeeded).toBeGreaterThanOrEqual(1);
    const retried = roundReport(await readStoredHistory('webhooks-retried'));
    expect(retried.retrying).toBeGreaterThanOrEqual(1);
    expect(retried.succeeded).toBeGreaterThanOrEqual(1);
  });

  itReplaysEachAgainstTodaysCode(stored);
});
