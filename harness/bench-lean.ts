// The bench's lean floor (docs/benchmarks.md): at each level, the same closed loops as
// walletflow's, each starting the minimal Temporal workflow of harness/lean-floor/ (create and
// execute as two default activities, one SQL write each) on the same Temporal, PostgreSQL and
// sandbox, in its own worker process. What walletflow spends above it is walletflow's overhead;
// what both spend in Temporal is Temporal's. Also: the shape of the histories both leave (events
// and tasks per item).
import { workflowNotFound } from './bench-history.ts';
import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import proto from '@temporalio/proto';
import type { Database } from '../lib/database.ts';
import { benchAmount, levelRun, closedLoops, watchUntilDone, type CodeSupply, type LevelRun } from './bench-load.ts';
import {
  leanFundingWorkflowType,
  leanTable,
  leanTaskQueue,
  type LeanFundingWorkflow,
} from './lean-floor/lean-contract.ts';

/** What a history holds, averaged over the sampled items. */
export interface HistoryShape {
  sampled: number;
  events: number;
  workflowTasks: number;
  activityTasks: number;
  /** Marker events: local activities and patches. */
  markers: number;
  timers: number;
  searchAttributeUpserts: number;
}

const { EventType } = proto.temporal.api.enums.v1;

const emptyShape: HistoryShape = {
  sampled: 0,
  events: 0,
  workflowTasks: 0,
  activityTasks: 0,
  markers: 0,
  timers: 0,
  searchAttributeUpserts: 0,
};

/** Reads up to `limit` histories and averages their shape (one decimal). */
export async function historyShape(client: Client, workflowIds: string[], limit = 5): Promise<HistoryShape> {
  const totals = { ...emptyShape };
  // A funding a lane carried to the end has no workflow of its own: the sample is of those that have one.
  const sample: string[] = [];
  for (const workflowId of workflowIds) {
    if (sample.length === limit) break;
    let history;
    try {
      history = await client.workflow.getHandle(workflowId).fetchHistory();
    } catch (error) {
      if (workflowNotFound(error)) continue;
      throw error;
    }
    sample.push(workflowId);
    for (const event of history.events ?? []) {
      totals.events += 1;
      const type = Number(event.eventType);
      if (type === EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED) totals.workflowTasks += 1;
      else if (type === EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED) totals.activityTasks += 1;
      else if (type === EventType.EVENT_TYPE_MARKER_RECORDED) totals.markers += 1;
      else if (type === EventType.EVENT_TYPE_TIMER_STARTED) totals.timers += 1;
      else if (type === EventType.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES) totals.searchAttributeUpserts += 1;
    }
  }
  if (sample.length === 0) return emptyShape;
  const average = (value: number) => Math.round((value / sample.length) * 10) / 10;
  return {
    sampled: sample.length,
    events: average(totals.events),
    workflowTasks: average(totals.workflowTasks),
    activityTasks: average(totals.activityTasks),
    markers: average(totals.markers),
    timers: average(totals.timers),
    searchAttributeUpserts: average(totals.searchAttributeUpserts),
  };
}

/** The lean floor's rows once their final write is in, with its time (PostgreSQL's clock). */
function watchLeanRows(database: Database, intervalMs: number) {
  return watchUntilDone(async (ids) => {
    const rows = await database.$queryRawUnsafe<Array<{ id: string; final_at: Date }>>(
      `SELECT id::text AS id, final_at FROM ${leanTable} WHERE id = ANY($1::uuid[]) AND final_at IS NOT NULL`,
      ids,
    );
    return rows.map((row) => ({ id: row.id, at: row.final_at.getTime() }));
  }, intervalMs);
}

export interface LeanLevelRun extends LevelRun {
  history: HistoryShape;
}

/** One level of the lean floor: closed loops starting leanFunding and waiting for its final write. */
export async function runLeanLevel(
  deps: { client: Client; database: Database; codes: CodeSupply },
  options: { concurrency: number; seconds: number; finalTimeoutMs?: number },
): Promise<LeanLevelRun> {
  const watcher = watchLeanRows(deps.database, 10);
  const latencies: number[] = [];
  const finishedAt: number[] = [];
  const workflowIds: string[] = [];
  let failed = 0;
  let window;
  try {
    window = await closedLoops(options.concurrency, options.seconds, async () => {
      const code = deps.codes.take();
      if (code === undefined) return 'empty';
      const id = randomUUID();
      const workflowId = `lean-${id}`;
      const sentAt = Date.now();
      try {
        // The item's row first, with its code (as walletflow's API stores the funding first).
        await deps.database.$executeRawUnsafe(
          `INSERT INTO ${leanTable} (id, code, status) VALUES ($1::uuid, $2, 'PENDING')`,
          id,
          code,
        );
        await deps.client.workflow.start<LeanFundingWorkflow>(leanFundingWorkflowType, {
          taskQueue: leanTaskQueue,
          workflowId,
          args: [{ id, amount: benchAmount }],
        });
      } catch {
        failed += 1;
        return 'done';
      }
      const finalAt = await watcher.done(id, options.finalTimeoutMs ?? 60_000);
      if (finalAt === null) {
        failed += 1;
        return 'done';
      }
      latencies.push(Math.max(0, finalAt - sentAt));
      finishedAt.push(finalAt);
      workflowIds.push(workflowId);
      return 'done';
    });
  } finally {
    watcher.stop();
  }
  const lastEnd = finishedAt.reduce((last, at) => Math.max(last, at), window.end);
  return {
    ...levelRun({
      completed: finishedAt.length,
      seconds: (lastEnd - window.start) / 1000,
      latencies,
      failed,
      ranOutOfCodes: window.ranOut,
    }),
    history: await historyShape(deps.client, workflowIds),
  };
}
