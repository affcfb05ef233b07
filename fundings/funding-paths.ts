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
/** How old a count of fundings in flight may be before it is read again (in the background). */
const IN_FLIGHT_READ_EVERY_MS = 250;
/** How long a lane the API started (or found running) is taken to be running. */
const LANE_SEEN_FOR_MS = 60_000;

export type FundingPath = { kind: 'workflow' } | { kind: 'lane'; lane: number };

export interface FundingPathsDependencies {
  mode: FundingLanesMode;
  /** Single fundings in flight now (the funding record's inFlight). */
  inFlight: () => Promise<number>;
  /** Tells a lane's run that a funding joined it, once stored (lib/lane-bell.ts createLaneAnnouncer). */
  announce: (lane: number) => void;
  temporal: Client;
  taskQueue: string;
  logger: Logger;
  now?: () => number;
}

export function createFundingPaths(deps: FundingPathsDependencies) {
  const now = deps.now ?? Date.now;
  let count: { value: number; at: number } | null = null;
  /**
   * Fundings this process chose a path for since the count was read: a burst counts itself before
   * the next read (128 requests at once all see the same count, and each counts the ones before it).
   */
  let chosenSinceRead = 0;
  let reading: Promise<number> | null = null;
  const lanesSeen = new Map<number, number>();

  /**
   * The last count read, read again in the background once it is IN_FLIGHT_READ_EVERY_MS old: no
   * request waits for a read but the process's first (the count's query slows as the table grows,
   * and a burst must not queue behind it). A read that fails leaves the last count (none: 0, so a
   * funding keeps its own workflow).
   */
  const inFlight = async (): Promise<number> => {
    if ((!count || now() - count.at >= IN_FLIGHT_READ_EVERY_MS) && !reading) {
      const chosenBefore = chosenSinceRead;
      reading = deps
        .inFlight()
        .then(
          (value) => {
            count = { value, at: now() };
            chosenSinceRead -= chosenBefore;
            return value;
          },
          (error: Error) => {
            deps.logger.warn({ err: error.message }, 'fundings in flight not read; the last count stands');
            if (count) count = { ...count, at: now() };
            return count?.value ?? 0;
          },
        )
        .finally(() => {
          reading = null;
        });
    }
    return count ? count.value : reading!;
  };

  return {
    mode: deps.mode,

    /** The path of a new funding; `key` places it in a lane (a TOKEN funding's link, else its id). */
    async choose(key: string): Promise<FundingPath> {
      if (deps.mode === 'off') return { kind: 'workflow' };
      if (deps.mode === 'auto') {
        const before = await inFlight();
        chosenSinceRead += 1;
        if (before + chosenSinceRead <= LANES_FROM_IN_FLIGHT) return { kind: 'workflow' };
      }
      return { kind: 'lane', lane: laneOf(key) };
    },

    /** A funding was stored on `path`: its lane is told. */
    accepted(path: FundingPath): void {
      if (path.kind === 'lane') deps.announce(path.lane);
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
