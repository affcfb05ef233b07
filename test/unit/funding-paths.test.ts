// Which run carries a new single funding (fundings/funding-paths.ts): FUNDING_LANES=off keeps each
// on its own workflow, always puts each in a lane, and auto sends a funding to a lane once
// LANES_FROM_IN_FLIGHT are in flight, counting a burst that arrives before the next read of the
// count (128 requests at once all wait for one read). A lane is started at most once a minute.
import type { Client } from '@temporalio/client';
import { describe, expect, it } from 'vitest';
import { createFundingPaths, LANES_FROM_IN_FLIGHT, type FundingPath } from '../../fundings/funding-paths.ts';
import { createLogger } from '../../lib/logger.ts';
import { LANE_COUNT, laneOf } from '../../workflows/fund-lane.contract.ts';
import type { FundingLanesMode } from '../../domain/funding.ts';

function paths(mode: FundingLanesMode, inFlight: number, clock = { now: 0 }) {
  const starts: string[] = [];
  const temporal = {
    workflow: {
      start: async (_type: string, options: { workflowId: string }) => {
        starts.push(options.workflowId);
      },
    },
  } as unknown as Client;
  let reads = 0;
  const created = createFundingPaths({
    mode,
    inFlight: async () => {
      reads += 1;
      return inFlight;
    },
    announce: () => {},
    temporal,
    taskQueue: 'test',
    logger: createLogger({ level: 'silent' }),
    now: () => clock.now,
  });
  return { created, starts, reads: () => reads };
}

const kinds = (chosen: FundingPath[]) => chosen.map((path) => path.kind);

describe('funding paths', () => {
  it('off: every funding on its own workflow, however many are in flight', async () => {
    const { created } = paths('off', 500);
    expect(kinds(await Promise.all(Array.from({ length: 20 }, (_, i) => created.choose(`k${i}`))))).toEqual(
      Array(20).fill('workflow'),
    );
  });

  it('always: every funding in the lane of its key', async () => {
    const { created } = paths('always', 0);
    const chosen = await Promise.all(['a', 'b', 'c'].map((key) => created.choose(key)));
    expect(chosen).toEqual(['a', 'b', 'c'].map((key) => ({ kind: 'lane', lane: laneOf(key) })));
  });

  it('auto: a burst that arrives at once counts itself: the first ones on their own, the rest in lanes, one read', async () => {
    const { created, reads } = paths('auto', 0);
    const chosen = await Promise.all(Array.from({ length: 20 }, (_, i) => created.choose(`k${i}`)));
    expect(kinds(chosen)).toEqual([
      ...Array(LANES_FROM_IN_FLIGHT).fill('workflow'),
      ...Array(20 - LANES_FROM_IN_FLIGHT).fill('lane'),
    ]);
    expect(reads()).toBe(1);
  });

  it('auto: one funding at a time keeps its own workflow; many in flight go to lanes', async () => {
    const clock = { now: 0 };
    const quiet = paths('auto', 1, clock);
    for (let i = 0; i < 5; i += 1) {
      clock.now += 1000;
      expect((await quiet.created.choose(`k${i}`)).kind).toBe('workflow');
    }
    const busy = paths('auto', LANES_FROM_IN_FLIGHT, clock);
    expect((await busy.created.choose('k')).kind).toBe('lane');
  });

  it('starts a lane once, then not again within the minute', async () => {
    const clock = { now: 0 };
    const { created, starts } = paths('always', 0, clock);
    expect(await created.ensureLane(1)).toBeNull();
    expect(await created.ensureLane(1)).toBeNull();
    clock.now += 61_000;
    expect(await created.ensureLane(1)).toBeNull();
    expect(starts).toEqual(['test-funding-lane-1', 'test-funding-lane-1']);
  });

  it('spreads keys over every lane', () => {
    const lanes = new Set(
      Array.from({ length: 100 }, (_, i) => laneOf(`00000000-0000-4000-8000-${String(i).padStart(12, '0')}`)),
    );
    expect([...lanes].sort()).toEqual(Array.from({ length: LANE_COUNT }, (_, lane) => lane));
  });
});
