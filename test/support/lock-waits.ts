// How many sessions of a test's database wait for a lock (pg_stat_activity): a test that holds a row or an advisory
// lock to force an order waits until the statement it races has queued behind it.
import { Prisma } from '../../generated/prisma/client.ts';
import type { Database } from '../../lib/database.ts';

/** Sessions of `database`'s database waiting for a lock, `only` those the extra condition names (default: all). */
export async function lockWaits(database: Database, only: Prisma.Sql = Prisma.empty): Promise<number> {
  const [row] = await database.$queryRaw<Array<{ n: bigint }>>`
    SELECT count(*) AS n FROM pg_stat_activity
    WHERE datname = current_database() AND wait_event_type = 'Lock' ${only}`;
  return Number(row!.n);
}
