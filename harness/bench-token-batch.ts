// What `walletflow bench --token-batch N` measures besides the batches themselves
// (docs/benchmarks.md, token refresh at volume): the single CODE fundings started every second
// beside a batch, from their request to their final state, and what the wallet and walletflow say
// about the TOKEN batch's links afterwards (each refreshed once, none refused, every link ACTIVE).
import { randomUUID } from 'node:crypto';
import { finalFundingStatuses } from '../domain/funding.ts';
import type { Database } from '../lib/database.ts';
import type { SandboxAdminClient } from '../sandbox/admin-client.ts';
import { benchAmount, round1, type CodeSupply } from './bench-load.ts';
import type { BatchBenchRun } from './bench-batch.ts';
import type { ExpiredLink } from './expired-links.ts';
import type { OpsClient } from './soak-driver.ts';

/** The single fundings started beside a batch. */
export interface SinglesBeside {
  started: number;
  approved: number;
  /** Not final when the bench stopped waiting (180 s after the batch). */
  notFinal: number;
  /** From the request to the final state (the funding's last write), ms. */
  latencyMs: { p50: number; p99: number; max: number };
}

export interface SinglesBesideDependencies {
  ops: OpsClient;
  database: Database;
  codes: CodeSupply;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Nearest-rank percentile of a sorted sample. */
const rank = (sorted: number[], p: number) =>
  sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;

/**
 * Starts a single CODE funding of 1.00 every `everyMs` (a request the API refuses for load is sent
 * again with its key, as a client would) until stop(), which then waits for each to be final.
 */
export function startSinglesBeside(
  deps: SinglesBesideDependencies,
  everyMs = 1000,
): { stop(): Promise<SinglesBeside> } {
  const started: Array<{ fundingId: string; at: number }> = [];
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      const at = Date.now();
      if (deps.codes.left === 0) await deps.codes.fill(16);
      const code = deps.codes.take()!;
      const answer = await deps.ops.send<{ fundingId: string }>('POST', '/ops/fundings', {
        body: { recipient: { type: 'CODE', code }, amount: benchAmount },
        idempotencyKey: `bench-single-${randomUUID()}`,
      });
      if (answer.status === 202 || answer.status === 200) started.push({ fundingId: answer.body.fundingId, at });
      await sleep(Math.max(0, at + everyMs - Date.now()));
    }
  })();
  return {
    async stop() {
      stopped = true;
      await loop;
      const ids = started.map((single) => single.fundingId);
      const deadline = Date.now() + 180_000;
      const isFinal = (row: { status: string }) => (finalFundingStatuses as readonly string[]).includes(row.status);
      const read = () =>
        deps.database.funding.findMany({
          where: { id: { in: ids } },
          select: { id: true, status: true, updatedAt: true },
        });
      let rows = await read();
      while (!rows.every(isFinal) && Date.now() < deadline) {
        await sleep(500);
        rows = await read();
      }
      const startedAt = new Map(started.map((single) => [single.fundingId, single.at]));
      const final = rows.filter(isFinal);
      const latencies = final.map((row) => row.updatedAt.getTime() - startedAt.get(row.id)!).sort((a, b) => a - b);
      return {
        started: started.length,
        approved: rows.filter((row) => row.status === 'APPROVED').length,
        notFinal: started.length - final.length,
        latencyMs: {
          p50: round1(rank(latencies, 50)),
          p99: round1(rank(latencies, 99)),
          max: round1(latencies.at(-1) ?? 0),
        },
      };
    },
  };
}

/** What the wallet and walletflow say about a TOKEN batch's links once it ran. */
export interface TokenBatchLinks {
  /** Links whose user the wallet refreshed exactly once (each had one expired access token). */
  refreshedOnce: number;
  /** Refreshes the wallet refused (REFRESH_TOKEN_INVALID: a rotated refresh token presented again): must be 0. */
  refreshesRefused: number;
  /** Links no longer ACTIVE (a lost pair leaves a link REAUTH_REQUIRED): must be 0. */
  notActive: number;
}

export async function checkTokenBatchLinks(
  deps: { admin: SandboxAdminClient; database: Database },
  links: readonly ExpiredLink[],
): Promise<TokenBatchLinks> {
  const perUser = new Map<string, number>();
  for (const refresh of (await deps.admin.ledger()).refreshes)
    perUser.set(refresh.userId, (perUser.get(refresh.userId) ?? 0) + 1);
  const linkIds = links.map((link) => link.linkId);
  return {
    refreshedOnce: links.filter((link) => perUser.get(link.userId) === 1).length,
    refreshesRefused: await deps.database.walletCall.count({
      where: { operation: 'op.tokens', errorCode: 'REFRESH_TOKEN_INVALID' },
    }),
    notActive: await deps.database.link.count({ where: { id: { in: linkIds }, status: { not: 'ACTIVE' } } }),
  };
}

/**
 * `walletflow bench --token-batch N`: a CODE batch (the baseline) and a TOKEN batch, each with single fundings beside
 * it.
 */
export interface TokenBatchBenchReport {
  name: string;
  date: string;
  machine: { cpus: number; cpuModel: string; memoryGiB: number; node: string };
  temporal: 'dev-server' | 'server';
  workers: number;
  items: number;
  code: { batch: BatchBenchRun; singles: SinglesBeside };
  token: { batch: BatchBenchRun; singles: SinglesBeside; links: TokenBatchLinks };
  /** TOKEN items per second over CODE items per second: the target is at least 0.5. */
  ratio: number;
  durationSeconds: number;
}

/** The targets of docs/benchmarks.md, and whether the run met them. */
export function tokenBatchTargets(
  report: TokenBatchBenchReport,
): Array<{ what: string; target: string; measured: string; met: boolean }> {
  const { token, code } = report;
  return [
    {
      what: 'TOKEN items/s over CODE items/s',
      target: '≥ 0.5',
      measured: String(report.ratio),
      met: report.ratio >= 0.5,
    },
    {
      what: 'single fundings beside the TOKEN batch, p99',
      target: '≤ 15 s',
      measured: `${round1(token.singles.latencyMs.p99 / 1000)} s`,
      met: token.singles.latencyMs.p99 <= 15_000 && token.singles.notFinal === 0,
    },
    {
      what: 'single fundings beside the CODE batch, p99',
      target: '≤ 15 s',
      measured: `${round1(code.singles.latencyMs.p99 / 1000)} s`,
      met: code.singles.latencyMs.p99 <= 15_000 && code.singles.notFinal === 0,
    },
    {
      what: 'links refreshed exactly once',
      target: `${report.items}`,
      measured: String(token.links.refreshedOnce),
      met: token.links.refreshedOnce === report.items,
    },
    {
      what: 'refreshes refused, links not ACTIVE',
      target: '0, 0',
      measured: `${token.links.refreshesRefused}, ${token.links.notActive}`,
      met: token.links.refreshesRefused === 0 && token.links.notActive === 0,
    },
    {
      what: 'transfers executed twice',
      target: '0',
      measured: String(code.batch.executedTwice + token.batch.executedTwice),
      met: code.batch.executedTwice + token.batch.executedTwice === 0,
    },
  ];
}

export function formatTokenBatchBench(report: TokenBatchBenchReport): string {
  const row = (name: string, side: { batch: BatchBenchRun; singles: SinglesBeside }) =>
    `${name.padEnd(28)} ${String(side.batch.itemsPerSecond).padStart(7)}   ${String(side.batch.seconds).padStart(7)}   ${String(side.batch.cpuMsPerItem).padStart(6)}   ` +
    `${side.singles.started} started, p50 ${round1(side.singles.latencyMs.p50 / 1000)} s, p99 ${round1(side.singles.latencyMs.p99 / 1000)} s, max ${round1(side.singles.latencyMs.max / 1000)} s${side.singles.notFinal ? `, ${side.singles.notFinal} not final` : ''}`;
  return [
    `                             items/s   seconds   CPU ms   single fundings beside it (one a second)`,
    row(`CODE batch of ${report.items}`, report.code),
    row(`TOKEN batch of ${report.items} (expired)`, report.token),
    '',
    ...tokenBatchTargets(report).map(
      (target) => `${target.met ? 'met ' : 'MISS'}  ${target.what}: ${target.measured} (target ${target.target})`,
    ),
    `counts: CODE ${JSON.stringify(report.code.batch.counts)}, TOKEN ${JSON.stringify(report.token.batch.counts)}`,
  ].join('\n');
}
