// The bench's "flat with data" part (`walletflow bench --preload`, docs/benchmarks.md): on the same
// stack, POST /ops/fundings latency (p50) and GET /ops/fundings?status=… latency (p99, a page at a
// time, following nextCursor) are measured on a next-to-empty database (what the bench left, plus a
// hundredth of the history so every list has full pages), then months of history are preloaded
// (harness/bench-preload.ts), and the same is measured again. The report holds both, their ratios,
// the preload's counts and the load average around each part (the machine may be shared).
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import { z } from 'zod';
import type { Database } from '../lib/database.ts';
import { finalFundingStatuses } from '../domain/funding.ts';
import { benchAmount, closedLoops, percentiles, round1, watchFinalStates, type CodeSupply } from './bench-load.ts';
import { preloadHistory, preloadSummarySchema, type PreloadOptions } from './bench-preload.ts';
import type { OpsClient } from './soak-driver.ts';

/** The lists measured: a status with most of the rows, a middling one and a rare one. */
export const flatListStatuses = ['APPROVED', 'FAILED', 'NEEDS_REVIEW'] as const;
/** Items per page, and pages followed by cursor before starting again from the first. */
export const flatListPage = { limit: 20, pages: 5 } as const;

const latencySchema = z.object({ p50: z.number(), p95: z.number(), p99: z.number() });
const sampleSchema = z.object({
  requests: z.number().int(),
  failed: z.number().int(),
  latencyMs: latencySchema,
});
const measurementSchema = z.object({
  /** POST /ops/fundings until its 202, one in flight, each funding followed to its final state before the next. */
  post: sampleSchema.extend({
    /**
     * Request to final state (the funding's own final event), p50: the workflow's database steps on the same tables.
     */
    finalMs: z.number(),
  }),
  /** GET /ops/fundings?status=<status>&limit=…, following nextCursor, one in flight. */
  list: z.record(z.string(), sampleSchema.extend({ itemsPerPage: z.number() })),
  loadAverage: z.number(),
});
export type FlatMeasurement = z.infer<typeof measurementSchema>;

export const flatReportSchema = z.object({
  options: z.object({
    fundings: z.number().int(),
    payments: z.number().int(),
    seconds: z.number(),
    limit: z.number().int(),
    pages: z.number().int(),
  }),
  /**
   * The "empty" database's own small history (a hundredth of the preload), so that its list pages
   * are full too and the two sides compare reads of the same size, not empty pages with full ones.
   */
  seed: preloadSummarySchema,
  empty: measurementSchema,
  preload: preloadSummarySchema,
  preloaded: measurementSchema,
  /** preloaded over empty: POST p50, and each list's p99 (the target: at most 1.2). */
  ratio: z.object({ postP50: z.number(), listP99: z.record(z.string(), z.number()) }),
});
export type FlatReport = z.infer<typeof flatReportSchema>;

export interface FlatDependencies {
  ops: OpsClient;
  database: Database;
  databaseUrl: string;
  codes: CodeSupply;
  log: (line: string) => void;
}

const ratioOf = (after: number, before: number) => (before > 0 ? Math.round((after / before) * 100) / 100 : 0);

/** POST /ops/fundings, one in flight, for `seconds`: the answer's latency, then the funding followed to its end. */
async function measurePosts(deps: FlatDependencies, seconds: number): Promise<FlatMeasurement['post']> {
  const watcher = watchFinalStates(deps.database, 10);
  const latencies: number[] = [];
  const posted: Array<{ id: string; sentAt: number }> = [];
  let failed = 0;
  try {
    await closedLoops(1, seconds, async () => {
      const code = deps.codes.take();
      if (code === undefined) return 'empty';
      const sentAt = Date.now();
      const started = performance.now();
      const answer = await deps.ops
        .send<{ fundingId?: string }>('POST', '/ops/fundings', {
          body: { recipient: { type: 'CODE', code }, amount: benchAmount },
          idempotencyKey: `bench-flat-${code}-${sentAt}`,
          deadline: sentAt + 60_000,
        })
        .catch(() => null);
      const elapsed = performance.now() - started;
      if (!answer || answer.status !== 202 || !answer.body?.fundingId) {
        failed += 1;
        return 'done';
      }
      latencies.push(elapsed);
      posted.push({ id: answer.body.fundingId, sentAt });
      if (!(await watcher.final(answer.body.fundingId, 60_000))) failed += 1;
      return 'done';
    });
  } finally {
    watcher.stop();
  }
  const finals = await deps.database.fundingEvent.findMany({
    where: { fundingId: { in: posted.map((item) => item.id) }, status: { in: [...finalFundingStatuses] } },
    select: { fundingId: true, at: true },
  });
  const finalAt = new Map(finals.map((event) => [event.fundingId, event.at.getTime()]));
  const toFinal = posted.flatMap((item) => (finalAt.has(item.id) ? [finalAt.get(item.id)! - item.sentAt] : []));
  return {
    requests: latencies.length + failed,
    failed,
    latencyMs: percentiles(latencies),
    finalMs: percentiles(toFinal).p50,
  };
}

/** GET pages of one status, one in flight, for `seconds`: from the first page, `pages` pages by cursor, again. */
async function measureList(
  deps: FlatDependencies,
  status: string,
  seconds: number,
): Promise<FlatMeasurement['list'][string]> {
  const latencies: number[] = [];
  let failed = 0;
  let items = 0;
  let cursor: string | null = null;
  let page = 0;
  await closedLoops(1, seconds, async () => {
    const query = new URLSearchParams({ status, limit: String(flatListPage.limit), ...(cursor ? { cursor } : {}) });
    const started = performance.now();
    const answer = await deps.ops
      .send<{ items?: unknown[]; nextCursor?: string | null }>('GET', `/ops/fundings?${query}`)
      .catch(() => null);
    const elapsed = performance.now() - started;
    if (!answer || answer.status !== 200 || !Array.isArray(answer.body?.items)) {
      failed += 1;
      cursor = null;
      return 'done';
    }
    latencies.push(elapsed);
    items += answer.body.items.length;
    page += 1;
    cursor = page < flatListPage.pages ? (answer.body.nextCursor ?? null) : null;
    if (cursor === null) page = 0;
    return 'done';
  });
  return {
    requests: latencies.length + failed,
    failed,
    latencyMs: percentiles(latencies),
    itemsPerPage: latencies.length ? round1(items / latencies.length) : 0,
  };
}

async function measure(deps: FlatDependencies, seconds: number, phase: string): Promise<FlatMeasurement> {
  const loadAverage = round1(os.loadavg()[0]!);
  const post = await measurePosts(deps, seconds);
  deps.log(
    `flat (${phase}): POST /ops/fundings p50 ${post.latencyMs.p50} ms, p99 ${post.latencyMs.p99} ms (${post.requests}), to final p50 ${post.finalMs} ms`,
  );
  const list: FlatMeasurement['list'] = {};
  for (const status of flatListStatuses) {
    list[status] = await measureList(deps, status, seconds);
    deps.log(
      `flat (${phase}): GET ?status=${status} p50 ${list[status].latencyMs.p50} ms, p99 ${list[status].latencyMs.p99} ms (${list[status].requests}, ${list[status].itemsPerPage} items a page)`,
    );
  }
  return { post, list, loadAverage };
}

/** Codes the POST loops need: one in flight for `seconds`, twice, with room to spare. */
export const flatCodesWanted = (seconds: number) => Math.ceil(seconds * 2 * 20);

/** Measures on the database as it is, preloads the history, measures again. */
export async function runFlatWithData(
  deps: FlatDependencies,
  options: { seconds: number; preload: PreloadOptions },
): Promise<FlatReport> {
  const seed = await preloadHistory(deps.databaseUrl, {
    fundings: Math.ceil(options.preload.fundings / 100),
    payments: Math.ceil(options.preload.payments / 100),
  });
  deps.log(
    `preload: a small history first (${seed.fundings} fundings, ${seed.payments} payments), so that every list has full pages`,
  );
  const empty = await measure(deps, options.seconds, 'empty');
  deps.log(`preload: ${options.preload.fundings} fundings and ${options.preload.payments} payments of history...`);
  const preload = await preloadHistory(deps.databaseUrl, options.preload, deps.log);
  deps.log(
    `preload: done in ${preload.seconds} s (${preload.fundingEvents} funding events, ${preload.ledgerEntries} ledger entries)`,
  );
  const preloaded = await measure(deps, options.seconds, 'preloaded');
  return flatReportSchema.parse({
    options: { fundings: preload.fundings, payments: preload.payments, seconds: options.seconds, ...flatListPage },
    seed,
    empty,
    preload,
    preloaded,
    ratio: {
      postP50: ratioOf(preloaded.post.latencyMs.p50, empty.post.latencyMs.p50),
      listP99: Object.fromEntries(
        flatListStatuses.map((status) => [
          status,
          ratioOf(preloaded.list[status]!.latencyMs.p99, empty.list[status]!.latencyMs.p99),
        ]),
      ),
    },
  });
}

/** The printed table: empty against preloaded, and the ratio against the target (at most 1.2). */
export function formatFlatTable(flat: FlatReport): string {
  const mark = (ratio: number) => (ratio <= 1.2 ? 'within 20%' : 'over 20%');
  const lines = [
    `Flat with data: ${flat.preload.fundings} fundings and ${flat.preload.payments} payments preloaded in ${flat.preload.seconds} s over a small history of ${flat.seed.fundings} and ${flat.seed.payments} ` +
      `(${flat.preload.fundingEvents} funding events, ${flat.preload.ledgerEntries} ledger entries); load average ${flat.empty.loadAverage} (empty) and ${flat.preloaded.loadAverage} (preloaded):`,
    '',
    '| measure | small database | preloaded | ratio | target ≤ 1.2 |',
    '|---|---:|---:|---:|---|',
    `| POST /ops/fundings p50 ms, 1 in flight | ${flat.empty.post.latencyMs.p50} | ${flat.preloaded.post.latencyMs.p50} | ${flat.ratio.postP50} | ${mark(flat.ratio.postP50)} |`,
  ];
  for (const status of Object.keys(flat.ratio.listP99)) {
    const before = flat.empty.list[status]!;
    const after = flat.preloaded.list[status]!;
    lines.push(
      `| GET /ops/fundings?status=${status} p99 ms (limit ${flat.options.limit}, ${flat.options.pages} pages by cursor; items a page ${before.itemsPerPage} / ${after.itemsPerPage}) | ` +
        `${before.latencyMs.p99} | ${after.latencyMs.p99} | ${flat.ratio.listP99[status]} | ${mark(flat.ratio.listP99[status]!)} |`,
    );
  }
  lines.push(
    `| (funding to final state p50 ms, for reference) | ${flat.empty.post.finalMs} | ${flat.preloaded.post.finalMs} | ${ratioOf(flat.preloaded.post.finalMs, flat.empty.post.finalMs)} | |`,
  );
  return lines.join('\n');
}
