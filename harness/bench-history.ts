// Temporal history events per funding: the unit Temporal Cloud bills by, for fundings carried by
// their own workflows and by lanes alike. A funding's own workflow counts whole (whichever path
// started it: the API, or a lane that handed it over); a lane's runs count the events written
// during the level's window, shared by the fundings the level finished.
import type { Client } from '@temporalio/client';
import type { Database } from '../lib/database.ts';
import { LANE_COUNT, laneWorkflowId } from '../workflows/fund-lane.contract.ts';

export interface HistoryPerFunding {
  /** Events per finished funding, every workflow that worked on them together. */
  events: number;
  /** Fundings of the level carried by a lane (the rest by their own workflows). */
  laneCarried: number;
  /** Fundings of the level whose own workflow ran (started by the API, or handed over by a lane). */
  ownWorkflows: number;
}

const millisOf = (time: { seconds?: unknown; nanos?: number | null } | null | undefined): number =>
  time ? Number(time.seconds ?? 0) * 1000 + Math.floor((time.nanos ?? 0) / 1e6) : 0;

/** Events of one workflow run, all of them or those written in [from, to]. */
async function eventsOf(client: Client, workflowId: string, runId?: string, window?: { from: number; to: number }) {
  const history = await client.workflow.getHandle(workflowId, runId).fetchHistory();
  const events = history.events ?? [];
  if (!window) return events.length;
  return events.filter((event) => {
    const at = millisOf(event.eventTime);
    return at >= window.from && at <= window.to;
  }).length;
}

/**
 * Events per funding for the fundings `fundingIds` finished in [from, to]: each own workflow's whole history (at most
 * `sample` of them read, the rest counted at their average), plus every lane run's events of the window.
 */
export async function historyPerFunding(
  client: Client,
  database: Database,
  fundingIds: string[],
  window: { from: number; to: number },
  sample = 40,
): Promise<HistoryPerFunding> {
  if (fundingIds.length === 0) return { events: 0, laneCarried: 0, ownWorkflows: 0 };
  const rows = await database.funding.findMany({
    where: { id: { in: fundingIds } },
    select: { workflowId: true, lane: true, carriedBy: true },
  });
  let own = 0;
  let ownEvents = 0;
  let read = 0;
  for (const row of rows) {
    let events: number | null = null;
    if (read < sample) {
      try {
        events = await eventsOf(client, row.workflowId);
        read += 1;
      } catch {
        events = 0; // no workflow of its own: a lane carried it to the end
      }
    }
    if (events === null) continue;
    if (events > 0) {
      own += 1;
      ownEvents += events;
    }
  }
  // The sample's share of fundings with a workflow of their own, carried over to the rest.
  const sampled = Math.min(rows.length, sample);
  const ownWorkflows = Math.round((own / sampled) * rows.length);
  const ownTotal = own === 0 ? 0 : (ownEvents / own) * ownWorkflows;
  let laneEvents = 0;
  for (let lane = 0; lane < LANE_COUNT; lane += 1) {
    const workflowId = laneWorkflowId(lane);
    for await (const run of client.workflow.list({ query: `WorkflowId = '${workflowId}'` })) {
      const started = run.startTime.getTime();
      const closed = run.closeTime?.getTime() ?? Number.POSITIVE_INFINITY;
      if (started > window.to || closed < window.from) continue;
      laneEvents += await eventsOf(client, workflowId, run.runId, window);
    }
  }
  return {
    events: Math.round(((ownTotal + laneEvents) / rows.length) * 100) / 100,
    laneCarried: rows.filter((row) => row.lane !== null && row.carriedBy !== null).length,
    ownWorkflows,
  };
}
