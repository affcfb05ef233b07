// `walletflow bench --console` (docs/benchmarks.md, the ops console with real volume): each console
// page's server time (request sent to the last byte of the answer, one request in flight, over
// loopback) under a console session signed in with an ops key as a person would (the sign-in
// form), measured on a small database and again after the bench's preload (a million fundings by
// default), with each page's p50, p95 and the ratio of the two.
//
// What the pages show is history written straight into PostgreSQL (harness/bench-preload.ts), and
// beside it what the preload does not write (consoleHistory below): funding batches (the one under
// test holds 100,000 items by default, finished: most APPROVED, some DECLINED, FAILED or REJECTED),
// a webhook endpoint with a delivery of every event (a few dead letters among them), and audit rows.
// The batches' items are funding rows without their timelines and ledger entries (no page measured
// reads those of a batch item); the endpoint's URL is a closed loopback port, and every delivery is
// already SUCCEEDED or FAILED, so the deliverer never calls it.
//
// "Small database": a hundredth of the preload (as the flat-with-data part does), the batches and
// the rest, so that every page has something to show and both sides read pages of the same size.
// The same pages (the same funding, payment, batch, user...) are then asked for again with the
// preload stored.
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { z } from 'zod';
import { percentiles, round1 } from './bench-load.ts';
import { preloadHistory, preloadSummarySchema, type PreloadOptions } from './bench-preload.ts';

/** The pages measured, in the order the report lists them. */
export const consolePageNames = [
  'home',
  'search by funding id',
  'search by idempotency key',
  'search by code digits',
  'funding',
  'payment',
  'review queue',
  'batches',
  'batch',
  'batch items: first page',
  'batch items: middle page',
  'batch items: by status',
  'account (a user)',
  'webhooks',
  'links (a user)',
  'audit',
] as const;
export type ConsolePageName = (typeof consolePageNames)[number];

/** The pages of the 100,000-item batch's items: their own target (p95 under 100 ms); every other page: under 200 ms. */
export const batchItemsPages: readonly ConsolePageName[] = [
  'batch items: first page',
  'batch items: middle page',
  'batch items: by status',
];
export const targetP95Ms = (page: string): number =>
  (batchItemsPages as readonly string[]).includes(page) ? 100 : 200;

const pageFiguresSchema = z.object({
  path: z.string(),
  requests: z.number().int(),
  /** Answers other than 200 (each is counted, not timed). */
  failed: z.number().int(),
  /** The answers' HTTP statuses and how many of each. */
  statuses: z.record(z.string(), z.number().int()),
  latencyMs: z.object({ p50: z.number(), p95: z.number(), p99: z.number() }),
  /** The page's size, bytes (the last answer's). */
  bytes: z.number().int(),
});
export type PageFigures = z.infer<typeof pageFiguresSchema>;

const phaseSchema = z.object({
  loadAverage: z.number(),
  pages: z.record(z.string(), pageFiguresSchema),
});

const consoleHistorySchema = z.object({
  batches: z.number().int(),
  batchItems: z.number().int(),
  deliveries: z.number().int(),
  opsActions: z.number().int(),
  seconds: z.number(),
});

export const consoleBenchReportSchema = z.object({
  name: z.string(),
  date: z.string(),
  machine: z.object({ cpus: z.number().int(), cpuModel: z.string(), memoryGiB: z.number(), node: z.string() }),
  options: z.object({
    fundings: z.number().int(),
    payments: z.number().int(),
    batchItems: z.number().int(),
    requests: z.number().int(),
  }),
  /** What each page was asked for: the same ids on both sides. */
  targets: z.object({
    fundingId: z.string(),
    idempotencyKey: z.string(),
    codeDigits: z.string(),
    paymentId: z.string(),
    partnerUserId: z.string(),
    batchId: z.string(),
    smallBatchId: z.string(),
    middleReference: z.string(),
    itemStatus: z.string(),
  }),
  seed: preloadSummarySchema,
  seedConsole: consoleHistorySchema,
  empty: phaseSchema,
  preload: preloadSummarySchema,
  preloadConsole: consoleHistorySchema,
  preloaded: phaseSchema,
  /** Each page's preloaded p95 over its small-database p95. */
  ratioP95: z.record(z.string(), z.number()),
  /** Pages whose preloaded p95 missed their target (200 ms; the batch items 100 ms). */
  missed: z.array(z.string()),
  durationSeconds: z.number(),
});
export type ConsoleBenchReport = z.infer<typeof consoleBenchReportSchema>;

export interface ConsoleBenchDependencies {
  apiBase: string;
  /** An ops key with every scope: the person signed in to the console. */
  opsKey: string;
  databaseUrl: string;
  log: (line: string) => void;
}

export interface ConsoleBenchOptions {
  preload: { fundings: number; payments: number };
  /** Items of the batch whose items pages are measured (default 100,000). */
  batchItems: number;
  /** Timed requests per page on each side, after 3 not timed. */
  requests: number;
  name: string;
}

/** A UUID v4-shaped id from 32 hex digits (as the preload makes them). */
const uuidOf = (hex: string) => `(overlay(overlay(${hex} placing '4' from 13) placing '8' from 17))::uuid`;

/** The big batch's item references: `ITEM-0000001`... (they sort as they were written). */
const referenceOf = (index: number) => `ITEM-${String(index).padStart(7, '0')}`;

/**
 * What the preload does not write and the console shows: `smallBatches` finished batches of
 * `smallItems` items dated within the history, then (when `bigItems` > 0) one finished batch of
 * `bigItems` items dated an hour ago (the newest, on the batches list's first page); a webhook
 * endpoint (one, made on the first call) and a delivery to it of every event that has none;
 * `opsActions` audit rows over the history's days. In one transaction.
 */
export async function consoleHistory(
  databaseUrl: string,
  input: { smallBatches: number; smallItems: number; bigItems: number; opsActions: number; days?: number },
): Promise<z.infer<typeof consoleHistorySchema> & { bigBatchId: string | null; smallBatchId: string | null }> {
  const started = Date.now();
  const salt = randomBytes(6).toString('hex');
  const tag = `'${salt}'`;
  const days = input.days ?? 180;
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    await client.query({ text: 'BEGIN' });
    await client.query({ text: `SET LOCAL synchronous_commit = off; SET LOCAL work_mem = '128MB'` });
    /** One batch: its row, then its items (finished), in reference order. */
    const batch = async (index: number, items: number, createdAtSql: string): Promise<string> => {
      const rows = await client.query<{ id: string }>({
        text: `INSERT INTO funding_batch (id, idempotency_key, request_fingerprint, workflow_id, name, state, source_partner_user_id, currency, total_count, total_amount,
                                    created_by, approved_by, created_at, started_at, completed_at, updated_at)
           SELECT ${uuidOf(`md5('batch-' || ${tag} || '-' || $1::int)`)}, 'bench-console-' || ${tag} || '-' || $1::int, md5(${tag}) || md5($1::text),
                  'batch-bench-' || ${tag} || '-' || $1::int, 'Payroll ' || ${tag} || ' #' || $1::int, 'COMPLETED', NULL, 'PHP', $2::int, $2::int * 25.00,
                  'Maria Maker (oidc:bench-maker)', 'Carlos Checker (oidc:bench-checker)', c.at, c.at + interval '2 minutes',
                  c.at + interval '2 minutes' + make_interval(secs => $2::int / 140.0), c.at + interval '2 minutes' + make_interval(secs => $2::int / 140.0)
           FROM (SELECT ${createdAtSql} AS at) c
         RETURNING id`,
        values: [index, items],
      });
      const id = rows.rows[0]!.id;
      await client.query({
        text: `INSERT INTO funding (id, idempotency_key, request_fingerprint, workflow_id, status, recipient_type, cash_in_code_encrypted, cash_in_code_masked,
                              currency, amount, transfer_id, abandoned_transfer_ids, cancel_requested, error_code, error_message, batch_id, batch_reference,
                              created_at, updated_at)
           SELECT ${uuidOf('s.h')}, 'batch:' || $1::text || ':' || s.ref, s.h || md5(s.h), 'funding-' || s.h,
                  s.status::"FundingStatus", 'CODE', decode(s.h || s.h || substr(s.h, 1, 16), 'hex'), '*****' || lpad((s.g % 100)::text, 2, '0'),
                  'PHP', 25.00, CASE WHEN s.status <> 'REJECTED' THEN 'TRF' || upper(substr(s.h, 1, 20)) END, ARRAY[]::text[], false,
                  CASE s.status WHEN 'DECLINED' THEN '6001' WHEN 'REJECTED' THEN 'CODE_INVALID' WHEN 'FAILED' THEN 'TRANSFER_EXPIRED' END,
                  CASE s.status WHEN 'DECLINED' THEN 'The recipient wallet has reached its limit.' WHEN 'REJECTED' THEN 'The cash-in code is unknown, used or expired.'
                                WHEN 'FAILED' THEN 'The funding failed.' END,
                  $1::uuid, s.ref, b.created_at, b.completed_at
           FROM funding_batch b,
                (SELECT g, md5(${tag} || '-' || $1::text || '-' || g) AS h, 'ITEM-' || lpad(g::text, 7, '0') AS ref,
                        CASE WHEN r < 0.97 THEN 'APPROVED' WHEN r < 0.985 THEN 'DECLINED' WHEN r < 0.995 THEN 'FAILED' ELSE 'REJECTED' END AS status
                 FROM (SELECT g, random() AS r FROM generate_series(1, $2::int) g) x) s
           WHERE b.id = $1::uuid`,
        values: [id, items],
      });
      return id;
    };
    const start = `(now() - interval '1 hour' - make_interval(days => ${days}))`;
    let smallBatchId: string | null = null;
    for (let index = 1; index <= input.smallBatches; index += 1) {
      smallBatchId = await batch(
        index,
        input.smallItems,
        `${start} + make_interval(days => ${days}) * (${index}::float8 / ${input.smallBatches + 1}) - interval '1 day'`,
      );
    }
    const bigBatchId = input.bigItems > 0 ? await batch(0, input.bigItems, `now() - interval '1 hour'`) : null;

    // The endpoint (once), and a delivery of every event that has none: mostly delivered, 1 in 200 a dead letter.
    await client.query({
      text: `INSERT INTO webhook_endpoint (id, url, events, secret_encrypted, created_by, created_at)
         SELECT ${uuidOf(`md5('bench-console-endpoint')`)}, 'http://127.0.0.1:9/bench-console-hooks',
                ARRAY['funding.approved', 'funding.declined', 'funding.rejected', 'funding.failed', 'funding.needs_review', 'payment.succeeded', 'payment.failed', 'payment.needs_review'],
                decode(md5('bench-console-secret'), 'hex'), 'bench', ${start}
       ON CONFLICT (id) DO NOTHING`,
    });
    const deliveries = await client.query({
      text: `INSERT INTO webhook_delivery (id, event_id, endpoint_id, status, attempts, retrying_since, delivered_at, created_at, updated_at)
         SELECT ${uuidOf(`md5('delivery-' || e.id)`)}, e.id, ${uuidOf(`md5('bench-console-endpoint')`)},
                (CASE WHEN random() < 0.005 THEN 'FAILED' ELSE 'SUCCEEDED' END)::"WebhookDeliveryStatus", 1, e.created_at,
                e.created_at + interval '200 milliseconds', e.created_at, e.created_at + interval '200 milliseconds'
         FROM webhook_event e
         WHERE NOT EXISTS (SELECT 1 FROM webhook_delivery d WHERE d.event_id = e.id)`,
    });
    // A dead letter was retried for its window: its last attempt a day later, never delivered.
    await client.query({
      text: `UPDATE webhook_delivery SET delivered_at = NULL, attempts = 18, updated_at = created_at + interval '1 day' WHERE status = 'FAILED' AND delivered_at IS NOT NULL`,
    });

    // Audit rows: staff and keys at work over the history's days.
    await client.query({
      text: `INSERT INTO ops_action (at, key_name, channel, actor, method, path, status, request_id)
         SELECT ${start} + (g::float8 / $1::int) * make_interval(days => ${days}),
                (ARRAY['ops', 'Maria Maker (oidc:bench-maker)', 'Carlos Checker (oidc:bench-checker)', 'Rosa Resolver (oidc:bench-resolver)'])[1 + g % 4],
                CASE WHEN g % 4 = 0 THEN 'api' ELSE 'console' END, NULL, 'POST',
                (ARRAY['/ops/fundings', '/console/fundings/' || ${uuidOf(`md5('a' || g)`)} || '/resolve', '/console/batches/' || ${uuidOf(`md5('b' || g)`)} || '/approve', '/ops/webhooks/deliveries/' || ${uuidOf(`md5('c' || g)`)} || '/redeliver'])[1 + g % 4],
                (ARRAY[202, 303, 303, 202])[1 + g % 4], md5(${tag} || g)
         FROM generate_series(1, $1::int) g`,
      values: [input.opsActions],
    });
    await client.query({ text: 'COMMIT' });
    await client.query({ text: 'VACUUM (ANALYZE) funding, funding_batch, webhook_delivery, ops_action' });
    return {
      batches: input.smallBatches + (input.bigItems > 0 ? 1 : 0),
      batchItems: input.smallBatches * input.smallItems + input.bigItems,
      deliveries: deliveries.rowCount ?? 0,
      opsActions: input.opsActions,
      seconds: Math.round((Date.now() - started) / 100) / 10,
      bigBatchId,
      smallBatchId,
    };
  } catch (error) {
    await client.query({ text: 'ROLLBACK' }).catch(() => undefined);
    throw error;
  } finally {
    await client.end();
  }
}

/**
 * The cookie a Set-Cookie header sets (`name=value`, the name with or without the `__Host-` prefix an https console
 * gives it), or undefined.
 */
function cookieFrom(response: Response, name: string): string | undefined {
  for (const header of response.headers.getSetCookie()) {
    const pair = header.split(';')[0] ?? '';
    for (const spelled of [name, `__Host-${name}`])
      if (pair.startsWith(`${spelled}=`) && pair.length > spelled.length + 1) return pair;
  }
  return undefined;
}

/**
 * Signs in to the console with an ops key as a person does (api/console/sign-in.ts): the sign-in
 * page sets its form's token in a cookie and the form, the form is posted with the key, and the
 * answer sets the session's cookie. Answers the Cookie header for the console's pages.
 */
export async function signInWithKey(apiBase: string, key: string): Promise<string> {
  const page = await fetch(`${apiBase}/console/sign-in`, { redirect: 'manual' });
  const pre = cookieFrom(page, 'walletflow_console_pre');
  const token = /name="_csrf" value="([^"]+)"/.exec(await page.text())?.[1];
  if (!pre || !token)
    throw new Error(`the console's sign-in page (${page.status}) has no key form: is an identity provider configured?`);
  const signedIn = await fetch(`${apiBase}/console/sign-in`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: pre, origin: apiBase },
    body: new URLSearchParams({ _csrf: token, return: '/console', key }).toString(),
  });
  await signedIn.text();
  const session = cookieFrom(signedIn, 'walletflow_console');
  if (signedIn.status !== 200 || !session)
    throw new Error(`signing in to the console with the ops key answered ${signedIn.status}`);
  return session;
}

/** One page: 3 requests not timed, then `requests` timed, one in flight. */
export async function measurePage(
  apiBase: string,
  cookie: string,
  path: string,
  requests: number,
): Promise<PageFigures> {
  const latencies: number[] = [];
  const statuses: Record<string, number> = {};
  let failed = 0;
  let bytes = 0;
  for (let index = 0; index < requests + 3; index += 1) {
    const started = performance.now();
    const response = await fetch(`${apiBase}${path}`, { redirect: 'manual', headers: { cookie } });
    const body = await response.arrayBuffer();
    const elapsed = performance.now() - started;
    if (index < 3) continue;
    statuses[response.status] = (statuses[response.status] ?? 0) + 1;
    bytes = body.byteLength;
    if (response.status === 200) latencies.push(elapsed);
    else failed += 1;
  }
  return { path, requests, failed, statuses, latencyMs: percentiles(latencies), bytes };
}

type Targets = ConsoleBenchReport['targets'];

/** Every page's path for the targets. */
export function consolePagePaths(targets: Targets): Record<ConsolePageName, string> {
  const q = (value: string) => `/console/search?q=${encodeURIComponent(value)}`;
  const big = `/console/batches/${targets.batchId}`;
  return {
    home: '/console',
    'search by funding id': q(targets.fundingId),
    'search by idempotency key': q(targets.idempotencyKey),
    'search by code digits': q(targets.codeDigits),
    funding: `/console/fundings/${targets.fundingId}`,
    payment: `/console/payments/${targets.paymentId}`,
    'review queue': '/console/review',
    batches: '/console/batches',
    batch: `/console/batches/${targets.smallBatchId}`,
    'batch items: first page': big,
    'batch items: middle page': `${big}?cursor=${encodeURIComponent(targets.middleReference)}`,
    'batch items: by status': `${big}?status=${encodeURIComponent(targets.itemStatus)}`,
    'account (a user)': `/console/accounts/${encodeURIComponent(targets.partnerUserId)}`,
    webhooks: '/console/webhooks',
    'links (a user)': `/console/links?partnerUserId=${encodeURIComponent(targets.partnerUserId)}`,
    audit: '/console/audit',
  };
}

async function measurePhase(
  deps: ConsoleBenchDependencies,
  targets: Targets,
  requests: number,
  phase: string,
): Promise<z.infer<typeof phaseSchema>> {
  const loadAverage = round1(os.loadavg()[0]!);
  // A session of its own for each side: the preload may outlast the idle time-out.
  const cookie = await signInWithKey(deps.apiBase, deps.opsKey);
  const paths = consolePagePaths(targets);
  const pages: Record<string, PageFigures> = {};
  for (const name of consolePageNames) {
    pages[name] = await measurePage(deps.apiBase, cookie, paths[name], requests);
    const figures = pages[name];
    deps.log(
      `console (${phase}): ${name.padEnd(26)} p50 ${figures.latencyMs.p50} ms, p95 ${figures.latencyMs.p95} ms${figures.failed ? `, ${figures.failed} not 200: ${JSON.stringify(figures.statuses)}` : ''}`,
    );
  }
  return { loadAverage, pages };
}

/** The pages' targets, read from what the small database holds (the same on both sides). */
async function chooseTargets(
  databaseUrl: string,
  batchId: string,
  smallBatchId: string,
  batchItems: number,
): Promise<Targets> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const one = async <Row extends pg.QueryResultRow>(sql: string, values: unknown[] = []): Promise<Row> => {
      const row = (await client.query<Row>(sql, values)).rows[0];
      if (!row) throw new Error(`the bench's database has nothing for: ${sql}`);
      return row;
    };
    const funding = await one<{ id: string; idempotency_key: string; cash_in_code_masked: string }>(
      `SELECT id, idempotency_key, cash_in_code_masked FROM funding WHERE batch_id IS NULL AND status = 'APPROVED' AND recipient_type = 'CODE' ORDER BY created_at DESC LIMIT 1`,
    );
    const payment = await one<{ id: string }>(
      `SELECT id FROM payment WHERE status = 'SUCCEEDED' ORDER BY created_at DESC LIMIT 1`,
    );
    const user = await one<{ partner_user_id: string }>(
      `SELECT source_partner_user_id AS partner_user_id FROM funding WHERE source_partner_user_id IS NOT NULL ORDER BY created_at DESC LIMIT 1`,
    );
    return {
      fundingId: funding.id,
      idempotencyKey: funding.idempotency_key,
      codeDigits: funding.cash_in_code_masked.slice(-2),
      paymentId: payment.id,
      partnerUserId: user.partner_user_id,
      batchId,
      smallBatchId,
      middleReference: referenceOf(Math.floor(batchItems / 2)),
      // A rare status (1 in 100 items): its pages reach far into the batch.
      itemStatus: 'FAILED',
    };
  } finally {
    await client.end();
  }
}

const ratioOf = (after: number, before: number) => (before > 0 ? Math.round((after / before) * 100) / 100 : 0);

/**
 * The small database (a hundredth of the history, the console's own history, the big batch), its
 * pages measured; then the preload and its share of batches, deliveries and audit rows; the same
 * pages measured again.
 */
export async function runConsoleBench(
  deps: ConsoleBenchDependencies,
  options: ConsoleBenchOptions,
): Promise<ConsoleBenchReport> {
  const started = Date.now();
  const { fundings, payments } = options.preload;
  const seedOptions: PreloadOptions = {
    fundings: Math.ceil(fundings / 100),
    payments: Math.ceil(payments / 100),
    links: 200,
  };
  const seed = await preloadHistory(deps.databaseUrl, seedOptions);
  const seedConsole = await consoleHistory(deps.databaseUrl, {
    smallBatches: 5,
    smallItems: 200,
    bigItems: options.batchItems,
    opsActions: Math.ceil(fundings / 1000),
  });
  deps.log(
    `console: small database: ${seed.fundings} fundings, ${seed.payments} payments, ${seedConsole.batches} batches (${seedConsole.batchItems} items, one of ${options.batchItems}), ` +
      `${seedConsole.deliveries} webhook deliveries, ${seedConsole.opsActions} audit rows`,
  );
  const targets = await chooseTargets(
    deps.databaseUrl,
    seedConsole.bigBatchId!,
    seedConsole.smallBatchId!,
    options.batchItems,
  );
  const empty = await measurePhase(deps, targets, options.requests, 'small database');
  deps.log(`preload: ${fundings} fundings and ${payments} payments of history...`);
  const preload = await preloadHistory(deps.databaseUrl, { fundings, payments, links: 2000 }, deps.log);
  deps.log(
    `preload: done in ${preload.seconds} s (${preload.fundingEvents} funding events, ${preload.ledgerEntries} ledger entries)`,
  );
  // The preload's share of the rest: a batch of 500 items every 10,000 fundings, an audit row every 10.
  const preloadConsole = await consoleHistory(deps.databaseUrl, {
    smallBatches: Math.ceil(fundings / 10_000),
    smallItems: 500,
    bigItems: 0,
    opsActions: Math.ceil(fundings / 10),
  });
  deps.log(
    `console: the preload's batches (${preloadConsole.batches}, ${preloadConsole.batchItems} items), ${preloadConsole.deliveries} webhook deliveries and ${preloadConsole.opsActions} audit rows in ${preloadConsole.seconds} s`,
  );
  const preloaded = await measurePhase(deps, targets, options.requests, 'preloaded');
  const ratioP95 = Object.fromEntries(
    consolePageNames.map((page) => [
      page,
      ratioOf(preloaded.pages[page]!.latencyMs.p95, empty.pages[page]!.latencyMs.p95),
    ]),
  );
  const missed = consolePageNames.filter((page) => preloaded.pages[page]!.latencyMs.p95 >= targetP95Ms(page));
  const cpus = os.cpus();
  const { bigBatchId: _big, smallBatchId: _small, ...seedCounts } = seedConsole;
  const { bigBatchId: _none, smallBatchId: _last, ...preloadCounts } = preloadConsole;
  return consoleBenchReportSchema.parse({
    name: options.name,
    date: new Date(started).toISOString(),
    machine: {
      cpus: cpus.length,
      cpuModel: cpus[0]?.model.trim() ?? 'unknown',
      memoryGiB: round1(os.totalmem() / 2 ** 30),
      node: process.version,
    },
    options: { fundings, payments, batchItems: options.batchItems, requests: options.requests },
    targets,
    seed,
    seedConsole: seedCounts,
    empty,
    preload,
    preloadConsole: preloadCounts,
    preloaded,
    ratioP95,
    missed,
    durationSeconds: Math.round((Date.now() - started) / 1000),
  });
}

/** The printed table (as docs/benchmarks.md shows it). */
export function formatConsoleTable(report: ConsoleBenchReport): string {
  const lines = [
    `Console pages: ${report.preload.fundings} fundings and ${report.preload.payments} payments preloaded over a small database of ${report.seed.fundings} and ${report.seed.payments}; ` +
      `a batch of ${report.options.batchItems} items; ${report.options.requests} requests a page, one in flight; load average ${report.empty.loadAverage} (small) and ${report.preloaded.loadAverage} (preloaded):`,
    '',
    '| page | small p50 ms | small p95 ms | preloaded p50 ms | preloaded p95 ms | ratio (p95) | target p95 |',
    '|---|---:|---:|---:|---:|---:|---|',
  ];
  for (const page of consolePageNames) {
    const before = report.empty.pages[page]!;
    const after = report.preloaded.pages[page]!;
    const target = targetP95Ms(page);
    lines.push(
      `| ${page} | ${before.latencyMs.p50} | ${before.latencyMs.p95} | ${after.latencyMs.p50} | ${after.latencyMs.p95} | ${report.ratioP95[page]} | < ${target} ms: ${after.latencyMs.p95 < target ? 'met' : 'MISSED'} |`,
    );
  }
  return lines.join('\n');
}
