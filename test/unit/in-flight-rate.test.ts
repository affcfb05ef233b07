// The rate a batch runner and a lane share (workflows/in-flight-rate.ts): a 429 holds new work back
// and halves how many run at once, once per episode; successes give it back one at a time.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { InFlightRate, MAX_SLOW_DOWN_MS } from '../../workflows/in-flight-rate.ts';

const ok = { slowDownMs: null };
afterEach(() => vi.useRealTimers());

describe('how many fundings run at once', () => {
  it('halves on a 429 and holds new work back for its Retry-After, at most five minutes', () => {
    vi.useFakeTimers({ now: 1_000_000 });
    const rate = new InFlightRate(32, 32);
    rate.onOutcome({ slowDownMs: 3000 }, 16, rate.episode());
    expect(rate.inFlight).toBe(16);
    expect(rate.resumeAt).toBe(1_003_000);
    rate.onOutcome({ slowDownMs: 60 * 60_000 }, 16, rate.episode());
    expect(rate.inFlight).toBe(8);
    expect(rate.resumeAt).toBe(1_000_000 + MAX_SLOW_DOWN_MS);
  });

  it('halves once for the chunks already under way when it halved: they tell of the same congestion', () => {
    const rate = new InFlightRate(32, 32);
    const [first, second] = [rate.episode(), rate.episode()];
    rate.onOutcome({ slowDownMs: 1000 }, 16, first);
    rate.onOutcome({ slowDownMs: 1000 }, 16, second);
    expect([rate.inFlight, rate.slowDowns]).toEqual([16, 1]);
    rate.onOutcome({ slowDownMs: 1000 }, 8, rate.episode());
    expect([rate.inFlight, rate.slowDowns]).toEqual([8, 2]);
  });

  it('never goes below one', () => {
    const rate = new InFlightRate(1, 32);
    rate.onOutcome({ slowDownMs: 1000 }, 1, rate.episode());
    expect(rate.inFlight).toBe(1);
  });

  it('gives one back after as many done in a row without a 429 as run at once, up to the most; a 429 starts the count again', () => {
    const rate = new InFlightRate(4, 5);
    rate.onOutcome(ok, 3, rate.episode());
    expect(rate.inFlight).toBe(4);
    rate.onOutcome({ slowDownMs: 0 }, 3, 99);
    rate.onOutcome(ok, 3, rate.episode());
    expect(rate.inFlight).toBe(4);
    rate.onOutcome(ok, 1, rate.episode());
    expect(rate.inFlight).toBe(5);
    rate.onOutcome(ok, 50, rate.episode());
    expect(rate.inFlight).toBe(5);
  });
});
