// The admission gate in front of the database pool (lib/admission.ts): at most
// maxInFlight run, the next maxQueued wait in order, at most maxWaitMs each; what the line cannot
// take is refused at once with Overloaded (503 and Retry-After at the API); one key's work runs
// one after the other.
import { describe, expect, it } from 'vitest';
import { createAdmissionGate, inAdmissionLane, currentAdmissionLane, Overloaded } from '../../lib/admission.ts';

const deferred = () => {
  let resolve!: () => void;
  const promise = new Promise<void>((done) => (resolve = done));
  return { promise, resolve };
};
const tick = () => new Promise((resolve) => setImmediate(resolve));
const settle = <T>(promise: Promise<T>) => promise.then((value) => ({ value }), (error: unknown) => ({ error }));

describe('the admission gate', () => {
  it('runs maxInFlight at once, queues the next ones in order, and refuses past maxQueued at once', async () => {
    const gate = createAdmissionGate({ maxInFlight: 2, maxQueued: 2, maxWaitMs: 10_000 });
    const held = [deferred(), deferred()];
    const order: number[] = [];
    const running = held.map((hold, index) => gate.run(async () => { order.push(index); await hold.promise; }));
    const queued = [2, 3].map((index) => gate.run(async () => { order.push(index); }));
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
    await expect(gate.run(async () => { throw new Error('boom'); })).rejects.toThrow('boom');
    expect(await gate.run(async () => 'ok')).toBe('ok');
    expect(gate.state()).toEqual({ inFlight: 0, queued: 0, refused: 0 });
  });

  it('runs one key’s work one after the other, other keys alongside', async () => {
    const gate = createAdmissionGate({ maxInFlight: 4, maxQueued: 10, maxWaitMs: 1000 });
    const events: string[] = [];
    const hold = deferred();
    const a1 = gate.run(async () => { events.push('a1 start'); await hold.promise; events.push('a1 end'); }, 'a');
    const a2 = gate.run(async () => { events.push('a2 start'); }, 'a');
    const b1 = gate.run(async () => { events.push('b1'); }, 'b');
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
    const waiting = await settle(gate.run(async () => { ran = true; }, 'user'));
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
    const first = gate.run(async () => { events.push('first start'); await hold.promise; events.push('first end'); }, 'user');
    const refused = settle(gate.run(async () => { events.push('second'); }, 'user'));
    await new Promise((resolve) => setTimeout(resolve, 120));
    const third = gate.run(async () => { events.push('third'); }, 'user');
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
