// The admission gate in front of the database pool (lib/admission.ts): at most
// maxInFlight run, the next maxQueued wait in order, at most maxWaitMs each; what the line cannot
// take is refused at once with Overloaded (503 and Retry-After at the API, a retryable failure in
// an activity); one key's work runs one after the other. The lines each process sets up
// (lib/database.ts): the API's, the worker's, the token vault's refresh pool.
import { ApplicationFailure } from '@temporalio/activity';
import { describe, expect, it } from 'vitest';
import { databaseOverloadedType, withOverloadRetry } from '../../activities/overload-retry.ts';
import { Prisma } from '../../generated/prisma/client.ts';
import {
  createAdmissionGate,
  inAdmissionLane,
  currentAdmissionLane,
  lostConnectionOf,
  Overloaded,
  overloadOf,
  readBackDone,
} from '../../lib/admission.ts';
import {
  apiAdmissionLimits,
  DEFAULT_POOL_SIZE,
  refreshAdmissionLimits,
  refreshPoolSize,
  refreshWaitMs,
  workerAdmissionLimits,
} from '../../lib/database.ts';

const deferred = () => {
  let resolve!: () => void;
  const promise = new Promise<void>((done) => (resolve = done));
  return { promise, resolve };
};
const tick = () => new Promise((resolve) => setImmediate(resolve));
const settle = <T>(promise: Promise<T>) =>
  promise.then(
    (value) => ({ value }),
    (error: unknown) => ({ error }),
  );

describe('the admission gate', () => {
  it('runs maxInFlight at once, queues the next ones in order, and refuses past maxQueued at once', async () => {
    const gate = createAdmissionGate({ maxInFlight: 2, maxQueued: 2, maxWaitMs: 10_000 });
    const held = [deferred(), deferred()];
    const order: number[] = [];
    const running = held.map((hold, index) =>
      gate.run(async () => {
        order.push(index);
        await hold.promise;
      }),
    );
    const queued = [2, 3].map((index) =>
      gate.run(async () => {
        order.push(index);
      }),
    );
    const refused = await settle(gate.run(async () => order.push(4)));
    expect(refused).toMatchObject({ error: expect.any(Overloaded) });
    expect((refused as { error: Overloaded }).error.retryAfterSeconds).toBe(10);
    expect(gate.state()).toEqual({ inFlight: 2, queued: 2, refused: 1 });
    held[0]!.resolve();
    held[1]!.resolve();
    await Promise.all([...running, ...queued]);
    expect(order).toEqual([0, 1, 2, 3]);
    expect(gate.state()).toEqual({ inFlight: 0, queued: 0, refused: 1 });
  });

  it('refuses a request whose wait would pass maxWaitMs, and frees its place in line', async () => {
    const gate = createAdmissionGate({ maxInFlight: 1, maxQueued: 10, maxWaitMs: 50 });
    const hold = deferred();
    const first = gate.run(() => hold.promise);
    const waiting = await settle(gate.run(async () => 'late'));
    expect(waiting).toMatchObject({ error: expect.any(Overloaded) });
    expect(gate.state().queued).toBe(0);
    hold.resolve();
    await first;
    expect(await gate.run(async () => 'next')).toBe('next');
  });

  it('a failed transaction frees its slot', async () => {
    const gate = createAdmissionGate({ maxInFlight: 1, maxQueued: 1, maxWaitMs: 1000 });
    await expect(
      gate.run(async () => {
        throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
    expect(await gate.run(async () => 'ok')).toBe('ok');
    expect(gate.state()).toEqual({ inFlight: 0, queued: 0, refused: 0 });
  });

  it('runs one key’s work one after the other, other keys alongside', async () => {
    const gate = createAdmissionGate({ maxInFlight: 4, maxQueued: 10, maxWaitMs: 1000 });
    const events: string[] = [];
    const hold = deferred();
    const a1 = gate.run(async () => {
      events.push('a1 start');
      await hold.promise;
      events.push('a1 end');
    }, 'a');
    const a2 = gate.run(async () => {
      events.push('a2 start');
    }, 'a');
    const b1 = gate.run(async () => {
      events.push('b1');
    }, 'b');
    await b1;
    expect(events).toEqual(['a1 start', 'b1']);
    hold.resolve();
    await Promise.all([a1, a2]);
    expect(events).toEqual(['a1 start', 'b1', 'a1 end', 'a2 start']);
  });

  it('refuses a request waiting in its key’s lane as soon as its own wait passes maxWaitMs, not when its turn comes', async () => {
    const gate = createAdmissionGate({ maxInFlight: 4, maxQueued: 10, maxWaitMs: 50 });
    const hold = deferred();
    const first = gate.run(() => hold.promise, 'user');
    const startedAt = Date.now();
    let ran = false;
    const waiting = await settle(
      gate.run(async () => {
        ran = true;
      }, 'user'),
    );
    // Refused at its own limit while the one before it still runs (it used to wait the whole store).
    expect(waiting).toMatchObject({ error: expect.any(Overloaded) });
    expect(Date.now() - startedAt).toBeLessThan(1000);
    expect(ran).toBe(false);
    expect(gate.state()).toMatchObject({ inFlight: 1, queued: 0, refused: 1 });
    hold.resolve();
    await first;
    expect(ran).toBe(false);
    expect(await gate.run(async () => 'next', 'user')).toBe('next');
  });

  it('counts the requests waiting in lanes toward maxQueued', async () => {
    const gate = createAdmissionGate({ maxInFlight: 4, maxQueued: 2, maxWaitMs: 10_000 });
    const hold = deferred();
    const first = gate.run(() => hold.promise, 'user');
    const laneWaiters = [gate.run(async () => 'a', 'user'), gate.run(async () => 'b', 'user')];
    await tick();
    expect(gate.state()).toMatchObject({ inFlight: 1, queued: 2 });
    // The line is full: a third waiter of the same key, and one of another key's lane, are refused at once.
    expect(await settle(gate.run(async () => 'c', 'user'))).toMatchObject({ error: expect.any(Overloaded) });
    expect(await settle(gate.run(async () => 'd', 'other'))).toMatchObject({ value: 'd' });
    hold.resolve();
    await first;
    expect(await Promise.all(laneWaiters)).toEqual(['a', 'b']);
    expect(gate.state()).toEqual({ inFlight: 0, queued: 0, refused: 1 });
  });

  it('keeps a lane in order past a refused waiter: the one after it still waits for the one before it', async () => {
    const gate = createAdmissionGate({ maxInFlight: 4, maxQueued: 10, maxWaitMs: 200 });
    const events: string[] = [];
    const hold = deferred();
    const first = gate.run(async () => {
      events.push('first start');
      await hold.promise;
      events.push('first end');
    }, 'user');
    const refused = settle(
      gate.run(async () => {
        events.push('second');
      }, 'user'),
    );
    await new Promise((resolve) => setTimeout(resolve, 120));
    const third = gate.run(async () => {
      events.push('third');
    }, 'user');
    expect(await refused).toMatchObject({ error: expect.any(Overloaded) });
    expect(events).toEqual(['first start']);
    hold.resolve();
    await first;
    await third;
    expect(events).toEqual(['first start', 'first end', 'third']);
  }, 5000);

  it('bounds a lane waiter’s wait in its lane, then in the queue for a slot, each by maxWaitMs', async () => {
    const gate = createAdmissionGate({ maxInFlight: 1, maxQueued: 10, maxWaitMs: 150 });
    const slot = deferred();
    const lane = deferred();
    const holder = gate.run(() => slot.promise); // holds the only slot
    const laneHead = gate.run(() => lane.promise, 'user'); // waits for the slot, at the head of its lane
    const startedAt = Date.now();
    const behind = settle(gate.run(async () => 'late', 'user'));
    expect(await behind).toMatchObject({ error: expect.any(Overloaded) });
    expect(Date.now() - startedAt).toBeLessThan(1000);
    slot.resolve();
    lane.resolve();
    await holder;
    await settle(laneHead);
  });

  it('names the lane of the transactions started inside inAdmissionLane', async () => {
    expect(currentAdmissionLane()).toBeUndefined();
    expect(await inAdmissionLane('partner-user:u1', async () => currentAdmissionLane())).toBe('partner-user:u1');
    expect(await inAdmissionLane(null, async () => currentAdmissionLane())).toBeUndefined();
  });
});

describe('a committed act whose read back is refused for load (readBackDone)', () => {
  it('says the act was done, not that what was stored is not known; any other failure stays as it was', async () => {
    // Found by a read: a cancel, a resolve or a batch's move committed, then its answer's read was refused a
    // connection, and the 503 said "not known: send the same request again": the repeat answered 409, "only a funding
    // that has not started executing can be cancelled", of a funding this very request had cancelled.
    const refused = new Error('timeout exceeded when trying to connect');
    const error = await readBackDone('the funding was cancelled', () => Promise.reject(refused)).catch(
      (thrown: unknown) => thrown,
    );
    const busy = overloadOf(error);
    expect(busy).toMatchObject({ done: 'the funding was cancelled', retryAfterSeconds: 2 });
    expect(busy?.detail).toMatch(/^the funding was cancelled, but it could not be read back under load: /);
    expect(busy?.detail).not.toMatch(/not known/);
    expect(busy).not.toHaveProperty('connectionRefused');
    // A read back whose connection was lost (a failover, a pooler's restart): a read changed nothing, so the act is
    // known done all the same. Found by a read: it was answered 500, "nothing you asked may have been done".
    for (const lost of [
      new Error('Connection terminated unexpectedly'),
      new Prisma.PrismaClientKnownRequestError('closed', { code: 'P1017', clientVersion: 'test' }),
    ]) {
      const unread = await readBackDone('the batch was paused', () => Promise.reject(lost)).catch(
        (thrown: unknown) => thrown,
      );
      const answer = overloadOf(unread);
      expect(answer, lost.message).toMatchObject({ done: 'the batch was paused', retryAfterSeconds: 2 });
      expect(answer?.reason).toMatch(/^done-unread:/);
      expect(answer?.detail).toMatch(/^the batch was paused, but reading it back lost its database connection: /);
    }
    const other = new Error('a bug');
    await expect(readBackDone('the funding was cancelled', () => Promise.reject(other))).rejects.toBe(other);
    await expect(readBackDone('the funding was cancelled', async () => 'read')).resolves.toBe('read');
  });
});

describe('the lines each process puts in front of its pools (lib/database.ts)', () => {
  it('the worker keeps two connections for statements outside a transaction, and lets a transaction wait less than the shortest activity that writes (15 s)', () => {
    expect(workerAdmissionLimits(DEFAULT_POOL_SIZE)).toEqual({ maxInFlight: 8, maxQueued: 10_000, maxWaitMs: 10_000 });
    expect(workerAdmissionLimits(DEFAULT_POOL_SIZE).maxWaitMs).toBeGreaterThan(
      apiAdmissionLimits(DEFAULT_POOL_SIZE).maxWaitMs,
    );
    expect(workerAdmissionLimits(DEFAULT_POOL_SIZE).maxWaitMs).toBeLessThan(15_000);
  });

  it('the refresh pool has 2 to 4 connections beside the main pool; its line keeps one of them for a pair saved again', () => {
    expect(refreshPoolSize(DEFAULT_POOL_SIZE)).toBe(3);
    expect([1, 2, 10, 16, 100].map(refreshPoolSize)).toEqual([2, 2, 3, 4, 4]);
    expect(refreshAdmissionLimits(3, refreshWaitMs.worker)).toEqual({
      maxInFlight: 2,
      maxQueued: 1000,
      maxWaitMs: 30_000,
    });
    expect(refreshAdmissionLimits(2, refreshWaitMs.api).maxInFlight).toBe(1);
    expect(refreshWaitMs.api).toBe(apiAdmissionLimits(DEFAULT_POOL_SIZE).maxWaitMs);
  });
});

describe('an activity the database refused for load (activities/overload-retry.ts)', () => {
  const failureOf = async (error: unknown) => {
    const [activity] = Object.values(withOverloadRetry({ run: async () => Promise.reject(error) }));
    return activity!().then(
      () => undefined,
      (failure: unknown) => failure,
    );
  };

  it('fails retryable after the line’s Retry-After, whether the line refused it or Prisma timed out behind it', async () => {
    const refused = await failureOf(new Overloaded(10, 'waited 10000 ms for the database'));
    expect(refused).toBeInstanceOf(ApplicationFailure);
    expect(refused).toMatchObject({ type: databaseOverloadedType, nonRetryable: false, nextRetryDelay: 10_000 });
    const timedOut = await failureOf(
      new Prisma.PrismaClientKnownRequestError(
        'Transaction API error: unable to start a transaction in the given time',
        { code: 'P2028', clientVersion: 'test' },
      ),
    );
    expect(timedOut).toMatchObject({ type: databaseOverloadedType, nonRetryable: false, nextRetryDelay: 1000 });
  });

  it('leaves a refused connection to the activity’s own retry policy: a failover is waited out with its backoff, not spent in 2 s tries', async () => {
    // Found by a second read: mapped as load, a refused connection got a fixed 2 s retry, and a funding's create spent
    // its 15 attempts in half a minute of a failover, then ended FAILED.
    for (const refused of [
      new Prisma.PrismaClientKnownRequestError('too many connections', { code: 'P2037', clientVersion: 'test' }),
      new Prisma.PrismaClientKnownRequestError('cannot reach the database', { code: 'P1001', clientVersion: 'test' }),
      new Error('timeout exceeded when trying to connect'),
    ]) {
      expect(overloadOf(refused), refused.message).toMatchObject({ connectionRefused: true });
      expect(await failureOf(refused), refused.message).toBe(refused);
    }
  });

  it('tells a read’s lost connection (a failover, a restart) from a refused one, and a rolled-back conflict (P2034) is load', () => {
    const adapterError = (state: string) =>
      new Prisma.PrismaClientKnownRequestError(`state ${state}`, {
        code: 'P2010',
        clientVersion: 'test',
        meta: { driverAdapterError: { name: 'DriverAdapterError', cause: { originalCode: state, kind: 'postgres' } } },
      });
    for (const [error, reason] of [
      [adapterError('57P01'), 'P2010:57P01'],
      [adapterError('08006'), 'P2010:08006'],
      [new Prisma.PrismaClientKnownRequestError('closed', { code: 'P1017', clientVersion: 'test' }), 'P1017'],
      [new Error('Connection terminated unexpectedly'), 'connection-lost'],
    ] as const) {
      expect(lostConnectionOf(error), reason).toBe(reason);
      expect(overloadOf(error), reason).toBeNull();
    }
    // Refused before it ran, or another failure: not a lost connection.
    expect(lostConnectionOf(adapterError('53300'))).toBeNull();
    expect(lostConnectionOf(new Error('boom'))).toBeNull();
    const conflict = new Prisma.PrismaClientKnownRequestError('deadlock', { code: 'P2034', clientVersion: 'test' });
    expect(overloadOf(conflict)).toMatchObject({ reason: 'P2034', retryAfterSeconds: 1 });
  });

  it('leaves every other failure as it was', async () => {
    const other = new Error('boom');
    expect(await failureOf(other)).toBe(other);
    const final = ApplicationFailure.nonRetryable('no such funding', 'FundingNotFound');
    expect(await failureOf(final)).toBe(final);
  });
});
