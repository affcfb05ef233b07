// What a raw statement's failures look like through Prisma's pg adapter, made for real on PostgreSQL: its connection
// reset while it runs (a pooler, a load balancer or a proxy in front of the database restarting), and a deadlock.
// Prisma gives every raw statement's failure as P2010 with the adapter's error inside, where a typed statement's gets
// P1017 or P2034, and a reset carries no PostgreSQL state at all. lib/admission.ts must read both forms, so the API
// answers a read that lost its connection, or a transaction PostgreSQL rolled back, 503 with Retry-After, never 500.
import { connect, createServer, type AddressInfo, type Socket } from 'node:net';
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { Prisma } from '../../generated/prisma/client.ts';
import { lostConnectionOf, overloadOf } from '../../lib/admission.ts';
import { createDatabase } from '../../lib/database.ts';
import { testDatabaseUrl } from '../support/test-database.ts';
import { waitFor } from '../support/wait-for.ts';

/** A proxy in front of PostgreSQL whose connections the test resets (RST, no goodbye), as a restarting proxy does. */
async function resettingProxy(target: URL) {
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = connect({ host: target.hostname, port: Number(target.port || 5432) });
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('error', () => undefined);
      socket.on('close', () => sockets.delete(socket));
    }
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = new URL(target);
  url.host = `127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url: url.toString(),
    open: () => sockets.size,
    reset: () => {
      for (const socket of sockets) socket.resetAndDestroy();
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describe('a raw statement', () => {
  it('whose connection is reset while it runs is a lost connection (a read is answered 503), not an unknown failure', async () => {
    const proxy = await resettingProxy(new URL(testDatabaseUrl()));
    const database = createDatabase(proxy.url, { maxConnections: 1 });
    try {
      const failure = database.$queryRaw`SELECT pg_sleep(10)`.then(
        () => null,
        (error: unknown) => error,
      );
      await waitFor('the statement under way', () => (proxy.open() >= 2 ? true : undefined), 10_000);
      await new Promise((resolve) => setTimeout(resolve, 300));
      proxy.reset();
      const error = await failure;
      expect(error).toBeInstanceOf(Prisma.PrismaClientKnownRequestError);
      expect((error as Prisma.PrismaClientKnownRequestError).code).toBe('P2010');
      // Before: read as neither lost nor load, so a read's answer was 500 INTERNAL.
      expect(lostConnectionOf(error)).not.toBeNull();
      expect(overloadOf(error)).toBeNull();
    } finally {
      await database.$disconnect();
      await proxy.close();
    }
  });

  it('that PostgreSQL rolls back for a deadlock is load: it stored nothing, and is answered 503 with Retry-After', async () => {
    const database = createDatabase(testDatabaseUrl(), { maxConnections: 4 });
    const table = `deadlock_probe_${randomBytes(4).toString('hex')}`;
    await database.$executeRawUnsafe(`CREATE TABLE ${table} (id int PRIMARY KEY, n int NOT NULL)`);
    try {
      await database.$executeRawUnsafe(`INSERT INTO ${table} VALUES (1, 0), (2, 0)`);
      // Each takes its first row, then waits for the other's: PostgreSQL ends one of them (40P01).
      let arrived = 0;
      let bothHold = () => {};
      const holding = new Promise<void>((resolve) => (bothHold = resolve));
      const crossing = (first: number, second: number) =>
        database
          .$transaction(
            async (tx) => {
              await tx.$executeRawUnsafe(`UPDATE ${table} SET n = n + 1 WHERE id = $1`, first);
              if ((arrived += 1) === 2) bothHold();
              await holding;
              await tx.$executeRawUnsafe(`UPDATE ${table} SET n = n + 1 WHERE id = $1`, second);
            },
            { timeout: 20_000 },
          )
          .then(
            () => null,
            (error: unknown) => error,
          );
      const failures = (await Promise.all([crossing(1, 2), crossing(2, 1)])).filter((error) => error !== null);
      expect(failures).toHaveLength(1);
      const [error] = failures;
      expect((error as Prisma.PrismaClientKnownRequestError).code).toBe('P2010');
      // Before: load only as P2034 (a typed statement's form), so this was 500 INTERNAL.
      // A write conflict: a treasury group so rolled back stores its members one by one
      // (fundings/treasury-fundings-record.ts).
      expect(overloadOf(error)).toMatchObject({ retryAfterSeconds: 1, writeConflict: true });
      expect(lostConnectionOf(error)).toBeNull();
    } finally {
      await database.$executeRawUnsafe(`DROP TABLE ${table}`);
      await database.$disconnect();
    }
  });
});
