// `walletflow soak`: N fundings and M payments against the sandbox with faults on every endpoint
// while the worker is SIGKILLed, the API restarted and the Temporal dev server stopped and started;
// then the invariant checker compares the sandbox ledger with walletflow's records and prints the
// table. Exit 0: no violation; 1: violations (listed, with timelines); 64: bad options.
import { checkLedgerInvariants } from './ledger-invariants.ts';
import { writeFile } from 'node:fs/promises';
import { isFinalFundingStatus } from '../domain/funding.ts';
import { isFinalPaymentStatus } from '../domain/payment.ts';
import { mulberry32 } from '../sandbox/faults.ts';
import { chaosPlanLine, createChaos, faultRules, type Chaos } from './soak-chaos.ts';
import {
  merchantFee,
  opsClient,
  planRun,
  pool,
  postItem,
  resolveReviews,
  sandboxAdmin,
  type DriverStats,
  type PlannedItem,
  type ReviewRecord,
} from './soak-driver.ts';
import {
  checkSoak,
  formatSoakTable,
  formatViolations,
  type SoakCheckResult,
  type SoakFundingRow,
  type SoakPaymentRow,
} from './soak-invariants.ts';
import { createCleanup, exitOnStopSignals } from './cleanup.ts';
import { startLocalStack, type LocalStack } from './local-stack.ts';
import { formatAmount, fromNumeric, storedAmount } from '../domain/money.ts';
import {
  batchView,
  checkBatchCounts,
  checkBatchHolds,
  checkTokenLinks,
  driveBatch,
  itemsSent,
  planBatches,
} from './soak-batches.ts';
import type { Expected, Violation } from './soak-invariants.ts';

export interface SoakOptions {
  fundings: string;
  payments: string;
  concurrency: string;
  seed: string;
  timeout?: string;
  /** false with --no-chaos. */
  chaos: boolean;
  json?: string;
  logDir?: string;
  /** Funding batches sent during the run (harness/soak-batches.ts). */
  batches?: string;
  /** Items per batch, `min-max`. */
  batchItems?: string;
}

function wholeNumber(value: string, name: string, min: number): number {
  const parsed = Number(value);
  if (!/^\d+$/.test(value.trim()) || !Number.isSafeInteger(parsed) || parsed < min)
    throw new UsageError(`--${name} must be a whole number ≥ ${min}`);
  return parsed;
}

class UsageError extends Error {}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export async function runSoak(options: SoakOptions): Promise<number> {
  let fundings: number,
    payments: number,
    concurrency: number,
    seed: number,
    timeoutSeconds: number,
    batches: number,
    batchItems: { min: number; max: number };
  try {
    batches = wholeNumber(options.batches ?? '0', 'batches', 0);
    const range = /^(\d+)-(\d+)$/.exec((options.batchItems ?? '500-2000').trim());
    if (!range || Number(range[1]) < 1 || Number(range[1]) > Number(range[2]) || Number(range[2]) > 100_000)
      throw new UsageError('--batch-items must be min-max, from 1 to 100000');
    batchItems = { min: Number(range[1]), max: Number(range[2]) };
    fundings = wholeNumber(options.fundings, 'fundings', 0);
    payments = wholeNumber(options.payments, 'payments', 0);
    concurrency = wholeNumber(options.concurrency, 'concurrency', 1);
    seed = wholeNumber(options.seed, 'seed', 0);
    timeoutSeconds =
      options.timeout === undefined
        ? Math.max(600, 3 * (fundings + payments) + batches * batchItems.max)
        : wholeNumber(options.timeout, 'timeout', 10);
    if (fundings + payments + batches === 0)
      throw new UsageError('nothing to do: --fundings, --payments and --batches are all 0');
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    console.error(`walletflow soak: ${error.message}`);
    return 64;
  }

  const started = Date.now();
  const elapsed = () => `${((Date.now() - started) / 1000).toFixed(0).padStart(4)}s`;
  const log = (line: string) => process.stdout.write(`${elapsed()}  ${line}\n`);
  const cleanup = createCleanup(log);
  const signals = exitOnStopSignals(cleanup, log, 'soak');

  try {
    log(
      `soak: ${fundings} fundings, ${payments} payments, ${batches} batches of ${batchItems.min}-${batchItems.max} items, concurrency ${concurrency}, seed ${seed}, chaos ${options.chaos ? 'on' : 'off'}, timeout ${timeoutSeconds}s`,
    );
    // With chaos, two workers: a paused one's workflow tasks and orphaned passes overlap the
    // other's, so the fences are tested.
    // A soak batch of ten items or more (each 1.00 or more) waits for the second key (harness/local-stack.ts
    // approverKey).
    const stack = await startLocalStack({
      purpose: 'soak',
      log,
      cleanup,
      workers: options.chaos ? 2 : 1,
      ...(options.logDir ? { logDir: options.logDir } : {}),
      // The sweep runs as often and as early as configuration allows (every minute, at a minute's
      // idleness), beside the batches and the chaos: it must never take over what a live owner holds.
      // Every single funding rides a lane (FUNDING_LANES=always): the lanes' chunks meet the chaos.
      env: {
        BATCH_APPROVAL_THRESHOLD: '10.00',
        RECONCILE_EVERY_MINUTES: '1',
        RECONCILE_AFTER_SECONDS: '60',
        FUNDING_LANES: 'always',
      },
    });
    const result = await drive(stack, {
      fundings,
      payments,
      batches,
      batchItems,
      concurrency,
      seed,
      timeoutSeconds,
      chaos: options.chaos,
      log,
      started,
    });
    const report = [
      '',
      `walletflow soak, ${new Date(started).toISOString().slice(0, 10)}: ${fundings} fundings, ${payments} payments, ${batches} batches, concurrency ${concurrency}, seed ${seed}, chaos ${options.chaos ? 'on' : 'off'}, ${Math.round((Date.now() - started) / 1000)} s`,
      '',
      formatSoakTable(result.check.table, result.check.violations),
      '',
      ...result.notes,
      '',
      result.check.violations.length === 0
        ? 'invariants: all hold (0 violations)'
        : `invariants: ${result.check.violations.length} violation(s)\n${formatViolations(result.check.violations)}`,
      ...(result.timelines.length > 0 ? ['', 'timelines of the items concerned:', ...result.timelines] : []),
      '',
    ].join('\n');
    process.stdout.write(report);
    if (options.json) {
      await writeFile(
        options.json,
        `${JSON.stringify({ date: new Date(started).toISOString(), options: { fundings, payments, batches, batchItems, concurrency, seed, chaos: options.chaos, timeoutSeconds }, durationSeconds: Math.round((Date.now() - started) / 1000), ...result.check, chaos: result.chaos, notes: result.notes }, null, 2)}\n`,
      );
    }
    if (result.check.violations.length > 0 && options.logDir) log(`process logs kept in ${options.logDir}`);
    return result.check.violations.length === 0 ? 0 : 1;
  } catch (error) {
    if (signals.interrupted()) return 130;
    console.error(`walletflow soak: ${(error as Error).message}`);
    return 1;
  } finally {
    if (!signals.interrupted()) await cleanup.run();
    signals.off();
  }
}

interface DriveOptions {
  fundings: number;
  payments: number;
  batches: number;
  batchItems: { min: number; max: number };
  concurrency: number;
  seed: number;
  timeoutSeconds: number;
  chaos: boolean;
  log: (line: string) => void;
  started: number;
}

interface DriveResult {
  check: SoakCheckResult;
  chaos: { counts: Chaos['counts'] | null; actions: string[] };
  notes: string[];
  timelines: string[];
}

async function drive(stack: LocalStack, options: DriveOptions): Promise<DriveResult> {
  const { log } = options;
  const deadline = options.started + options.timeoutSeconds * 1000;
  const admin = sandboxAdmin(stack.sandbox.url);
  const stats: DriverStats = { retries: 0, relaunches: 0 };
  const ops = opsClient(stack.apiBase, stack.opsKey, stats);
  await admin.settings({ merchantFee });

  const plan = await planRun(admin, {
    fundings: options.fundings,
    payments: options.payments,
    random: mulberry32(options.seed),
  });
  const batchPlan = await planBatches(admin, {
    batches: options.batches,
    minItems: options.batchItems.min,
    maxItems: options.batchItems.max,
    random: mulberry32(options.seed ^ 0xba7c4),
  });
  const before = new Map((await admin.users()).users.map((user) => [user.userId, user.balance]));
  log(
    `planned ${plan.length} requests and ${batchPlan.batches.length} batches (${batchPlan.batches.reduce((sum, batch) => sum + batch.size, 0)} items); ${before.size} sandbox users`,
  );

  let chaos: Chaos | null = null;
  if (options.chaos) {
    await admin.setFaults(faultRules(), options.seed);
    chaos = createChaos(stack, { total: plan.length, random: mulberry32(options.seed ^ 0x5eed), log });
    log(`faults on every wallet endpoint (seed ${options.seed}); ${chaosPlanLine(plan.length)}`);
  }

  // Ops: resolve reviews as they come, from the ledger.
  const reviews: ReviewRecord[] = [];
  let reviewing = true;
  const reviewer = (async () => {
    while (reviewing) {
      try {
        const resolved = await resolveReviews(ops, admin);
        for (const review of resolved) {
          reviews.push(review);
          log(
            `ops: ${review.kind ?? 'payment'} ${review.id} resolved ${review.outcome} (the ledger shows ${review.executions} execution(s))`,
          );
        }
      } catch (error) {
        log(`ops: review round failed (${(error as Error).message}); next round`);
      }
      await sleep(2000);
    }
  })();

  // Batches: sent at once, beside the single requests and under the same chaos, as a partner's
  // batches overlap; each draws from a random sequence of its own, seeded from the run's seed, whatever
  // order their awaits interleave in. Their holds are checked against their open items every few seconds.
  const batchViolations: Violation[] = [];
  const approver = opsClient(stack.apiBase, stack.approverKey, stats);
  const batchSeeds = mulberry32(options.seed ^ 0xba7c5);
  const batchRandoms = batchPlan.batches.map(() => mulberry32(Math.floor(batchSeeds() * 2 ** 32)));
  const batchIds = () => batchPlan.batches.flatMap((batch) => (batch.batchId ? [batch.batchId] : []));
  let batchChecks = 0;
  const holdChecker = setInterval(() => {
    void checkBatchHolds(stack.database, batchIds()).then(
      (found) => {
        batchChecks += 1;
        batchViolations.push(...found);
      },
      () => undefined,
    );
  }, 3000);
  const batchesDone = Promise.all(
    batchPlan.batches.map(async (batch) => {
      try {
        await driveBatch(batch, {
          admin,
          recipients: batchPlan.recipients,
          ops,
          approver,
          database: stack.database,
          tokenEncryptionKey: stack.tokenEncryptionKey,
          random: batchRandoms[batch.index]!,
          deadline,
          log,
        });
      } catch (error) {
        batch.error = (error as Error).message;
        log(`batch ${batch.index}: ${batch.error}`);
      }
    }),
  );

  let posted = 0;
  const progress = setInterval(() => {
    void countOpen(stack, plan, batchIds()).then(
      (open) =>
        log(
          `posted ${posted}/${plan.length}; not final: ${open.fundings} funding(s), ${open.payments} payment(s) (${open.review} in review)` +
            (chaos
              ? `; chaos: worker kills ${chaos.counts['worker-kill']}, worker pauses ${chaos.counts['worker-pause']}, API restarts ${chaos.counts['api-restart']}, Temporal restarts ${chaos.counts['temporal-restart']}`
              : ''),
        ),
      () => undefined,
    );
  }, 10_000);

  try {
    await pool(plan, options.concurrency, async (item) => {
      try {
        await postItem(item, { admin, ops, database: stack.database, stats, deadline });
      } catch (error) {
        item.error = (error as Error).message;
      }
      if (item.error) log(`request ${item.side} #${item.index} not accepted: ${item.error}`);
      posted += 1;
      chaos?.progress(posted);
    });
    await batchesDone;
    chaos?.finale();
    log(`all ${plan.length} requests posted and ${batchPlan.batches.length} batches ended; waiting for final states`);

    // Done: every item final (reviews resolved by ops), and chaos done.
    let chaosDone = chaos === null;
    void chaos?.drain().then(() => (chaosDone = true));
    for (;;) {
      const open = await countOpen(stack, plan, batchIds());
      if (open.fundings === 0 && open.payments === 0 && chaosDone) break;
      if (Date.now() > deadline) {
        log(
          `timeout: ${open.fundings} funding(s) and ${open.payments} payment(s) not final after ${options.timeoutSeconds}s`,
        );
        break;
      }
      await sleep(1000);
    }
    if (!chaosDone) await chaos?.drain();
  } finally {
    clearInterval(progress);
    clearInterval(holdChecker);
    reviewing = false;
    await reviewer;
  }
  if (chaos) await admin.clearFaults();

  // The evidence: walletflow's rows (its database), the sandbox's ledger and balances.
  const ids = (side: 'funding' | 'payment') =>
    plan.filter((item) => item.side === side && item.id).map((item) => item.id!);
  const expectedById = new Map<string, Expected | null>(
    plan.filter((item) => item.id).map((item) => [item.id!, item.expected]),
  );
  const fundingRows = await stack.database.funding.findMany({
    where: { OR: [{ id: { in: ids('funding') } }, { batchId: { in: batchIds() } }] },
    include: { events: { orderBy: { id: 'asc' } } },
  });
  // The TOKEN items' links: a link whose rotated pair a killed worker lost expects its item to end
  // FAILED REAUTH_REQUIRED (a documented limit); any other link not ACTIVE is a violation.
  const tokenLinks = await checkTokenLinks(stack.database, (await admin.ledger()).refreshes, batchPlan.batches);
  batchViolations.push(...tokenLinks.violations);
  // Their users were made during the run (the wallet's balances before: 0.00).
  for (const batch of batchPlan.batches) for (const link of batch.tokenLinks.values()) before.set(link.userId, '0.00');
  // A batch item's expectation: its recipient's, or CANCELLED when its batch was cancelled before it started.
  const batchOf = new Map(
    batchPlan.batches.flatMap((batch) => (batch.batchId ? [[batch.batchId, batch] as const] : [])),
  );
  for (const row of fundingRows) {
    const batch = row.batchId ? batchOf.get(row.batchId) : undefined;
    if (!batch || !row.batchReference) continue;
    const cancelled = batch.finalState === 'CANCELLED' && row.status === 'FAILED' && row.errorCode === 'CANCELLED';
    expectedById.set(
      row.id,
      cancelled ? { status: 'FAILED', code: 'CANCELLED' } : (batch.expected.get(row.batchReference) ?? null),
    );
  }
  batchViolations.push(...(await checkBatchHolds(stack.database, batchIds())));
  for (const batch of batchPlan.batches) {
    if (batch.error)
      batchViolations.push({
        invariant: 'batch',
        ids: batch.batchId ? [batch.batchId] : [],
        detail: `batch ${batch.index}: ${batch.error}`,
      });
    if (batch.batchId)
      batchViolations.push(
        ...(await checkBatchCounts(stack.database, batch, await batchView(ops, batch.batchId, Date.now() + 60_000))),
      );
  }
  const paymentRows = await stack.database.payment.findMany({
    where: { id: { in: ids('payment') } },
    include: { events: { orderBy: { id: 'asc' } } },
  });
  const ledger = await admin.ledger();
  const after = new Map((await admin.users()).users.map((user) => [user.userId, user.balance]));

  const fundingsIn: SoakFundingRow[] = fundingRows.map((row) => ({
    id: row.id,
    status: row.status,
    errorCode: row.errorCode,
    transferId: row.transferId,
    abandonedTransferIds: row.abandonedTransferIds,
    amount: storedAmount(row).value,
    createdAt: row.createdAt.getTime(),
    finalAt: row.events.find((event) => isFinalFundingStatus(event.status))?.at.getTime() ?? null,
    resolvedOutcome: row.resolvedOutcome,
    expected: expectedById.get(row.id) ?? null,
    eventFences: row.events.flatMap((event) => (event.fence === null ? [] : [event.fence])),
  }));
  const paymentsIn: SoakPaymentRow[] = paymentRows.map((row) => ({
    id: row.id,
    status: row.status,
    errorCode: row.errorCode,
    walletPaymentId: row.walletPaymentId,
    amount: storedAmount(row).value,
    fee: row.fee === null ? null : formatAmount(fromNumeric(row.fee), row.currency),
    createdAt: row.createdAt.getTime(),
    finalAt: row.events.find((event) => isFinalPaymentStatus(event.status))?.at.getTime() ?? null,
    reviewAt: row.events.find((event) => event.status === 'NEEDS_REVIEW')?.at.getTime() ?? null,
    resolvedOutcome: row.resolvedOutcome,
    expected: expectedById.get(row.id) ?? null,
    eventFences: row.events.flatMap((event) => (event.fence === null ? [] : [event.fence])),
  }));
  const check = checkSoak({
    requested: {
      fundings: plan.filter((item) => item.side === 'funding').length + itemsSent(batchPlan.batches),
      payments: plan.filter((item) => item.side === 'payment').length,
    },
    fundings: fundingsIn,
    payments: paymentsIn,
    ledger,
    balances: [...before.entries()].map(([userId, balance]) => ({
      userId,
      before: balance,
      after: after.get(userId) ?? balance,
    })),
  });
  // The partner's ledger: every transaction sums to zero, every balance is the sum of its entries,
  // no available below its floor, every final funding's hold settled, and the accounts reconcile
  // with the wallet's ledger (clearing = what the wallet approved − what it charged).
  const thousandths = (value: string) => BigInt(Math.round(Number(value) * 1000));
  const books = await checkLedgerInvariants(stack.database, {
    wallet: {
      approvedTransfers: ledger.transfers
        .filter((transfer) => transfer.status === 'APPROVED')
        .reduce((sum, transfer) => sum + thousandths(transfer.amount.value), 0n),
      succeededPayments: ledger.payments
        .filter((payment) => payment.status === 'EXECUTED')
        .reduce((sum, payment) => sum + thousandths(payment.amount.value), 0n),
    },
  });
  for (const detail of books.violations) check.violations.push({ invariant: 'ledger', ids: [], detail });
  check.violations.push(...batchViolations);
  log(
    `ledger: ${books.checked.transactions} transactions, ${books.checked.holds} holds; treasury ${books.totals.treasury}, users ${books.totals.users}, ` +
      `in flight ${books.totals.inFlight}, clearing ${books.totals.clearing}, revenue ${books.totals.revenue}, capital ${books.totals.capital}`,
  );
  for (const item of plan.filter((entry) => !entry.id)) {
    check.violations.push({
      invariant: 'lost-request',
      ids: [item.userId],
      detail: `${item.side} #${item.index} (${item.kind}) never accepted: ${item.error ?? 'no answer'}`,
    });
  }

  // Context: how much chaos there was, and what the workflows did with it.
  const calls = await stack.database.walletCall.groupBy({ by: ['outcome'], _count: { _all: true } });
  const callCount = (outcome: string) => calls.find((group) => group.outcome === outcome)?._count._all ?? 0;
  const totalCalls = calls.reduce((sum, group) => sum + group._count._all, 0);
  const reconciled = await stack.database.fundingEvent.findMany({
    where: { status: 'RECONCILING' },
    distinct: ['fundingId'],
    select: { fundingId: true },
  });
  const sweepRepairs = await stack.database.fundingEvent.count({
    where: { detail: { startsWith: 'reconciliation:' } },
  });
  const notes = [
    chaos
      ? `chaos: worker SIGKILL ×${chaos.counts['worker-kill']}, worker SIGSTOP ×${chaos.counts['worker-pause']} (with 2 workers), API restart ×${chaos.counts['api-restart']}, Temporal dev server restart ×${chaos.counts['temporal-restart']}; ` +
        `unplanned exits: worker ×${stack.worker.unplannedExits}, API ×${stack.api.unplannedExits}`
      : 'chaos: off (no faults, no process kills)',
    `wallet calls: ${totalCalls}, failed ${totalCalls - callCount('ok')} (unknown ${callCount('unknown')}, retryable ${callCount('retryable')}, rejected ${callCount('rejected')}); ` +
      `fundings reconciled by retrieve after an unknown execute: ${reconciled.length}; sweep repairs: ${sweepRepairs}`,
    ...(batchPlan.batches.length > 0
      ? [
          `batches: ${batchPlan.batches.map((batch) => `#${batch.index} ${batch.size} items ${batch.action} → ${batch.finalState ?? 'not ended'}${batch.notes.length ? ` (${batch.notes.join(', ')})` : ''}`).join('; ')}; holds checked against open items ${batchChecks + 1} times`,
          `TOKEN items' links (every access token expired): ${tokenLinks.links}, the wallet's refreshes all stored ${tokenLinks.kept}, a rotated pair lost to a killed worker ${tokenLinks.stranded}`,
        ]
      : []),
    `driver: requests repeated with the same Idempotency-Key ${stats.retries}, session URL relaunches ${stats.relaunches}; resolve requests answered 200: ${reviews.length} (the table counts walletflow's records)`,
  ];

  // Timelines of what went wrong, for whoever investigates.
  const timelineOf = (id: string) => {
    const funding = fundingRows.find((row) => row.id === id);
    const payment = paymentRows.find((row) => row.id === id);
    const row = funding ?? payment;
    if (!row) return [];
    return [
      `  ${funding ? 'funding' : 'payment'} ${id} (${funding ? `transfer ${funding.transferId ?? '-'}` : `wallet payment ${payment?.walletPaymentId ?? '-'}`})`,
      ...row.events.map(
        (event) =>
          `    ${event.at.toISOString()}  ${event.status.padEnd(12)} ${event.detail ?? ''}${event.requestReferenceNo ? `  (ref ${event.requestReferenceNo})` : ''}`,
      ),
    ];
  };
  const concerned = [...new Set(check.violations.flatMap((violation) => violation.ids))];
  const timelines = concerned.slice(0, 15).flatMap(timelineOf);
  if (chaos && check.violations.length > 0) timelines.push('', `chaos actions: ${chaos.log.join('; ')}`);
  if (check.failedUnderFaults.length > 0) {
    timelines.push(
      '',
      'payments reviewed FAILED with nothing debited (the faults kept every execute from the wallet):',
      ...check.failedUnderFaults.slice(0, 15).flatMap(timelineOf),
    );
  }
  return { check, chaos: { counts: chaos?.counts ?? null, actions: chaos?.log ?? [] }, notes, timelines };
}

async function countOpen(
  stack: LocalStack,
  plan: PlannedItem[],
  batchIds: string[] = [],
): Promise<{ fundings: number; payments: number; review: number }> {
  const fundingIds = plan.filter((item) => item.side === 'funding' && item.id).map((item) => item.id!);
  const paymentIds = plan.filter((item) => item.side === 'payment' && item.id).map((item) => item.id!);
  const fundings = await stack.database.funding.findMany({
    where: { OR: [{ id: { in: fundingIds } }, { batchId: { in: batchIds } }] },
    select: { status: true },
  });
  const payments = await stack.database.payment.findMany({
    where: { id: { in: paymentIds } },
    select: { status: true },
  });
  return {
    fundings: fundings.filter((row) => !isFinalFundingStatus(row.status)).length,
    payments: payments.filter((row) => !isFinalPaymentStatus(row.status)).length,
    review: payments.filter((row) => row.status === 'NEEDS_REVIEW').length,
  };
}
