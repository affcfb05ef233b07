// A raw statement's failures as Prisma's pg adapter gives them (test/integration/raw-statement-failures.test.ts makes
// them for real on PostgreSQL), and a database whose raw statements naming a table fail so: what a route answers when
// its read loses its connection, without a failover to stage.
import { Prisma } from '../../generated/prisma/client.ts';
import type { Database } from '../../lib/database.ts';

/** A raw statement whose connection was reset (a proxy or pooler restarting): P2010, no PostgreSQL state. */
export const connectionReset = () =>
  new Prisma.PrismaClientKnownRequestError('Raw query failed. Code: `N/A`.', {
    code: 'P2010',
    clientVersion: 'test',
    meta: { driverAdapterError: { name: 'DriverAdapterError', cause: { kind: 'ConnectionClosed' } } },
  });

/**
 * Makes `database`'s raw queries whose text contains `naming` fail with `error` (only the first, with `once`); the
 * function it answers puts them back.
 */
export function failRawQueries(
  database: Database,
  naming: string,
  error: Error,
  options: { once?: boolean } = {},
): () => void {
  const raw = database as unknown as Record<'$queryRaw', (...args: unknown[]) => Promise<unknown>>;
  const queryRaw = raw.$queryRaw;
  let armed = true;
  raw.$queryRaw = (...args: unknown[]) => {
    if (armed && Array.isArray(args[0]) && (args[0] as string[]).join('?').includes(naming)) {
      if (options.once) armed = false;
      return Promise.reject(error);
    }
    return queryRaw.apply(database, args);
  };
  return () => {
    raw.$queryRaw = queryRaw;
  };
}
