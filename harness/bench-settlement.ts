// `walletflow bench --settlement N` (docs/benchmarks.md, a day's settlement): a past day of N
// approved fundings planted against the sandbox (harness/settlement-day.ts), then, in the same run:
//   baseline     the wallet client alone retrieves the N transfers, SETTLEMENT_MAX_IN_FLIGHT at once
//                (no API, Temporal or database): the floor of the settlement's wallet calls
//   settlement   GET /ops/settlements/{day} starts the run; followed by GET (202s with progress)
//                until the stored report is served; the API's, the worker's and Temporal's CPU and
//                peak resident memory sampled every 250 ms; single fundings sent beside it
//   report       the stored report's CSV downloaded whole (its time, size, the API's peak memory)
// and the run's workflow histories (every run of its continue-as-new chain).
import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import { request } from 'undici';
import { finalFundingStatuses } from '../domain/funding.ts';
import type { Database } from '../lib/database.ts';
import type { SandboxAdminClient } from '../sandbox/admin-client.ts';
import type { WalletClient } from '../wallet/index.ts';
import { settlementWorkflowId } from '../workflows/settle-day.contract.ts';
import { chainHistory, type BatchHistory } from './bench-batch.ts';
import { benchAmount, round1, type CodeSupply } from './bench-load.ts';
import { rssMiBOf, sampleUsage, type ProcessUsage } from './process-usage.ts';
import { plantApprovedDay } from './settlement-day.ts';

export interface SettlementBenchDependencies {
  apiBase: string;
  opsKey: string;
  databaseUrl: string;
  database: Database;
  admin: Pick<SandboxAdminClient, 'createUser' | 'plantTransfers'>;
  /** A wallet client of the bench's own, straight to the sandbox: the baseline's. */
  wallet: Pick<WalletClient, 'retrieveTransfer'>;
  temporal: Client;
  /** Codes for the single fundings sent beside the run. */
  codes: CodeSupply;
  /** The processes measured: api, worker(s), temporal. */
  pids: () => Record<string, number | undefined>;
  apiPid: () => number | undefined;
  workerPids: () => number[];
  log: (line: string) => void;
}

/** The single fundings sent beside the run: POST /ops/fundings answers, then where they ended. */
export interface SinglesAnswered {
  sent: number;
  /** By HTTP status ("no answer" for none). */
  statuses: Record<string, number>;
  /** The POST's answer time, ms. */
  p99Ms: number;
  maxMs: number;
  /** Of those accepted: APPROVED, and not final 60 s after the run (both as the funding's row says). */
  approved: number;
  notFinal: number;
}

export interface SettlementBenchRun {
  items: number;
  date: string;
  /** Planting the day: the sandbox's transfers and the rows, s. */
  plantSeconds: number;
  baseline: { retrieves: number; failed: number; seconds: number; perSecond: number };
  settlement: {
    /** First GET to the run's finish (its settledAt), s. */
    seconds: number;
    itemsPerSecond: number;
    /** GETs answered 202 while the run went (each waited up to 5 s). */
    progressAnswers: number;
    /** The first GET's answer time, ms (the run starts, the GET waits up to 5 s). */
    firstAnswerMs: number;
    counts: { matched: number; missing: number; mismatched: number; count: number };
    /** Successful retrieves the wallet call audit shows for the run. */
    retrieves: number;
    processes: Record<string, ProcessUsage>;
    apiPeakRssMiB: number;
    workerPeakRssMiB: number;
    /** API + workers + Temporal CPU per item, ms. */
    cpuMsPerItem: number;
    history: BatchHistory;
  };
  csv: { seconds: number; bytes: number; lines: number; apiPeakRssMiB: number };
  singles: SinglesAnswered;
  /** The settlement's items per second over the baseline's retrieves per second. */
  ratio: number;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const rank = (sorted: number[], p: number) =>
  sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;

/** The wallet client alone: every transfer retrieved, `concurrency` at once. */
async function retrieveAll(
  wallet: SettlementBenchDependencies['wallet'],
  transferIds: readonly string[],
  concurrency: number,
) {
  let next = 0;
  let failed = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < transferIds.length) {
        const transferId = transferIds[next++]!;
        try {
          await wallet.retrieveTransfer(transferId);
        } catch {
          failed += 1;
        }
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  return {
    retrieves: transferIds.length,
    failed,
    seconds: round1(seconds),
    perSecond: round1(transferIds.length / seconds),
  };
}

async function opsCall(deps: SettlementBenchDependencies, method: 'GET' | 'POST', path: string, body?: unknown) {
  const response = await request(`${deps.apiBase}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${deps.opsKey}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json', 'idempotency-key': `bench-${randomUUID()}` }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    headersTimeout: 120_000,
    bodyTimeout: 600_000,
  });
  return response;
}

/**
 * Sends a single CODE funding every `everyMs` from `loops` loops until stop(); their answers and, at stop, where they
 * ended.
 */
function sendSinglesBeside(deps: SettlementBenchDependencies, loops = 4, everyMs = 1000) {
  const answers: Array<{ ms: number; status: string; fundingId?: string }> = [];
  let stopped = false;
  const running = Promise.all(
    Array.from({ length: loops }, async () => {
      while (!stopped) {
        const at = performance.now();
        if (deps.codes.left === 0) await deps.codes.fill(32);
        const code = deps.codes.take()!;
        let status = 'no answer';
        let fundingId: string | undefined;
        try {
          const response = await opsCall(deps, 'POST', '/ops/fundings', {
            recipient: { type: 'CODE', code },
            amount: benchAmount,
          });
          const text = await response.body.text();
          status = String(response.statusCode);
          if (response.statusCode === 202) fundingId = (JSON.parse(text) as { fundingId: string }).fundingId;
        } catch {
          // Counted as 'no answer'.
        }
        answers.push({ ms: performance.now() - at, status, ...(fundingId ? { fundingId } : {}) });
        await sleep(Math.max(0, at + everyMs - performance.now()));
      }
    }),
  );
  return {
    async stop(): Promise<SinglesAnswered> {
      stopped = true;
      await running;
      const ids = answers.flatMap((answer) => (answer.fundingId ? [answer.fundingId] : []));
      const isFinal = (row: { status: string }) => (finalFundingStatuses as readonly string[]).includes(row.status);
      const read = () => deps.database.funding.findMany({ where: { id: { in: ids } }, select: { status: true } });
      let rows = await read();
      for (const deadline = Date.now() + 60_000; !rows.every(isFinal) && Date.now() < deadline; rows = await read())
        await sleep(500);
      const statuses: Record<string, number> = {};
      for (const answer of answers) statuses[answer.status] = (statuses[answer.status] ?? 0) + 1;
      const times = answers.map((answer) => answer.ms).sort((a, b) => a - b);
      return {
        sent: answers.length,
        statuses,
        p99Ms: Math.round(rank(times, 99)),
        maxMs: Math.round(times.at(-1) ?? 0),
        approved: rows.filter((row) => row.status === 'APPROVED').length,
        notFinal: rows.filter((row) => !isFinal(row)).length,
      };
    },
  };
}

/**
 * One day of `items` approved fundings: planted, retrieved by the baseline, settled by walletflow, its CSV downloaded.
 */
export async function runSettlementBench(
  deps: SettlementBenchDependencies,
  input: { items: number; date: string; timeZone: string; maxInFlight: number },
): Promise<SettlementBenchRun> {
  const { log } = deps;
  log(`planting ${input.items} approved fundings on ${input.date} (the sandbox's transfers, then the rows)...`);
  const planted = await plantApprovedDay(
    { databaseUrl: deps.databaseUrl, admin: deps.admin },
    { date: input.date, timeZone: input.timeZone, count: input.items },
  );
  log(`planted in ${planted.seconds} s`);

  const baseline = await retrieveAll(deps.wallet, planted.transferIds, input.maxInFlight);
  log(
    `baseline: the wallet client alone retrieved ${baseline.retrieves} transfers ${input.maxInFlight} at once in ${baseline.seconds} s (${baseline.perSecond}/s)${baseline.failed ? `, ${baseline.failed} failed` : ''}`,
  );
  planted.transferIds.length = 0;

  const retrievesBefore = await deps.database.walletCall.count({
    where: { operation: 'transfers.retrieve', outcome: 'ok' },
  });
  const usage = sampleUsage(deps.pids, 250);
  const singles = sendSinglesBeside(deps);
  const started = performance.now();
  const startedAt = Date.now();
  let progressAnswers = 0;
  let firstAnswerMs = 0;
  let report:
    | {
        runId: string;
        settledAt: string;
        fundings: { matched: number; missing: number; mismatched: number; total: { count: number } };
      }
    | undefined;
  let lastLog = 0;
  let singlesResult: SinglesAnswered | undefined;
  try {
    for (;;) {
      const asked = performance.now();
      const response = await opsCall(deps, 'GET', `/ops/settlements/${input.date}?limit=1`);
      const body = (await response.body.json()) as Record<string, unknown>;
      if (firstAnswerMs === 0) firstAnswerMs = Math.round(performance.now() - asked);
      if (response.statusCode === 200) {
        report = body as unknown as typeof report;
        break;
      }
      if (response.statusCode !== 202)
        throw new Error(
          `GET /ops/settlements/${input.date}: ${response.statusCode} ${JSON.stringify(body).slice(0, 300)}`,
        );
      progressAnswers += 1;
      if (performance.now() - lastLog > 10_000) {
        lastLog = performance.now();
        const rss = (pid: number | undefined) => (pid === undefined ? '?' : Math.round(rssMiBOf(pid) ?? 0));
        log(
          `settlement: ${String(body.checked)}/${String(body.total)} checked, API RSS ${rss(deps.apiPid())} MiB, worker RSS ${deps.workerPids().map(rss).join('+')} MiB`,
        );
      }
      await sleep(1000);
    }
  } finally {
    singlesResult = await singles.stop();
  }
  const processes = usage.stop();
  if (!report) throw new Error('no report');
  const seconds = (Date.parse(report.settledAt) - startedAt) / 1000;
  log(
    `settled ${report.fundings.total.count} in ${round1(seconds)} s (${round1((performance.now() - started) / 1000)} s to the served report)`,
  );

  const workerNames = Object.keys(processes).filter((name) => name.startsWith('worker'));
  const cpu = (names: string[]) => names.reduce((sum, name) => sum + (processes[name]?.cpuSeconds ?? 0), 0);
  const retrieves =
    (await deps.database.walletCall.count({ where: { operation: 'transfers.retrieve', outcome: 'ok' } })) -
    retrievesBefore;

  // The CSV, whole, as a client downloads it; the API's resident memory every 100 ms meanwhile.
  let csvPeak = 0;
  const sampler = setInterval(() => (csvPeak = Math.max(csvPeak, rssMiBOf(deps.apiPid() ?? -1) ?? 0)), 100);
  const csvStarted = performance.now();
  let bytes = 0;
  let lines = 0;
  try {
    const response = await opsCall(deps, 'GET', `/ops/settlements/${input.date}?format=csv`);
    if (response.statusCode !== 200) throw new Error(`the CSV: ${response.statusCode}`);
    for await (const chunk of response.body) {
      const text = (chunk as Buffer).toString('utf8');
      bytes += Buffer.byteLength(text);
      for (let at = text.indexOf('\n'); at !== -1; at = text.indexOf('\n', at + 1)) lines += 1;
    }
  } finally {
    clearInterval(sampler);
  }
  const csvSeconds = round1((performance.now() - csvStarted) / 1000);
  log(
    `the CSV: ${lines} lines, ${round1(bytes / 2 ** 20)} MiB in ${csvSeconds} s, API RSS peak ${Math.round(csvPeak)} MiB`,
  );

  const itemsPerSecond = round1(input.items / seconds);
  return {
    items: input.items,
    date: input.date,
    plantSeconds: planted.seconds,
    baseline,
    settlement: {
      seconds: round1(seconds),
      itemsPerSecond,
      progressAnswers,
      firstAnswerMs,
      counts: {
        matched: report.fundings.matched,
        missing: report.fundings.missing,
        mismatched: report.fundings.mismatched,
        count: report.fundings.total.count,
      },
      retrieves,
      processes,
      apiPeakRssMiB: Math.round(processes.api?.peakRssMiB ?? 0),
      workerPeakRssMiB: Math.round(Math.max(0, ...workerNames.map((name) => processes[name]?.peakRssMiB ?? 0))),
      cpuMsPerItem: round1((cpu(['api', 'temporal', ...workerNames]) * 1000) / input.items),
      history: await chainHistory(deps.temporal, settlementWorkflowId(input.date, report.runId)),
    },
    csv: { seconds: csvSeconds, bytes, lines, apiPeakRssMiB: Math.round(csvPeak) },
    singles: singlesResult,
    ratio: baseline.perSecond > 0 ? Math.round((itemsPerSecond / baseline.perSecond) * 100) / 100 : 0,
  };
}
