// The bench's load: closed loops at a fixed concurrency for a fixed time, each taking a prepared
// cash-in code, plus what both sides share (the code supply, percentiles). walletflow's side posts
// fundings to the ops API and waits for a final state; the baseline makes the same create and
// execute calls straight to the wallet service with the wallet client.
import { performance } from 'node:perf_hooks';
import { finalFundingStatuses } from '../domain/funding.ts';
import type { Database } from '../lib/database.ts';
import type { WalletClient } from '../wallet/index.ts';
import type { SandboxAdminClient } from '../sandbox/admin-client.ts';
import type { OpsClient } from './soak-driver.ts';

export interface Percentiles {
  p50: number;
  p95: number;
  p99: number;
}

export interface LevelRun {
  /** Items started in the timed window that reached their end (APPROVED; an approved execute). */
  completed: number;
  /**
   * From the first request to the last end, s: the timed window (shorter when the prepared codes
   * ran out) plus the drain of what was in flight when it closed.
   */
  seconds: number;
  /** completed / seconds: ramp-up and drain are inside, so short windows understate it a little. */
  perSecond: number;
  latencyMs: Percentiles;
  /** Not APPROVED, not final in time, or refused; for the baseline: calls that failed. */
  failed: number;
  /** The window ended because the prepared codes ran out. */
  ranOutOfCodes: boolean;
}

/** Nearest-rank percentiles of a sample, ms with one decimal; zeros for an empty sample. */
export function percentiles(values: number[]): Percentiles {
  if (values.length === 0) return { p50: 0, p95: 0, p99: 0 };
  const sorted = [...values].sort((a, b) => a - b);
  const at = (p: number) =>
    round1(sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!);
  return { p50: at(50), p95: at(95), p99: at(99) };
}

export const round1 = (value: number) => Math.round(value * 10) / 10;

/** A level's figures from what it counted: `seconds` unrounded, from the first request to the last end. */
export function levelRun(run: {
  completed: number;
  seconds: number;
  latencies: number[];
  failed: number;
  ranOutOfCodes: boolean;
}): LevelRun {
  return {
    completed: run.completed,
    seconds: round1(run.seconds),
    perSecond: round1(run.completed / run.seconds),
    latencyMs: percentiles(run.latencies),
    failed: run.failed,
    ranOutOfCodes: run.ranOutOfCodes,
  };
}

/** Sandbox users to fund, and cash-in codes for them made ahead of the timed part. */
export interface CodeSupply {
  /** Makes `count` more codes (admin API calls, several at once). */
  fill(count: number): Promise<void>;
  take(): string | undefined;
  readonly left: number;
}

export async function createCodeSupply(
  admin: SandboxAdminClient,
  options: { users: number; mobilePrefix: string },
): Promise<CodeSupply> {
  const users: string[] = [];
  for (let index = 0; index < options.users; index += 1) {
    // A wallet limit high enough for every funding of the run (1.00 each).
    const user = await admin.createUser({
      mobile: `${options.mobilePrefix}${String(index).padStart(5, '0')}`,
      kycLevel: 'KYC1',
      balance: '0.00',
      walletLimit: '900000000.00',
    });
    users.push(user.userId);
  }
  const codes: string[] = [];
  let made = 0;
  return {
    async fill(count) {
      let next = 0;
      await Promise.all(
        Array.from({ length: Math.min(16, count) }, async () => {
          while (next < count) {
            next += 1;
            const { code } = await admin.cashInCode(users[made++ % users.length]!);
            codes.push(code);
          }
        }),
      );
    },
    take: () => codes.pop(),
    get left() {
      return codes.length;
    },
  };
}

export const benchAmount = { currency: 'PHP', value: '1.00' } as const;

/** Runs `concurrency` loops of `step` until the window closes or `step` says there is nothing left. */
export async function closedLoops(
  concurrency: number,
  seconds: number,
  step: () => Promise<'done' | 'empty'>,
): Promise<{ start: number; end: number; ranOut: boolean }> {
  const start = Date.now();
  const windowEnd = start + seconds * 1000;
  let ranOutAt: number | undefined;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (Date.now() < windowEnd && ranOutAt === undefined) {
        if ((await step()) === 'empty') ranOutAt ??= Date.now();
      }
    }),
  );
  return {
    start,
    end: Math.min(windowEnd, ranOutAt ?? windowEnd),
    ranOut: ranOutAt !== undefined && ranOutAt < windowEnd,
  };
}

/**
 * Tells closed loops when their item is done: one query for every waiting id each `intervalMs`
 * (rather than one request per item per interval), reading the database directly so the system
 * under measurement serves no polls. `done` answers the ids among those asked that are done, with
 * when (ms); the poll interval only paces the loops.
 */
export function watchUntilDone(
  done: (ids: string[]) => Promise<Array<{ id: string; at: number }>>,
  intervalMs: number,
) {
  const waiting = new Map<string, (at: number) => void>();
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  const poll = async () => {
    if (waiting.size > 0) {
      try {
        for (const { id, at } of await done([...waiting.keys()])) {
          waiting.get(id)?.(at);
          waiting.delete(id);
        }
      } catch {
        // The next round asks again.
      }
    }
    if (!stopped) timer = setTimeout(() => void poll(), intervalMs);
  };
  void poll();
  return {
    /** Resolves with when the item was done, or null after timeoutMs. */
    done(id: string, timeoutMs: number): Promise<number | null> {
      return new Promise((resolve) => {
        const giveUp = setTimeout(() => {
          waiting.delete(id);
          resolve(null);
        }, timeoutMs);
        waiting.set(id, (at) => {
          clearTimeout(giveUp);
          resolve(at);
        });
      });
    },
    stop() {
      stopped = true;
      clearTimeout(timer);
    },
  };
}

/**
 * Fundings in a final state. The latency itself comes from the funding's own final event, so the
 * poll only paces the loop, it does not enter the figures.
 */
export function watchFinalStates(database: Database, intervalMs: number) {
  const watcher = watchUntilDone(async (ids) => {
    const rows = await database.funding.findMany({
      where: { id: { in: ids }, status: { in: [...finalFundingStatuses] } },
      select: { id: true, updatedAt: true },
    });
    return rows.map((row) => ({ id: row.id, at: row.updatedAt.getTime() }));
  }, intervalMs);
  return {
    /** Resolves true when final, false after timeoutMs. */
    final: async (id: string, timeoutMs: number) => (await watcher.done(id, timeoutMs)) !== null,
    stop: watcher.stop,
  };
}

/** Where a funding's time went, medians over the level's approved fundings, ms. */
export interface FundingStages {
  /** Request sent → funding stored (PENDING event). */
  accept: number;
  /** PENDING → CREATING: workflow start, first workflow task, load and mark activities. */
  toCreating: number;
  /** CREATING → EXECUTING: the create call and storing its transfer id. */
  toExecuting: number;
  /** EXECUTING → final: the execute call and the final write. */
  toFinal: number;
  /** The wallet service's own time per call (wallet_call audit), medians. */
  walletCreate: number;
  walletExecute: number;
}

export interface WalletflowLevelRun extends LevelRun {
  stages: FundingStages;
  /** Requests the ops client repeated (5xx, 429, no answer). */
  retries: number;
  /** Timeline events (the funding's state transitions) per approved funding. */
  transitionsPerItem: number;
  /** Workflow ids of some approved fundings, for a look at their histories. */
  sampleWorkflowIds: string[];
  /** The approved fundings and the level's window (ms), for their history events (harness/bench-history.ts). */
  approvedIds: string[];
  window: { from: number; to: number };
}

export async function runWalletflowLevel(
  deps: { ops: OpsClient; database: Database; codes: CodeSupply; retries: () => number },
  options: { concurrency: number; seconds: number; finalTimeoutMs?: number },
): Promise<WalletflowLevelRun> {
  const watcher = watchFinalStates(deps.database, 10);
  const posted: Array<{ id: string; sentAt: number }> = [];
  let failed = 0;
  const retriesBefore = deps.retries();
  let window;
  try {
    window = await closedLoops(options.concurrency, options.seconds, async () => {
      const code = deps.codes.take();
      if (code === undefined) return 'empty';
      const sentAt = Date.now();
      const answer = await deps.ops
        .send<{ fundingId?: string }>('POST', '/ops/fundings', {
          body: { recipient: { type: 'CODE', code }, amount: benchAmount },
          idempotencyKey: `bench-${code}-${sentAt}`,
          deadline: sentAt + 60_000,
        })
        .catch(() => null);
      if (!answer || answer.status !== 202 || !answer.body?.fundingId) {
        failed += 1;
        return 'done';
      }
      posted.push({ id: answer.body.fundingId, sentAt });
      if (!(await watcher.final(answer.body.fundingId, options.finalTimeoutMs ?? 60_000))) failed += 1;
      return 'done';
    });
  } finally {
    watcher.stop();
  }

  // The times come from the fundings' own timeline (PostgreSQL's clock, the same host's).
  const events = [];
  for (let index = 0; index < posted.length; index += 5000) {
    const ids = posted.slice(index, index + 5000).map((item) => item.id);
    events.push(
      ...(await deps.database.fundingEvent.findMany({
        where: { fundingId: { in: ids } },
        select: { fundingId: true, status: true, at: true },
      })),
    );
  }
  const timeline = new Map<string, Map<string, number>>();
  for (const event of events) {
    const steps = timeline.get(event.fundingId) ?? new Map<string, number>();
    steps.set(event.status, event.at.getTime());
    timeline.set(event.fundingId, steps);
  }
  const latencies: number[] = [];
  const stages = {
    accept: [] as number[],
    toCreating: [] as number[],
    toExecuting: [] as number[],
    toFinal: [] as number[],
  };
  const approvedIds: string[] = [];
  let completed = 0;
  let lastEnd = window.end;
  for (const item of posted) {
    const steps = timeline.get(item.id);
    const approvedAt = steps?.get('APPROVED');
    const finalAt =
      approvedAt ?? finalFundingStatuses.map((status) => steps?.get(status)).find((at) => at !== undefined);
    if (finalAt === undefined) continue; // counted as failed by its loop
    if (approvedAt === undefined) failed += 1;
    else {
      completed += 1;
      approvedIds.push(item.id);
    }
    lastEnd = Math.max(lastEnd, finalAt);
    latencies.push(Math.max(0, finalAt - item.sentAt));
    const pending = steps!.get('PENDING');
    const creating = steps!.get('CREATING');
    const executing = steps!.get('EXECUTING');
    if (approvedAt !== undefined && pending !== undefined && creating !== undefined && executing !== undefined) {
      stages.accept.push(Math.max(0, pending - item.sentAt));
      stages.toCreating.push(creating - pending);
      stages.toExecuting.push(executing - creating);
      stages.toFinal.push(approvedAt - executing);
    }
  }
  const calls = await deps.database.walletCall.findMany({
    where: {
      startedAt: { gte: new Date(window.start), lte: new Date(window.end) },
      operation: { in: ['transfers.create', 'transfers.execute'] },
    },
    select: { operation: true, durationMs: true },
  });
  const seconds = (lastEnd - window.start) / 1000;
  const approved = new Set(approvedIds);
  const transitions = events.filter((event) => approved.has(event.fundingId)).length;
  const sampled = await deps.database.funding.findMany({
    where: { id: { in: approvedIds.slice(0, 50) } },
    select: { workflowId: true },
  });
  return {
    ...levelRun({ completed, seconds, latencies, failed, ranOutOfCodes: window.ranOut }),
    stages: {
      accept: percentiles(stages.accept).p50,
      toCreating: percentiles(stages.toCreating).p50,
      toExecuting: percentiles(stages.toExecuting).p50,
      toFinal: percentiles(stages.toFinal).p50,
      walletCreate: percentiles(
        calls.filter((call) => call.operation === 'transfers.create').map((call) => call.durationMs),
      ).p50,
      walletExecute: percentiles(
        calls.filter((call) => call.operation === 'transfers.execute').map((call) => call.durationMs),
      ).p50,
    },
    retries: deps.retries() - retriesBefore,
    transitionsPerItem: approvedIds.length === 0 ? 0 : round1(transitions / approvedIds.length),
    sampleWorkflowIds: sampled.map((row) => row.workflowId),
    approvedIds,
    window: { from: window.start, to: lastEnd },
  };
}

/** The baseline: create and execute with the wallet client, no API, Temporal or database. */
export async function runBaselineLevel(
  deps: { wallet: Pick<WalletClient, 'createTransfer' | 'executeTransfer'>; codes: CodeSupply },
  options: { concurrency: number; seconds: number },
): Promise<LevelRun> {
  const latencies: number[] = [];
  const completedAt: number[] = [];
  let failed = 0;
  const window = await closedLoops(options.concurrency, options.seconds, async () => {
    const code = deps.codes.take();
    if (code === undefined) return 'empty';
    const started = performance.now();
    try {
      const created = await deps.wallet.createTransfer({
        recipient: { type: 'CODE', value: code },
        amount: benchAmount,
      });
      const executed = await deps.wallet.executeTransfer(created.data.transferId);
      latencies.push(performance.now() - started);
      if (executed.data.status === 'APPROVED') completedAt.push(Date.now());
      else failed += 1;
    } catch {
      failed += 1;
    }
    return 'done';
  });
  const completed = completedAt.length;
  const seconds = (completedAt.reduce((last, at) => Math.max(last, at), window.end) - window.start) / 1000;
  return levelRun({ completed, seconds, latencies, failed, ranOutOfCodes: window.ranOut });
}
