// The lines in front of a process's pool (lib/database.ts createWorkerDatabase): a burst of
// transactions larger than the pool waits in line holding nothing and runs, instead of timing out
// inside Prisma (P2028) as the worker's activities did when refreshes held its connections, and
// as the soak's driver did when it stored a batch's links on a busy machine.
import { afterAll, describe, expect, it } from 'vitest';
import { openStackDatabase } from '../../harness/local-stack.ts';
import { createWorkerDatabase, DEFAULT_POOL_SIZE, type Database } from '../../lib/database.ts';
import { testDatabaseUrl } from '../support/test-database.ts';

const worker = createWorkerDatabase(testDatabaseUrl());
const stack = openStackDatabase(testDatabaseUrl());
afterAll(() => Promise.all([worker.database.$disconnect(), stack.$disconnect()]));

/** `count` transactions at once, each holding its connection `seconds`: how many ran, how many failed (by code). */
async function burst(database: Database, count: number, seconds: number): Promise<Record<string, number>> {
  const outcomes = await Promise.all(
    Array.from({ length: count }, () =>
      database
        .$transaction(async (tx) => tx.$executeRaw`SELECT pg_sleep(${seconds})`)
        .then(
          () => 'ran',
          (error: unknown) => (error as { code?: string }).code ?? (error as Error).name,
        ),
    ),
  );
  const counts: Record<string, number> = {};
  for (const outcome of outcomes) counts[outcome] = (counts[outcome] ?? 0) + 1;
  return counts;
}

describe('the worker’s database', () => {
  it(`runs a burst of 400 transactions of 50 ms on its pool of ${DEFAULT_POOL_SIZE}: each waits its turn in line, none times out inside Prisma`, async () => {
    expect(await burst(worker.database, 400, 0.05)).toEqual({ ran: 400 });
    expect(worker.admission.state()).toEqual({ inFlight: 0, queued: 0, refused: 0 });
  }, 60_000);
});

describe('the local stack’s database (the soak’s and the bench’s drivers)', () => {
  it(`runs a burst of 100 transactions of 250 ms on its pool of ${DEFAULT_POOL_SIZE}: none times out inside Prisma`, async () => {
    // The last of them waits about 100 × 0.25 s / 8 in line: longer than Prisma's 2 s for a connection.
    expect(await burst(stack, 100, 0.25)).toEqual({ ran: 100 });
  }, 60_000);
});
