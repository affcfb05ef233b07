// Settlement runs of any days at once are bounded (SETTLEMENT_MAX_RUNS, contract-decisions section 10): a burst of
// GETs for many days starts as many runs as there are places, and every other answer is 503 OVERLOADED with
// Retry-After. On an API whose runs nobody works on (no worker polls its task queue), so that they stay under way. A
// file of its own beside settlement-runs.test.ts, whose stack runs the day's runs (the two were one file past 60 s).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSettlementRuns } from '../../ledger/settlement-runs.ts';
import { settlementWorkflowId } from '../../workflows/settle-day.contract.ts';
import { startPartnerStack, type PartnerStack } from '../support/partner-stack.ts';
import { settlementRunKit, tuning } from '../support/settlement-run-kit.ts';

let idle: PartnerStack;
beforeAll(async () => {
  idle = await startPartnerStack({ settlements: { ...tuning, maxRuns: 2 } });
});
afterAll(() => idle.close());

const { freshDay, runsOf } = settlementRunKit(() => idle);
describe('settlement runs of any days at once are bounded (SETTLEMENT_MAX_RUNS)', () => {
  it('a burst of GETs for many days starts as many runs as there are places: every other answer is 503 OVERLOADED with Retry-After, nothing recorded; a run of a day under way is still followed, and a run with no workflow gives its place up', async () => {
    const days: string[] = [];
    try {
      for (let index = 0; index < 8; index += 1) days.push(await freshDay());
      const get = async (day: string) => {
        const response = await idle.opsFetch(`/ops/settlements/${day}`);
        return {
          day,
          status: response.status,
          retryAfter: response.headers.get('retry-after'),
          body: (await response.json()) as Record<string, unknown>,
        };
      };
      const answers = await Promise.all(days.map(get));
      // Before: eight runs, each to hold one of a worker's activity slots for as long as it reads.
      const started = answers.filter((answer) => answer.status === 202);
      const refused = answers.filter((answer) => answer.status === 503);
      expect(started).toHaveLength(2);
      expect(refused).toHaveLength(6);
      for (const answer of started) expect(answer.body).toMatchObject({ date: answer.day, state: 'RUNNING' });
      for (const answer of refused) {
        expect(answer.body).toMatchObject({ code: 'OVERLOADED', detail: expect.stringMatching(/SETTLEMENT_MAX_RUNS/) });
        expect(Number(answer.retryAfter)).toBeGreaterThanOrEqual(5);
        expect(await runsOf(answer.day)).toEqual([]);
      }
      // A fresh run of another day is refused alike; a day under way is followed as ever.
      const fresh = await idle.opsFetch(`/ops/settlements/${refused[0]!.day}/runs`, { method: 'POST' });
      expect([fresh.status, ((await fresh.json()) as { code: string }).code]).toEqual([503, 'OVERLOADED']);
      expect((await get(started[0]!.day)).status).toBe(202);
      // A run whose workflow closed without finishing it (ended by hand) holds no place: the next day's GET takes it.
      const [ended] = await runsOf(started[0]!.day);
      await idle.temporal.workflow.getHandle(settlementWorkflowId(started[0]!.day, ended!.id)).terminate('by hand');
      expect((await get(refused[1]!.day)).status).toBe(202);
      expect((await runsOf(started[0]!.day)).map((run) => run.state)).toEqual(['FAILED']);
      expect((await runsOf(refused[1]!.day)).map((run) => run.state)).toEqual(['RUNNING']);
    } finally {
      // The runs nobody works on: ended, so they hold no place in the file's other tests.
      for (const day of days)
        for (const run of await runsOf(day))
          if (run.state === 'RUNNING') {
            await idle.temporal.workflow
              .getHandle(settlementWorkflowId(day, run.id))
              .terminate('test over')
              .catch(() => undefined);
            await createSettlementRuns(idle.database).fail(run.id, 'TEST_OVER');
          }
    }
  });
});
