// The worker's line in front of its pool (lib/database.ts createWorkerDatabase): a burst of
// transactions larger than the pool waits in line holding nothing and runs, instead of timing out
// inside Prisma (P2028) as the worker's activities did when refreshes held its connections.
import { afterAll, describe, expect, it } from 'vitest';
import { createWorkerDatabase, DEFAULT_POOL_SIZE } from '../../lib/database.ts';
import { testDatabaseUrl } from '../support/test-database.ts';

const { database, admission } = createWorkerDatabase(testDatabaseUrl());
afterAll(() => database.$disconnect());

describe('the worker’s database', () => {
  it(`runs a burst of 400 transactions of 50 ms on its pool of ${DEFAULT_POOL_SIZE}: each waits its turn in line, none times out inside Prisma`, async () => {
    const outcomes = await Promise.all(
      Array.from({ length: 400 }, () =>
        database
          .$transaction(async (tx) => tx.$executeRaw`SELECT pg_sleep(0.05)`)
          .then(
            () => 'ran',
            (error: unknown) => (error as { code?: string }).code ?? (error as Error).name,
          ),
      ),
    );
    const counts: Record<string, number> = {};
    for (const outcome of outcomes) counts[outcome] = (counts[outcome] ?? 0) + 1;
    expect(counts).toEqual({ ran: 400 });
    expect(admission.state()).toEqual({ inFlight: 0, queued: 0, refused: 0 });
  }, 60_000);
});
