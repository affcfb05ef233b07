// A day of SETTLEMENT_TZ is one span of time for everything that reads it (ledger/settlement.ts SettlementDay): the
// settlement run's windows, the grace a run waits out and the day it calls whole (dayEndsAt), the home's totals, the
// audit's day and a user's daily limits. Its instants are reckoned by Node's time zone data alone and handed to SQL as
// instants. Before, the windows were PostgreSQL's own reading of the zone's local midnights, which differs on days
// Node's does not: a midnight that happens twice (a clock put back from 01:00 to 00:00) is its later one, and CET, EET,
// WET and MET are its fixed abbreviations (no summer time). A run was then stored as the whole day while its window
// was still being written, and an approval committed after the run had read past it was in no report.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Prisma } from '../../generated/prisma/client.ts';
import { fundingTotalsOn } from '../../fundings/funding-totals.ts';
import { dayEndsAt, dayEventsAfter, settlementDay } from '../../ledger/settlement.ts';
import { createDatabase, type Database } from '../../lib/database.ts';
import { testDatabaseUrl } from '../support/test-database.ts';

let database: Database;
beforeAll(() => {
  database = createDatabase(testDatabaseUrl(), { maxConnections: 2 });
});
afterAll(async () => {
  await database.$disconnect();
});

const daysOf2026 = Array.from({ length: 365 }, (_, day) =>
  new Date(Date.UTC(2026, 0, 1 + day)).toISOString().slice(0, 10),
);
const dayBefore = (date: string) => new Date(Date.parse(`${date}T00:00:00Z`) - 86_400_000).toISOString().slice(0, 10);

describe('a day of SETTLEMENT_TZ', () => {
  it('is read by the database from the instant the day before ends to the instant it ends, as its grace reckons them: every day of 2026, in zones whose midnight happens twice, CET and EET, and Manila', async () => {
    for (const timeZone of ['Atlantic/Azores', 'America/Havana', 'CET', 'EET', 'Asia/Manila']) {
      // Each day's window as PostgreSQL evaluates the SQL the day's reads are made of.
      const windows = daysOf2026.map((date) => {
        const { start, end } = dayEventsAfter(settlementDay(date, timeZone), null);
        return Prisma.sql`SELECT ${date} AS date, ${start} AS start, ${end} AS "end"`;
      });
      const rows = await database.$queryRaw<Array<{ date: string; start: Date; end: Date }>>`
        ${Prisma.join(windows, ' UNION ALL ')}`;
      const differ = rows
        .map((row) => ({
          date: row.date,
          read: [row.start.toISOString(), row.end.toISOString()],
          reckoned: [
            dayEndsAt(dayBefore(row.date), timeZone).toISOString(),
            dayEndsAt(row.date, timeZone).toISOString(),
          ],
        }))
        .filter((day) => day.read.join() !== day.reckoned.join());
      expect(differ, timeZone).toEqual([]);
      expect(rows).toHaveLength(365);
    }
    // The instants themselves, on the days the two readings differed: the first midnight of the Azores' 25 October (its
    // clocks go back at 01:00 to 00:00), Havana's of 1 November, and a summer midnight of CET (UTC+2 then).
    const endOf = async (date: string, timeZone: string) => {
      const { end } = dayEventsAfter(settlementDay(date, timeZone), null);
      const [row] = await database.$queryRaw<Array<{ end: Date }>>`SELECT ${end} AS "end"`;
      return row!.end.toISOString();
    };
    expect(await endOf('2026-10-24', 'Atlantic/Azores')).toBe('2026-10-25T00:00:00.000Z');
    expect(await endOf('2026-10-31', 'America/Havana')).toBe('2026-11-01T04:00:00.000Z');
    expect(await endOf('2026-07-15', 'CET')).toBe('2026-07-15T22:00:00.000Z');
  });

  it('counts a funding requested in the hour that follows a midnight that happened twice on the day that hour is on, by the console’s reckoning: not on the day before', async () => {
    // Atlantic/Azores puts its clocks back from 01:00 to 00:00 on 2026-10-25: 00:30Z is 00:30 on the 25th, the first
    // time round.
    const timeZone = 'Atlantic/Azores';
    const amount = `${(Math.floor(Math.random() * 9000) + 1000).toString()}.125`;
    await database.$executeRaw`
      INSERT INTO funding (id, idempotency_key, request_fingerprint, workflow_id, status, recipient_type, currency, amount, abandoned_transfer_ids, created_at, updated_at)
      VALUES (${randomUUID()}::uuid, ${`window-${randomUUID()}`}, ${'0'.repeat(64)}, ${`funding-${randomUUID()}`}, 'APPROVED', 'CODE', 'PHP', ${amount}::numeric,
              ARRAY[]::text[], '2026-10-25T00:30:00Z'::timestamptz, now())`;
    const approvedOn = async (date: string) =>
      (await fundingTotalsOn(database, settlementDay(date, timeZone))).filter(
        (total) => total.status === 'APPROVED' && total.count > 0,
      );
    expect(await approvedOn('2026-10-24')).toEqual([]);
    expect(await approvedOn('2026-10-25')).toEqual([
      expect.objectContaining({ status: 'APPROVED', currency: 'PHP', count: 1 }),
    ]);
  });
});
