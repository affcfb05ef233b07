// The batch run of `walletflow bench --batch N` (docs/benchmarks.md, funding batches): one batch of
// N items of 1.00 PHP from the treasury to fresh cash-in codes (or to given recipients: the
// TOKEN batch of `--token-batch`), sent as one CSV file, approved by
// a second key (the bench sets BATCH_APPROVAL_THRESHOLD under its total), and followed to
// COMPLETED. Measured from the approval to the batch's completedAt: items per second, the API,
// workers' and Temporal's CPU per item, the workers' resident memory every 5 s (its peak and its
// curve), and the batch workflow's histories (every run of its continue-as-new chain: the largest
// and the total). The single fundings it is compared with are measured in the same run
// (harness/bench.ts).
import { request } from 'undici';
import type { Client } from '@temporalio/client';
import { batchWorkflowId } from '../workflows/fund-batch.contract.ts';
import type { CodeSupply } from './bench-load.ts';
import { round1 } from './bench-load.ts';
import { rssMiBOf, sampleUsage, type ProcessUsage } from './process-usage.ts';

export interface BatchHistory {
  /** Runs of the batch workflow (its continue-as-new chain). */
  runs: number;
  /** Events of the largest run: what bounds the history at any batch size. */
  largestRunEvents: number;
  totalEvents: number;
}

export interface BatchBenchRun {
  items: number;
  /** The CSV's size and how long the create request took (every row checked, the total held, the items stored). */
  csvBytes: number;
  createMs: number;
  /** Approval to completedAt, s. */
  seconds: number;
  itemsPerSecond: number;
  /** The batch's counts by item state at the end. */
  counts: Record<string, number>;
  processes: Record<string, ProcessUsage>;
  /** API + workers + Temporal CPU per item, ms. */
  cpuMsPerItem: number;
  cpuSplit: { api: number; workers: number; temporal: number };
  /** The workers' resident memory (summed) every 5 s from the approval to completion: [seconds, MiB]. */
  workerRssMiB: { peak: number; samples: Array<[number, number]> };
  history: BatchHistory;
  /** Items the sandbox's ledger shows executed more than once: must be 0. */
  executedTwice: number;
}

export interface BatchBenchDependencies {
  apiBase: string;
  opsKey: string;
  approverKey: string;
  codes: CodeSupply;
  temporal: Client;
  /** The processes to measure: api, worker(s), temporal. */
  pids: () => Record<string, number | undefined>;
  workerPids: () => number[];
  /** Transfers the sandbox executed more than once (its own ledger). */
  executedTwice: () => Promise<number>;
  log: (line: string) => void;
}

interface BatchView {
  batchId: string;
  state: string;
  total: { count: number };
  counts: Record<string, number>;
  startedAt: string | null;
  completedAt: string | null;
  itemsPerSecond: number | null;
  etaSeconds: number | null;
}

async function call<T>(apiBase: string, key: string, method: 'GET' | 'POST', path: string, body?: { type: string; text: string }, idempotencyKey?: string): Promise<{ status: number; body: T }> {
  const response = await request(`${apiBase}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${key}`,
      ...(body ? { 'content-type': body.type } : {}),
      ...(idempotencyKey ? { 'idempotency-key': idempotencyKey } : {}),
    },
    ...(body ? { body: body.text } : {}),
    headersTimeout: 600_000,
    bodyTimeout: 600_000,
  });
  const text = await response.body.text();
  return { status: response.statusCode, body: JSON.parse(text) as T };
}

/** Every run of the batch's workflow: how many, the largest in events, the total. */
export async function batchHistory(client: Client, batchId: string): Promise<BatchHistory> {
  const workflowId = batchWorkflowId(batchId);
  let runs = 0;
  let largestRunEvents = 0;
  let totalEvents = 0;
  for await (const execution of client.workflow.list({ query: `WorkflowId = '${workflowId}'` })) {
    const history = await client.workflow.getHandle(workflowId, execution.runId).fetchHistory();
    const events = history.events?.length ?? 0;
    runs += 1;
    totalEvents += events;
    largestRunEvents = Math.max(largestRunEvents, events);
  }
  return { runs, largestRunEvents, totalEvents };
}

/** A batch item's recipient as the CSV names it: a cash-in code or a link id. */
export interface BatchRecipient {
  type: 'CODE' | 'TOKEN';
  value: string;
}

/** One batch of `items`, to fresh cash-in codes from `deps.codes` unless `recipients` names them. */
export async function runBatch(deps: BatchBenchDependencies, items: number, recipients?: readonly BatchRecipient[]): Promise<BatchBenchRun> {
  if (!recipients && deps.codes.left < items) await deps.codes.fill(items - deps.codes.left);
  const lines = ['reference,recipient_type,recipient,amount'];
  for (let index = 0; index < items; index += 1) {
    const recipient = recipients?.[index] ?? { type: 'CODE', value: deps.codes.take()! };
    lines.push(`bench-${String(index + 1).padStart(6, '0')},${recipient.type},${recipient.value},1.00`);
  }
  const csv = `${lines.join('\n')}\n`;

  const createStarted = performance.now();
  const created = await call<BatchView & { code?: string }>(deps.apiBase, deps.opsKey, 'POST', `/ops/funding-batches?name=bench-${items}`, { type: 'text/csv', text: csv }, `bench-batch-${Date.now()}`);
  const createMs = Math.round(performance.now() - createStarted);
  if (created.status !== 202) throw new Error(`the batch was not accepted: ${created.status} ${JSON.stringify(created.body).slice(0, 500)}`);
  const batchId = created.body.batchId;
  deps.log(`batch ${batchId}: ${items} items (${(csv.length / 2 ** 20).toFixed(1)} MiB of CSV) accepted in ${createMs} ms, state ${created.body.state}`);

  const usage = sampleUsage(deps.pids, 500);
  const samples: Array<[number, number]> = [];
  const approvedAt = performance.now();
  const sampleRss = () => {
    const total = deps.workerPids().reduce((sum, pid) => sum + (rssMiBOf(pid) ?? 0), 0);
    samples.push([Math.round((performance.now() - approvedAt) / 1000), Math.round(total)]);
  };
  sampleRss();
  const rssTimer = setInterval(sampleRss, 5000);
  let view: BatchView = created.body;
  try {
    if (view.state === 'AWAITING_APPROVAL') {
      const approved = await call<BatchView>(deps.apiBase, deps.approverKey, 'POST', `/ops/funding-batches/${batchId}/approve`, { type: 'application/json', text: '{}' });
      if (approved.status !== 200) throw new Error(`the approval was refused: ${approved.status} ${JSON.stringify(approved.body)}`);
      deps.log(`batch ${batchId}: approved by the second key`);
    }
    let lastLog = 0;
    for (;;) {
      await new Promise((resolve) => setTimeout(resolve, 1000));
      view = (await call<BatchView>(deps.apiBase, deps.opsKey, 'GET', `/ops/funding-batches/${batchId}`)).body;
      if (view.state !== 'RUNNING') break;
      if (performance.now() - lastLog > 10_000) {
        lastLog = performance.now();
        const done = Object.entries(view.counts).filter(([state]) => state !== 'PENDING' && state !== 'CREATING' && state !== 'EXECUTING').reduce((sum, [, n]) => sum + n, 0);
        deps.log(`batch: ${done}/${items} final, ${view.itemsPerSecond ?? '?'} items/s, ETA ${view.etaSeconds ?? '?'} s, worker RSS ${samples.at(-1)?.[1] ?? '?'} MiB`);
      }
    }
  } finally {
    clearInterval(rssTimer);
  }
  sampleRss();
  const processes = usage.stop();
  if (view.state !== 'COMPLETED' || !view.startedAt || !view.completedAt) throw new Error(`the batch ended ${view.state}: ${JSON.stringify(view.counts)}`);
  const seconds = (Date.parse(view.completedAt) - Date.parse(view.startedAt)) / 1000;
  const cpu = (names: string[]) => names.reduce((sum, name) => sum + (processes[name]?.cpuSeconds ?? 0), 0);
  const workerNames = Object.keys(processes).filter((name) => name.startsWith('worker'));
  const perItem = (cpuSeconds: number) => round1((cpuSeconds * 1000) / items);
  const history = await batchHistory(deps.temporal, batchId);
  return {
    items,
    csvBytes: csv.length,
    createMs,
    seconds: round1(seconds),
    itemsPerSecond: round1(items / seconds),
    counts: view.counts,
    processes,
    cpuMsPerItem: perItem(cpu(['api', 'temporal', ...workerNames])),
    cpuSplit: { api: perItem(cpu(['api'])), workers: perItem(cpu(workerNames)), temporal: perItem(cpu(['temporal'])) },
    workerRssMiB: { peak: Math.max(...samples.map(([, rss]) => rss)), samples },
    history,
    executedTwice: await deps.executedTwice(),
  };
}
