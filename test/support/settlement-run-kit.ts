// What the settlement run's tests share (test/integration/settlement-runs.test.ts and
// settlement-run-faults.test.ts), on a stack of their own: the ops API called and its answers read,
// a report followed until it is served, a fresh past day planted with approved fundings, the run
// rows of a day and the wallet's successful retrieves of each transfer.
import { afterAll, afterEach, beforeAll, expect } from 'vitest';
import { plantApprovedDay } from '../../harness/settlement-day.ts';
import { startPartnerStack, type PartnerStack } from './partner-stack.ts';
import { testDatabaseUrl } from './test-database.ts';

export const timeZone = 'Asia/Manila';
/** Small pages and activities, so that a run of a few dozen items pages, heartbeats and continues as new. */
export const tuning = { maxInFlight: 8, pageSize: 20, itemsPerActivity: 60, activitiesPerRun: 2 };

export interface Answer {
  status: number;
  headers: Headers;
  body: Record<string, unknown>;
  text: string;
}

export const php = (value: string) => ({ currency: 'PHP', value });

export function expectProgress(answer: Answer, date: string): void {
  expect(answer.status, answer.text).toBe(202);
  expect(answer.body).toMatchObject({ date, state: 'RUNNING', checked: expect.any(Number), total: expect.any(Number) });
  expect(answer.headers.get('retry-after')).toMatch(/^[1-9]\d*$/);
}

/**
 * The settlement files' stack: started (with `tuning` and its worker) before the file's tests, its wallet's faults
 * cleared after each, closed after the file. Answers the stack, once started.
 */
export function useSettlementStack(): () => PartnerStack {
  let stack: PartnerStack | undefined;
  beforeAll(async () => {
    stack = await startPartnerStack({ settlements: tuning });
    await stack.startWorker();
  });
  afterEach(async () => {
    await stack?.admin.clearFaults();
  });
  afterAll(() => stack?.close());
  return () => {
    if (!stack) throw new Error('useSettlementStack: the stack is not started yet (its beforeAll has not run)');
    return stack;
  };
}

/** The helpers on the file's stack (`stack()`: started by its beforeAll). */
export function settlementRunKit(stack: () => PartnerStack) {
  async function call(path: string, init: RequestInit = {}): Promise<Answer> {
    const response = await stack().opsFetch(path, init);
    const text = await response.text();
    let body: Record<string, unknown> = {};
    // A HEAD's answer has the headers of its JSON and no body.
    if (/json/.test(response.headers.get('content-type') ?? '') && text !== '')
      body = JSON.parse(text) as Record<string, unknown>;
    return { status: response.status, headers: response.headers, body, text };
  }

  /**
   * GETs until the stored report is served (each GET waits up to 5 s itself); every 202 on the way is a progress body.
   */
  async function settled(date: string, query = ''): Promise<Answer> {
    for (let attempt = 0; attempt < 60; attempt += 1) {
      const answer = await call(`/ops/settlements/${date}${query}`);
      if (answer.status === 200) return answer;
      expectProgress(answer, date);
    }
    throw new Error(`no settlement of ${date}`);
  }

  const usedDays = new Set<string>();
  /** A past day no run of this database has settled yet (other files share it, and may have settled any day). */
  async function freshDay(): Promise<string> {
    for (;;) {
      const day = new Date(
        Date.UTC(
          2001 + Math.floor(Math.random() * 20),
          Math.floor(Math.random() * 12),
          1 + Math.floor(Math.random() * 28),
        ),
      )
        .toISOString()
        .slice(0, 10);
      const runs = await stack().database.$queryRaw<
        Array<{ n: bigint }>
      >`SELECT count(*) AS n FROM settlement_run WHERE date = ${day}`;
      if (!usedDays.has(day) && runs[0]?.n === 0n) {
        usedDays.add(day);
        return day;
      }
    }
  }

  const plant = (date: string, count: number) =>
    plantApprovedDay({ databaseUrl: testDatabaseUrl(), admin: stack().admin }, { date, timeZone, count });

  const runsOf = (date: string) =>
    stack().database.$queryRaw<Array<{ id: string; state: string; checked: number; total: number }>>`
      SELECT id::text AS id, state::text AS state, checked, total FROM settlement_run WHERE date = ${date} ORDER BY number`;

  /** Successful retrieves of each transfer, from the wallet call audit. */
  async function retrievesByTransfer(): Promise<Map<string, number>> {
    const rows = await stack().database.$queryRaw<Array<{ path: string; n: bigint }>>`
      SELECT path, count(*) AS n FROM wallet_call WHERE operation = 'transfers.retrieve' AND outcome = 'ok' GROUP BY path`;
    return new Map(rows.map((row) => [row.path.split('/').at(-1)!, Number(row.n)]));
  }

  /** The retrieves the wallet call audit records as failed since `since`, counted when asked. */
  const failedRetrievesFrom = (since: Date) => async () =>
    Number(
      (
        await stack().database.$queryRaw<Array<{ n: bigint }>>`
          SELECT count(*) AS n FROM wallet_call
          WHERE operation = 'transfers.retrieve' AND outcome <> 'ok' AND started_at >= ${since}`
      )[0]!.n,
    );

  return { call, settled, freshDay, plant, runsOf, retrievesByTransfer, failedRetrievesFrom };
}
