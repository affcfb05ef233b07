// The audit's budget for requests without a session or a key (audit/ops-actions.ts), on the real
// database, with budgets small enough to pass: one row per request up to the budget per client
// address and minute, then one summary row per client, channel and minute whose count says how many
// more came; past the channel's budget, whatever the clients, one summary of every client (`*`).
// Two logs writing at once (two API processes) stay within one budget; a named row is never
// budgeted. Every request is accounted for, and nothing is recorded twice.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOpsActionLog, type OpsActionEntry } from '../../audit/ops-actions.ts';
import { createDatabase, type Database } from '../../lib/database.ts';
import { createLogger } from '../../lib/logger.ts';
import { testDatabaseUrl } from '../support/test-database.ts';

let database: Database;
beforeAll(() => {
  database = createDatabase(testDatabaseUrl(), { maxConnections: 4 });
});
afterAll(async () => {
  await database.$disconnect();
});

const logger = createLogger({ level: 'silent' });
const budget = { anonymousPerClientPerMinute: 2, anonymousPerMinute: 5 };
const request = (client: string, path: string, keyName: string | null = null): OpsActionEntry => ({
  keyName,
  actor: null,
  method: 'POST',
  path,
  status: 401,
  requestId: null,
  channel: 'api',
  client,
});
/** The counts of every summary of every client, so far. */
const everyClient = async () =>
  (
    await database.opsAction.aggregate({
      where: { channel: 'api', client: '*', summaryOf: { not: null } },
      _sum: { count: true },
    })
  )._sum.count ?? 0;

describe('the audit’s budget for requests without a session or a key', () => {
  it('records each client’s first ones, then a summary per client and minute, then one of every client; two processes share one budget; every request is counted once', async () => {
    const run = randomUUID().slice(0, 8);
    const clients = Array.from({ length: 10 }, (_, index) => `192.0.2.${index + 1}-${run}`);
    const path = `/ops/fundings/${run}/cancel`;
    const before = await everyClient();
    // Two API processes, each told of 3 requests from each of the 10 clients.
    const processes = [createOpsActionLog(database, logger, budget), createOpsActionLog(database, logger, budget)];
    for (const log of processes)
      for (const client of clients) for (let index = 0; index < 3; index += 1) log.record(request(client, path));
    expect(await Promise.all(processes.map((log) => log.drain(20_000)))).toEqual([true, true]);
    const rows = await database.opsAction.findMany({ where: { client: { in: clients } } });
    const single = rows.filter((row) => row.summaryOf === null);
    const summaries = rows.filter((row) => row.summaryOf !== null);
    const ofEveryClient = (await everyClient()) - before;
    // Every one of the 60 is accounted for: one by one, in a client's summary, or in every client's.
    expect(single.length + summaries.reduce((sum, row) => sum + row.count, 0) + ofEveryClient).toBe(60);
    // Within the budget: per minute at most 5 rows of the channel (summaries of a client included), at most 2 of a
    // client.
    const minutes = Math.max(1, new Set(summaries.map((row) => row.at.toISOString())).size);
    expect(single.length + summaries.length).toBeLessThanOrEqual(budget.anonymousPerMinute * minutes);
    for (const client of clients) {
      expect(single.filter((row) => row.client === client).length).toBeLessThanOrEqual(
        budget.anonymousPerClientPerMinute * minutes,
      );
      expect(summaries.filter((row) => row.client === client).length).toBeLessThanOrEqual(minutes);
    }
    expect(ofEveryClient).toBeGreaterThan(0);
    expect(single.every((row) => row.path === path && row.count === 1)).toBe(true);
  });

  it('never budgets a row with a name, however many', async () => {
    const run = randomUUID().slice(0, 8);
    const client = `192.0.2.200-${run}`;
    const log = createOpsActionLog(database, logger, budget);
    for (let index = 0; index < 40; index += 1)
      log.record(request(client, `/ops/fundings/${run}/cancel`, 'ops-writer'));
    expect(await log.drain(20_000)).toBe(true);
    expect(await database.opsAction.count({ where: { client, keyName: 'ops-writer', summaryOf: null } })).toBe(40);
  });
});
