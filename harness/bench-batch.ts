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

async function call<T>(
  apiBase: string,
  key: string,
  method: 'GET' | 'POST',
  path: string,
  body?: { type: string; text: string },
  idempotencyKey?: string,
): Promise<{ status: number; body: T }> {
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
export const batchHistory = (client: Client, batchId: string): Promise<BatchHistory> =>
  chainHistory(client, batchWorkflowId(batchId));

/** Every run of a workflow's continue-as-new chain: how many, the largest in events, the total. */
export async function chainHistory(client: Client, workflowId: string): Promise<BatchHistory> {
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
export async function runBatch(
  deps: BatchBenchDependencies,
  items: number,
  recipients?: readonly BatchRecipient[],
): Promise<BatchBenchRun> {
  if (!recipients && deps.codes.left < items) await deps.codes.fill(items - deps.codes.left);
  const lines = ['reference,recipient_type,recipient,amount'];
  for (let index = 0; index < items; index += 1) {
    const recipient = recipients?.[index] ?? { type: 'CODE', value: deps.codes.take()! };
    lines.push(`bench-${String(index + 1).padStart(6, '0')},${recipient.type},${recipient.value},1.00`);
  }
  const csv = `${lines.join('\n')}\n`;

  const createStarted = performance.now();
  const created = await call<BatchView & { code?: string }>(
    deps.apiBase,
    deps.opsKey,
    'POST',
    `/ops/funding-batches?name=bench-${items}`,
    { type: 'text/csv', text: csv },
    `bench-batch-${Date.now()}`,
  );
  const createMs = Math.round(performance.now() - createStarted);
  if (created.status !== 202)
    throw new Error(`the batch was not accepted: ${created.status} ${JSON.stringify(created.body).slice(0, 500)}`);
  const batchId = created.body.batchId;
  deps.log(
    `batch ${batchId}: ${items} items (${(csv.length / 2 ** 20).toFixed(1)} MiB of CSV) accepted in ${createMs} ms, state ${created.body.state}`,
  );

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
      const approved = await call<BatchView>(
        deps.apiBase,
        deps.approverKey,
        'POST',
        `/ops/funding-batches/${batchId}/approve`,
        { type: 'application/json', text: '{}' },
      );
      if (approved.status !== 200)
        throw new Error(`the approval was refused: ${approved.status} ${JSON.stringify(approved.body)}`);
      deps.log(`batch ${batchId}: approved by the second key`);
    }
    let lastLog = 0;
    for (;;) {
      await new Promise((resolve) => setTimeout(resolve, 1000));
      view = (await call<BatchView>(deps.apiBase, deps.opsKey, 'GET', `/ops/funding-batches/${batchId}`)).body;
      if (view.state !== 'RUNNING') break;
      if (performance.now() - lastLog > 10_000) {
        lastLog = performance.now();
        const done = Object.entries(view.counts)
          .filter(([state]) => state !== 'PENDING' && state !== 'CREATING' && state !== 'EXECUTING')
          .reduce((sum, [, n]) => sum + n, 0);
        deps.log(
          `batch: ${done}/${items} final, ${view.itemsPerSecond ?? '?'} items/s, ETA ${view.etaSeconds ?? '?'} s, worker RSS ${samples.at(-1)?.[1] ?? '?'} MiB`,
        );
      }
    }
  } finally {
    clearInterval(rssTimer);
  }
  sampleRss();
  const processes = usage.stop();
  if (view.state !== 'COMPLETED' || !view.startedAt || !view.completedAt)
    throw new Error(`the batch ended ${view.state}: ${JSON.stringify(view.counts)}`);
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

export interface BatchStoreRun {
  items: number;
  csvBytes: number;
  /** The batch stored and cancelled with nothing else running: the store's and cancel's own figures. */
  alone: StorePhases;
  /** A second batch of the same items stored and cancelled while single treasury fundings are sent alongside. */
  alongside: StorePhases & { singles: { create: SinglesDuring; cancel: SinglesDuring } };
}

export interface StorePhases {
  /** The create request: sent to answered (every row checked, the total held, the items stored), ms. */
  createMs: number;
  /** The cancel of the stored batch (every item CANCELLED, every hold released), ms. */
  cancelMs: number;
  /**
   * The API's resident memory before the create, and its peak during the create and the cancel (read every 100 ms),
   * MiB.
   */
  apiRssMiB: { before: number; createPeak: number; cancelPeak: number };
}

export interface SinglesDuring {
  sent: number;
  statuses: Record<string, number>;
  maxMs: number;
  p99Ms: number;
}

function singlesDuring(answers: ReadonlyArray<{ ms: number; status: string }>): SinglesDuring {
  const statuses: Record<string, number> = {};
  for (const answer of answers) statuses[answer.status] = (statuses[answer.status] ?? 0) + 1;
  const sorted = answers.map((answer) => answer.ms).sort((a, b) => a - b);
  return {
    sent: answers.length,
    statuses,
    maxMs: Math.round(sorted.at(-1) ?? 0),
    p99Ms: Math.round(sorted[Math.floor(sorted.length * 0.99)] ?? 0),
  };
}

type StoreDeps = Pick<BatchBenchDependencies, 'apiBase' | 'opsKey' | 'codes' | 'log'> & {
  apiPid: () => number | undefined;
  singleCodes: CodeSupply;
};

/** One batch of the CSV stored, then cancelled: their times and the API's resident memory every 100 ms. */
async function storeAndCancel(
  deps: StoreDeps,
  csv: string,
  label: string,
  onPhase: (phase: 'create' | 'cancel') => void = () => undefined,
): Promise<StorePhases> {
  const rss = () => rssMiBOf(deps.apiPid() ?? -1) ?? 0;
  const before = Math.round(rss());
  let peak = 0;
  const sampler = setInterval(() => (peak = Math.max(peak, rss())), 100);
  try {
    onPhase('create');
    const createStarted = performance.now();
    const created = await call<BatchView & { code?: string }>(
      deps.apiBase,
      deps.opsKey,
      'POST',
      `/ops/funding-batches?name=${label}`,
      { type: 'text/csv', text: csv },
      `bench-store-${label}-${Date.now()}`,
    );
    const createMs = Math.round(performance.now() - createStarted);
    const createPeak = Math.round(Math.max(peak, rss()));
    if (created.status !== 202)
      throw new Error(`the batch was not accepted: ${created.status} ${JSON.stringify(created.body).slice(0, 500)}`);
    deps.log(
      `${label}: ${created.body.total.count} items stored in ${createMs} ms, state ${created.body.state}, API RSS ${before} → peak ${createPeak} MiB`,
    );
    peak = 0;
    onPhase('cancel');
    const cancelStarted = performance.now();
    const cancelled = await call<BatchView>(
      deps.apiBase,
      deps.opsKey,
      'POST',
      `/ops/funding-batches/${created.body.batchId}/cancel`,
      { type: 'application/json', text: '{}' },
    );
    const cancelMs = Math.round(performance.now() - cancelStarted);
    const cancelPeak = Math.round(Math.max(peak, rss()));
    if (cancelled.status !== 200)
      throw new Error(`the cancel was refused: ${cancelled.status} ${JSON.stringify(cancelled.body).slice(0, 500)}`);
    deps.log(
      `${label}: cancelled in ${cancelMs} ms (${JSON.stringify(cancelled.body.counts)}), API RSS peak ${cancelPeak} MiB`,
    );
    return { createMs, cancelMs, apiRssMiB: { before, createPeak, cancelPeak } };
  } finally {
    clearInterval(sampler);
  }
}

/**
 * `walletflow bench --batch-store N`: the store of a batch alone, not its run. One batch of N
 * items (as runBatch sends it: one CSV file from the treasury), stored AWAITING_APPROVAL, then
 * cancelled, with nothing else running; then a second batch of the same items (other references)
 * stored and cancelled while `singleLoops` closed loops send single treasury fundings (their
 * answers' statuses and times: the treasury and IN_FLIGHT accounts the batch's holds lock are
 * theirs too). The time and the API's resident memory (every 100 ms) of each create and cancel.
 */
export async function storeBatch(deps: StoreDeps, items: number, singleLoops = 4): Promise<BatchStoreRun> {
  if (deps.codes.left < items) await deps.codes.fill(items - deps.codes.left);
  const codes = Array.from({ length: items }, () => deps.codes.take()!);
  const csvOf = (prefix: string) => {
    const lines = ['reference,recipient_type,recipient,amount'];
    for (let index = 0; index < items; index += 1)
      lines.push(`${prefix}-${String(index + 1).padStart(6, '0')},CODE,${codes[index]!},1.00`);
    return `${lines.join('\n')}\n`;
  };
  let csv = csvOf('alone');
  const csvBytes = csv.length;
  const alone = await storeAndCancel(deps, csv, `store-alone-${items}`);
  csv = csvOf('beside');

  const answers = {
    create: [] as Array<{ ms: number; status: string }>,
    cancel: [] as Array<{ ms: number; status: string }>,
  };
  let phase: 'create' | 'cancel' = 'create';
  let singlesRunning = true;
  const singles = Promise.all(
    Array.from({ length: singleLoops }, async () => {
      while (singlesRunning) {
        const code = deps.singleCodes.take();
        if (code === undefined) return;
        const sentAt = performance.now();
        const sentIn = phase;
        let status = 'no answer';
        try {
          const response = await request(`${deps.apiBase}/ops/fundings`, {
            method: 'POST',
            headers: {
              authorization: `Bearer ${deps.opsKey}`,
              'content-type': 'application/json',
              'idempotency-key': `bench-store-${code}-${Date.now()}`,
            },
            body: JSON.stringify({ recipient: { type: 'CODE', code }, amount: { currency: 'PHP', value: '1.00' } }),
            headersTimeout: 120_000,
            bodyTimeout: 120_000,
          });
          await response.body.text();
          status = String(response.statusCode);
        } catch {
          // Counted as 'no answer'.
        }
        answers[sentIn].push({ ms: performance.now() - sentAt, status });
        if (status !== '202') await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }),
  );
  try {
    // The loops' first requests go out before the batch does.
    await new Promise((resolve) => setTimeout(resolve, 500));
    const alongside = await storeAndCancel(deps, csv, `store-beside-${items}`, (next) => (phase = next));
    singlesRunning = false;
    await singles;
    return {
      items,
      csvBytes,
      alone,
      alongside: {
        ...alongside,
        singles: { create: singlesDuring(answers.create), cancel: singlesDuring(answers.cancel) },
      },
    };
  } finally {
    singlesRunning = false;
    await singles;
  }
}
