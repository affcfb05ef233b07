// Which run carries a single funding the API accepts (docs/fundings.md, Lanes): its own fundWallet
// workflow, or a lane's run shared with the other fundings of its lane (workflows/fund-lane.ts).
// FUNDING_LANES says: `off`, always its own workflow; `always`, always a lane; `auto` (the default),
// a lane once LANES_FROM_IN_FLIGHT single fundings are in flight, else its own workflow, so one
// funding alone keeps its latency and many together cost what a batch item costs.
// A lane's run is started here when the API has not seen it started lately (and by the worker and
// the sweep): the start finds a running one, so it costs one call per lane and minute at most.
import type { Client } from '@temporalio/client';
import type { FundingLanesMode } from '../domain/funding.ts';
import type { Logger } from '../lib/logger.ts';
import { workflowRefusalOf, type WorkflowRefusal } from '../lib/workflow-unavailable.ts';
import { laneOf, startFundLane } from '../workflows/fund-lane.contract.ts';

/** Single fundings in flight from which `auto` sends new ones to lanes. */
export const LANES_FROM_IN_FLIGHT = 8;
/** How long a count of fundings in flight is used before it is read again. */
const IN_FLIGHT_READ_EVERY_MS = 250;
/** How long a lane the API started (or found running) is taken to be running. */
const LANE_SEEN_FOR_MS = 60_000;

export type FundingPath = { kind: 'workflow' } | { kind: 'lane'; lane: number };

export interface FundingPathsDependencies {
  mode: FundingLanesMode;
  /** Single fundings in flight now (the funding record's inFlight). */
  inFlight: () => Promise<number>;
  temporal: Client;
  taskQueue: string;
  logger: Logger;
  now?: () => number;
}

export function createFundingPaths(deps: FundingPathsDependencies) {
  const now = deps.now ?? Date.now;
  let count: { value: number; at: number } | null = null;
  let reading: Promise<number> | null = null;
  const lanesSeen = new Map<number, number>();

  const inFlight = async (): Promise<number> => {
    if (count && now() - count.at < IN_FLIGHT_READ_EVERY_MS) return count.value;
    reading ??= deps
      .inFlight()
      .then((value) => {
        count = { value, at: now() };
        return value;
      })
      .finally(() => {
        reading = null;
      });
    return reading;
  };

  return {
    mode: deps.mode,

    /** The path of a new funding; `key` places it in a lane (a TOKEN funding's link, else its id). */
    async choose(key: string): Promise<FundingPath> {
      if (deps.mode === 'off') return { kind: 'workflow' };
      if (deps.mode === 'auto' && (await inFlight()) < LANES_FROM_IN_FLIGHT) return { kind: 'workflow' };
      return { kind: 'lane', lane: laneOf(key) };
    },

    /** Starts the lane's run unless it was seen lately; the refusal when Temporal cannot take the start now. */
    async ensureLane(lane: number): Promise<WorkflowRefusal | null> {
      const seen = lanesSeen.get(lane);
      if (seen !== undefined && now() - seen < LANE_SEEN_FOR_MS) return null;
      try {
        await startFundLane(deps.temporal, { taskQueue: deps.taskQueue, lane });
        lanesSeen.set(lane, now());
        return null;
      } catch (error) {
        const refusal = workflowRefusalOf(error);
        if (!refusal) throw error;
        deps.logger.warn({ lane, reason: refusal.reason }, 'lane not started: Temporal refused the start');
        return refusal;
      }
    },
  };
}

export type FundingPaths = ReturnType<typeof createFundingPaths>;
