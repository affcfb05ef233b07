// Temporal history events per funding: the unit Temporal Cloud bills by, for fundings carried by
// their own workflows and by lanes alike. A funding's own workflow counts whole (whichever path
// started it: the API, or a lane that handed it over); a lane's runs count the events written
// during the level's window, shared by the fundings the level finished.
import type { Client } from '@temporalio/client';
import type { Database } from '../lib/database.ts';

export interface HistoryPerFunding {
  /** Events per finished funding, every workflow that worked on them together. */
  events: number;
  /** Fundings of the level carried by a lane (the rest by their own workflows). */
  laneCarried: number;
  /** Fundings of the level whose own workflow ran (started by the API, or handed over by a lane). */
  ownWorkflows: number;
}

/** A workflow id Temporal has no run of (gRPC NOT_FOUND, however the SDK wraps it). */
export function workflowNotFound(error: unknown): boolean {
  const failure = error as Error & { code?: number; cause?: { code?: number } };
  return (
    failure.name === 'WorkflowNotFoundError' ||
    failure.code === 5 ||
    failure.cause?.code === 5 ||
    /NOT_FOUND|workflow not found/i.test(failure.message ?? '')
  );
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
  // Started on their own by the API: every one has its workflow; a spread sample of them is read.
  const own = rows.filter((row) => row.lane === null);
  const step = Math.max(1, Math.floor(own.length / sample));
  const sampled = own.filter((_row, index) => index % step === 0).slice(0, sample);
  let sampledEvents = 0;
  for (const row of sampled) sampledEvents += await eventsOf(client, row.workflowId);
  const ownTotal = sampled.length === 0 ? 0 : (sampledEvents / sampled.length) * own.length;
  // A lane's: a workflow of its own only when the lane handed it over; each one looked at.
  let handedOver = 0;
  let handedOverEvents = 0;
  const laneRows = rows.filter((row) => row.lane !== null);
  for (let index = 0; index < laneRows.length; index += 16) {
    const counts = await Promise.all(
      laneRows.slice(index, index + 16).map((row) =>
        eventsOf(client, row.workflowId).catch((error: unknown) => {
          // No workflow of its own: the lane carried it to the end.
          if (workflowNotFound(error)) return 0;
          throw error;
        }),
      ),
    );
    for (const events of counts) {
      if (events === 0) continue;
      handedOver += 1;
      handedOverEvents += events;
    }
  }
  let laneEvents = 0;
  // The lanes that carried the level's fundings, by the run each claim recorded.
  const lanes = new Set(rows.flatMap((row) => (row.lane !== null && row.carriedBy ? [row.carriedBy] : [])));
  for (const workflowId of lanes) {
    for await (const run of client.workflow.list({ query: `WorkflowId = '${workflowId}'` })) {
      const started = run.startTime.getTime();
      const closed = run.closeTime?.getTime() ?? Number.POSITIVE_INFINITY;
      if (started > window.to || closed < window.from) continue;
      laneEvents += await eventsOf(client, workflowId, run.runId, window);
    }
  }
  return {
    events: Math.round(((ownTotal + handedOverEvents + laneEvents) / rows.length) * 100) / 100,
    laneCarried: laneRows.length,
    ownWorkflows: own.length + handedOver,
  };
}
