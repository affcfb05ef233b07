// `npm run histories:capture`: runs every path of walletflow's workflows (fundWallet, payWallet,
// onboardEmbeddedSession, reconcileFundings, purgeExpired, deliverWebhooks, fundBatch, settleDay) on a real stack and
// stores each history as Temporal
// JSON in test/replay/histories/, for the replay tests. See docs/changing-workflows.md.
//
//   npm run histories:capture                              # boots everything in this process
//   npm run histories:capture -- --address 127.0.0.1:7233  # on a running Temporal (npm run dev's)
//   npm run histories:capture -- --only cancelled,declined # a subset (path names, or workflow types)
//   npm run histories:capture -- --archive before-<change>  # keep the replaced ones in archive/
// TEMPORAL_ADDRESS / TEMPORAL_NAMESPACE / DATABASE_URL are read too; flags win.
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdir, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { inspect, parseArgs } from 'node:util';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import proto from '@temporalio/proto';
import { DefaultLogger, Runtime, type LogEntry } from '@temporalio/worker';
import { cashInCodeContext } from '../../fundings/funding-record.ts';
import type { SweepReport } from '../../workflows/sweep.contract.ts';
import type { PurgeReport } from '../../workflows/purge-expired.contract.ts';
import type { DeliveryRoundReport } from '../../workflows/deliver-webhooks.contract.ts';
import { webhookEventTypes } from '../../domain/webhook.ts';
import type { OnboardEmbeddedSessionResult } from '../../domain/embedded-session.ts';
import type { FundingResult } from '../../domain/funding.ts';
import type { PaymentResult } from '../../domain/payment.ts';
import { Prisma } from '../../generated/prisma/client.ts';
import { hashBearer, sessionAccessTokenContext, sessionRefreshTokenContext } from '../../links/embedded-sessions.ts';
import {
  archiveDir,
  findSecretLeaks,
  historiesDir,
  historyFile,
  historyNames,
  historyPaths,
  onboardingUserName,
  workflowTypes,
  type HistoryName,
  type WorkflowType,
} from '../support/replay-histories.ts';
import { createEmbeddedLink } from '../support/embedded-link.ts';
import { verifyStandardWebhook } from '../support/standard-webhooks-verifier.ts';
import { startReplayStack, type ReplayStack } from '../support/replay-stack.ts';
import { onboardingWorkflowId } from '../../workflows/onboard-embedded-session.contract.ts';
import {
  fundingStatusQuery,
  fundWalletWorkflowType,
  type FundWalletInput,
  type FundWalletWorkflow,
} from '../../workflows/fund-wallet.contract.ts';
import { paymentStatusQuery } from '../../workflows/pay-wallet.contract.ts';
import { kindKey, recipientTypeKey, statusKey } from '../../workflows/search-attribute-keys.ts';
import { startSweep } from '../../workflows/sweep.contract.ts';
import { manualPurgeWorkflowId, startPurgeExpired } from '../../workflows/purge-expired.contract.ts';
import { startDeliverWebhooks } from '../../workflows/deliver-webhooks.contract.ts';
import { batchWorkflowId, type FundBatchResult } from '../../workflows/fund-batch.contract.ts';
import { fundLaneWorkflowType, laneWorkflowId } from '../../workflows/fund-lane.contract.ts';
import { createFundingRecord } from '../../fundings/funding-record.ts';
import { moneyOf } from '../../domain/money.ts';
import { settlementWorkflowId, type SettleDayResult } from '../../workflows/settle-day.contract.ts';
import { plantApprovedDay } from '../../harness/settlement-day.ts';

interface Secret {
  name: string;
  value: string;
}

/**
 * What a path's workflow returned: a funding, payment or onboarding result, a sweep or a purge report, a delivery
 * round.
 */
type CapturedResult =
  | FundingResult
  | PaymentResult
  | OnboardEmbeddedSessionResult
  | SweepReport
  | PurgeReport
  | DeliveryRoundReport
  | FundBatchResult
  | SettleDayResult
  /** A lane's first run: the fundings it carried, and the input it continued as new with. */
  | { lane: number; carried: number };

interface Captured {
  workflowId: string;
  /** The run to store (a workflow that continues as new: its first run); absent: the latest. */
  runId?: string;
  result: CapturedResult;
  /** Secrets this path handled, which its history must not contain. */
  secrets: Secret[];
  check?: (history: HistoryJson) => Promise<void> | void;
}

interface HistoryJson {
  events: Array<Record<string, unknown> & { eventType: string }>;
}

const { values: args } = parseArgs({
  options: {
    address: { type: 'string' },
    namespace: { type: 'string' },
    only: { type: 'string' },
    archive: { type: 'string' },
    help: { type: 'boolean', short: 'h' },
  },
});
if (args.help) {
  process.stdout.write(
    'usage: npm run histories:capture [-- --address HOST:PORT] [--namespace NAME] [--only name,name] [--archive LABEL]\n',
  );
  process.exit(0);
}
// --only takes path names and workflow types (all of that workflow's paths), in the order given.
const selected = [
  ...new Set(
    (args.only?.split(',').map((name) => name.trim()) ?? [...historyNames]).flatMap((name): string[] =>
      workflowTypes.includes(name as WorkflowType) ? [...historyPaths[name as WorkflowType]] : [name],
    ),
  ),
] as HistoryName[];
for (const name of selected) {
  if (!historyNames.includes(name))
    throw new Error(
      `unknown path ${name}; known: ${historyNames.join(', ')} (or a workflow type: ${workflowTypes.join(', ')})`,
    );
}
const archiveTo = args.archive === undefined ? undefined : path.join(archiveDir, args.archive);
if (archiveTo !== undefined && (!/^[\w.-]+$/.test(args.archive ?? '') || existsSync(archiveTo))) {
  throw new Error(`--archive needs a new label of letters, digits, . _ -: ${archiveTo} exists or the label is not one`);
}

const step = (line: string) => process.stdout.write(`• ${line}\n`);
const fail = (message: string): never => {
  throw new Error(message);
};

// Core's INFO lines (worker started, polling) drown the steps; warnings still show. An activity
// failing for a wallet fault a path injected on purpose (onboarding-profile-unavailable retries six
// times) gets one line instead of a stack trace. No shutdown signals for the runtime: the handler
// in main() stops the worker, then what it depends on.
const workerLog = (entry: LogEntry) => {
  const meta = entry.meta as
    { activityType?: string; attempt?: number; error?: { type?: string; message?: string } } | undefined;
  const at = new Date(Number(entry.timestampNanos / 1_000_000n)).toISOString();
  if (entry.message === 'Activity failed' && meta?.error?.type === 'WalletTransient') {
    process.stderr.write(
      `  ${at} ${meta.activityType ?? 'activity'} attempt ${meta.attempt ?? '?'} failed: ${meta.error.message ?? ''}\n`,
    );
    return;
  }
  process.stderr.write(`${at} [${entry.level}] ${entry.message}${meta === undefined ? '' : ` ${inspect(meta)}`}\n`);
};
Runtime.install({ logger: new DefaultLogger('WARN', workerLog), shutdownSignals: [] });

/** Activities and local activities (a marker whose details name the activity type), in order. */
const activityTypes = (history: HistoryJson) =>
  history.events.flatMap((event) => {
    const attributes = event.activityTaskScheduledEventAttributes as { activityType?: { name?: string } } | undefined;
    if (attributes?.activityType?.name) return [attributes.activityType.name];
    const marker = event.markerRecordedEventAttributes as
      { markerName?: string; details?: { data?: { payloads?: Array<{ data?: string }> } } } | undefined;
    if (marker?.markerName !== 'core_local_activity') return [];
    const data = marker.details?.data?.payloads?.[0]?.data;
    const type = data ? /"activity_type":"([^"]+)"/.exec(Buffer.from(data, 'base64').toString('utf8'))?.[1] : undefined;
    return type ? [type] : [];
  });
const expectActivities = (history: HistoryJson, must: string[], mustNot: string[] = []) => {
  const types = activityTypes(history);
  for (const type of must)
    if (!types.includes(type)) fail(`expected activity ${type}, history has ${types.join(', ')}`);
  for (const type of mustNot)
    if (types.includes(type)) fail(`expected no activity ${type}, history has ${types.join(', ')}`);
};
/** Exactly these activities, in this order. */
const expectActivitySequence = (history: HistoryJson, expected: string[]) => {
  const types = activityTypes(history);
  if (types.join(',') !== expected.join(','))
    fail(`expected ${expected.join(', ')}, the history has ${types.join(', ')}`);
};
const expectOutcome = (
  result: { status: string; errorCode: string | null },
  status: string,
  errorCode: string | null,
) => {
  if (result.status !== status || result.errorCode !== errorCode) {
    fail(
      `expected ${status}/${errorCode ?? 'no code'}, the workflow returned ${result.status}/${result.errorCode ?? 'no code'}`,
    );
  }
};

async function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>(
        (_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: no result within ${ms} ms`)), ms)),
      ),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

let interrupted = false;

/** Paths whose durable timers take longer than the usual 90 s, with their own limit. */
const slowPaths: Partial<Record<HistoryName, number>> = {
  // 12 refused retrieves, polled 1, 2, 4 … 60 s apart: about 7 minutes.
  'retrieve-refused-review-resolved': 600_000,
  // One delivery round that outlasts the first retry (30 s by default), and the next run's round.
  'webhooks-retried': 180_000,
  // Four reads, the last ones each waiting 20 s for work that does not come.
  'lane-carried': 150_000,
};

async function main() {
  const starting = startReplayStack({
    temporalAddress: args.address ?? process.env.TEMPORAL_ADDRESS,
    namespace: args.namespace ?? process.env.TEMPORAL_NAMESPACE ?? 'default',
    databaseUrl: process.env.DATABASE_URL,
    log: step,
  });
  // Ctrl-C also reaches PostgreSQL and Temporal (same process group): a start cut short fails and
  // undoes itself; a started stack is closed here. Repeats are ignored: tsx relays the signal a
  // second time when this process is slow to acknowledge it, and that must not skip the cleanup.
  const onSignal = () => {
    if (interrupted) return;
    interrupted = true;
    process.stderr.write('\ninterrupted: cleaning up\n');
    void starting
      .then(
        (stack) => stack.close(),
        () => undefined,
      )
      .finally(() => process.exit(130));
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  const stack = await starting;
  if (interrupted) return;
  try {
    await stack.startWorker();
    step(`worker on task queue ${stack.taskQueue}`);
    const baseSecrets: Secret[] = [
      { name: 'the transfer API key', value: stack.sandbox.partner.transferApiKey },
      { name: 'the client secret', value: stack.sandbox.partner.clientSecret },
      { name: 'the ops API key', value: stack.opsKey },
    ];
    const outputs = new Map<HistoryName, string>();
    for (const name of selected) {
      if (interrupted) return;
      const { captured, json, events } = await withTimeout(
        captureHistory(stack, name, baseSecrets),
        slowPaths[name] ?? 90_000,
        name,
      ).catch((error: Error) => {
        throw new Error(`${name}: ${error.message}`, { cause: error });
      });
      outputs.set(name, `${json}\n`);
      step(`${name}: ${describeResult(captured.result)}, ${events} events`);
    }
    // Written only once every path succeeded: a failed run leaves the stored histories as they were.
    if (interrupted) return;
    await mkdir(historiesDir, { recursive: true });
    if (archiveTo) {
      // Workflows started on the old code may still be running: their histories keep replaying.
      await mkdir(archiveTo, { recursive: true });
      for (const name of outputs.keys())
        if (existsSync(historyFile(name))) await rename(historyFile(name), path.join(archiveTo, `${name}.json`));
      step(`kept the replaced histories in ${path.relative(process.cwd(), archiveTo)}`);
    }
    for (const [name, json] of outputs) await writeFile(historyFile(name), json);
    step(`wrote ${outputs.size} histories to ${historiesDir}`);
  } finally {
    if (!interrupted) await stack.close();
  }
}

function describeResult(result: CapturedResult): string {
  if ('rateLimited' in result)
    return `settled ${result.checked}: ${result.matched} matched, ${result.missing} missing, ${result.mismatched} mismatched`;
  if ('checked' in result) return `checked ${result.checked}, repaired ${result.repaired}`;
  if ('deleted' in result)
    return `deleted ${Object.entries(result.deleted)
      .map(([table, count]) => `${count} ${table}`)
      .join(', ')}`;
  if ('claimed' in result)
    return `claimed ${result.claimed}, succeeded ${result.succeeded}, retrying ${result.retrying}`;
  if ('state' in result) return `batch ${result.state}`;
  if ('lane' in result) return `lane ${result.lane} carried ${result.carried}, continued as new`;
  return `${result.status}${result.errorCode ? `/${result.errorCode}` : ''}`;
}

/** Runs one path and returns its history as JSON, checked: the path it took, no secret in it. */
async function captureHistory(stack: ReplayStack, name: HistoryName, baseSecrets: Secret[]) {
  const captured = await capture(stack, name);
  // historyToJSON writes the Temporal CLI/UI export format, which historyFromJSON (and so
  // Worker.runReplayHistories) reads back.
  const json = historyToJSON(
    captured.runId === undefined
      ? await stack.fetchHistory(captured.workflowId)
      : await stack.temporal.workflow.getHandle(captured.workflowId, captured.runId).fetchHistory(),
  );
  const parsed = JSON.parse(json) as HistoryJson;
  await captured.check?.(parsed);
  const leaks = findSecretLeaks(parsed, [...baseSecrets, ...captured.secrets]);
  if (leaks.length > 0) fail(`the history contains ${leaks.join('; ')}: nothing written`);
  return { captured, json, events: parsed.events.length };
}

/**
 * A past day of `count` approved fundings (planted: harness/settlement-day.ts), settled through
 * the ops API: its first GET starts the run. The run's workflow id.
 */
async function settleDayOf(stack: ReplayStack, count: number): Promise<{ workflowId: string }> {
  const day = new Date(
    Date.UTC(2001 + Math.floor(Math.random() * 20), Math.floor(Math.random() * 12), 1 + Math.floor(Math.random() * 28)),
  )
    .toISOString()
    .slice(0, 10);
  await plantApprovedDay(
    { databaseUrl: stack.databaseUrl, admin: stack.admin },
    { date: day, timeZone: 'Asia/Manila', count },
  );
  const response = await stack.opsFetch(`/ops/settlements/${day}`);
  const answer = (await response.json()) as { runId?: string };
  if (![200, 202].includes(response.status) || !answer.runId)
    fail(`GET /ops/settlements/${day}: ${response.status} ${JSON.stringify(answer)}`);
  return { workflowId: settlementWorkflowId(day, answer.runId as string) };
}

async function postFunding(stack: ReplayStack, body: unknown): Promise<{ fundingId: string; workflowId: string }> {
  const response = await stack.opsFetch('/ops/fundings', {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'idempotency-key': `capture-${randomUUID()}` },
    body: JSON.stringify(body),
  });
  const answer = (await response.json()) as { fundingId?: string };
  if (response.status !== 202 || !answer.fundingId)
    fail(`POST /ops/fundings: ${response.status} ${JSON.stringify(answer)}`);
  const fundingId = answer.fundingId as string;
  const { workflowId } = await stack.database.funding.findUniqueOrThrow({
    where: { id: fundingId },
    select: { workflowId: true },
  });
  return { fundingId, workflowId };
}

async function result(stack: ReplayStack, workflowId: string): Promise<FundingResult> {
  return (await stack.result(workflowId)) as FundingResult;
}

const amount = (value: string) => ({ currency: 'PHP' as const, value });

/** A sandbox user and a fresh cash-in code; the code is a secret of the path. */
async function codeFor(stack: ReplayStack, user: { kycLevel: 'KYC0' | 'KYC1'; blocked?: boolean }) {
  const created = await stack.admin.createUser({ balance: '100.00', ...user });
  const { code } = await stack.admin.cashInCode(created.userId);
  return { code, secrets: [{ name: 'the cash-in code', value: code }] };
}

async function fundByCode(stack: ReplayStack, user: { kycLevel: 'KYC0' | 'KYC1'; blocked?: boolean }, value: string) {
  const { code, secrets } = await codeFor(stack, user);
  const { workflowId } = await postFunding(stack, { recipient: { type: 'CODE', code }, amount: amount(value) });
  return { workflowId, result: await result(stack, workflowId), secrets };
}

/**
 * A sandbox user with an EMBEDDED link holding freshly issued tokens, made the way
 * the tests make one (test/support/embedded-link.ts): no onboarding workflow runs.
 */
async function embeddedLink(stack: ReplayStack, balance: string, options: { expired?: boolean } = {}) {
  return createEmbeddedLink(stack, { kycLevel: 'KYC1', balance }, options);
}

/** The tokens a link was issued and holds now (a refresh may have replaced them): secrets of the path. */
async function linkSecrets(
  stack: ReplayStack,
  linkId: string,
  issued: { accessToken: string; refreshToken: string },
): Promise<Secret[]> {
  const current = await stack.tokens.read(stack.database, linkId);
  return [
    { name: 'the issued access token', value: issued.accessToken },
    { name: 'the issued refresh token', value: issued.refreshToken },
    ...(current
      ? [
          { name: 'the link’s access token', value: current.accessToken },
          { name: 'the link’s refresh token', value: current.refreshToken },
        ]
      : []),
  ];
}

async function postPayment(
  stack: ReplayStack,
  linkId: string,
  value: string,
): Promise<{ id: string; workflowId: string }> {
  const response = await stack.opsFetch('/ops/payments', {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'idempotency-key': `capture-${randomUUID()}` },
    body: JSON.stringify({ linkId, amount: amount(value) }),
  });
  const answer = (await response.json()) as { id?: string };
  if (response.status !== 202 || !answer.id) fail(`POST /ops/payments: ${response.status} ${JSON.stringify(answer)}`);
  const id = answer.id as string;
  const { workflowId } = await stack.database.payment.findUniqueOrThrow({
    where: { id },
    select: { workflowId: true },
  });
  return { id, workflowId };
}

async function until(what: string, done: () => Promise<boolean>, timeoutMs = 60_000, everyMs = 100): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await done())) {
    if (interrupted) fail('interrupted');
    if (Date.now() > deadline) fail(`${what}: not within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}

/**
 * Waits until the payWallet workflow itself is in NEEDS_REVIEW: its `status` query, which is what
 * the resolve update's validator reads. The database row says NEEDS_REVIEW a moment earlier (the
 * parkForReview activity writes it before the workflow has seen the activity complete).
 */
async function untilInReview(stack: ReplayStack, workflowId: string): Promise<void> {
  const handle = stack.temporal.workflow.getHandle(workflowId);
  await until(`${workflowId} in NEEDS_REVIEW`, async () => (await handle.query(paymentStatusQuery)) === 'NEEDS_REVIEW');
}

/** Resolves a payment in review through the ops API, which runs the workflow's `resolve` update. */
async function resolvePayment(
  stack: ReplayStack,
  id: string,
  outcome: 'SUCCEEDED' | 'FAILED',
  note: string,
): Promise<void> {
  const response = await stack.opsFetch(`/ops/payments/${id}/resolve`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-ops-actor': 'histories-capture' },
    body: JSON.stringify({ outcome, note }),
  });
  if (response.status !== 200) fail(`resolve: ${response.status} ${await response.text()}`);
}

async function reviewOf(stack: ReplayStack, id: string) {
  const payment = await stack.database.payment.findUniqueOrThrow({
    where: { id },
    select: { reviewReason: true, reviewEvidence: true },
  });
  return {
    reason: payment.reviewReason ?? '',
    codes: ((payment.reviewEvidence ?? []) as Array<{ code: string }>).map((attempt) => attempt.code),
  };
}

const count = (history: HistoryJson, activityType: string) =>
  activityTypes(history).filter((type) => type === activityType).length;
const hasEvent = (history: HistoryJson, eventType: string) =>
  history.events.some((event) => event.eventType === eventType);

/** The review paths' history: the execute attempts, a parked review, and the resolve update that ended it. */
const expectReviewResolved = (history: HistoryJson, executes: number) => {
  expectActivities(history, ['createPayment', 'executePayment', 'parkForReview', 'resolvePayment'], ['finishPayment']);
  if (count(history, 'executePayment') !== executes)
    fail(`expected ${executes} execute attempts, the history has ${count(history, 'executePayment')}`);
  if (
    !hasEvent(history, 'EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED') ||
    !hasEvent(history, 'EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED')
  ) {
    fail('expected the resolve update (accepted and completed) in the history');
  }
};

/** Wallet calls of one operation answered with `httpStatus` since `since`, as the worker's call log recorded them. */
const walletCalls = (stack: ReplayStack, operation: string, httpStatus: number, since: Date) =>
  stack.database.walletCall.count({ where: { operation, httpStatus, startedAt: { gte: since } } });

/**
 * Waits until the fundWallet workflow itself is in NEEDS_REVIEW (its `status` query, which the resolve update's
 * validator reads).
 */
async function untilFundingInReview(stack: ReplayStack, workflowId: string): Promise<void> {
  const handle = stack.temporal.workflow.getHandle(workflowId);
  await until(
    `${workflowId} in NEEDS_REVIEW`,
    async () => (await handle.query(fundingStatusQuery)) === 'NEEDS_REVIEW',
    60_000,
    200,
  );
}

/**
 * A funding whose four executes were each answered 504 while the wallet queued them
 * (`late-effect`, processed `delayMs` later): every retrieve shows CREATED, so after the fourth
 * the funding goes to NEEDS_REVIEW; then the queued execute lands and the wallet shows APPROVED.
 */
async function fundingInReviewThenLanded(stack: ReplayStack) {
  const user = await stack.admin.createUser({ kycLevel: 'KYC1', balance: '0.00' });
  const { code } = await stack.admin.cashInCode(user.userId);
  // Review comes after 4 executes and the polls between them (1 + 2 + 4 + 8 s): the effect lands well after.
  await stack.admin.setFaults([{ endpoint: 'transfers.execute', mode: 'late-effect', rate: 1, delayMs: 35_000 }]);
  let posted: { fundingId: string; workflowId: string };
  try {
    posted = await postFunding(stack, { recipient: { type: 'CODE', code }, amount: amount('6.00') });
    await untilFundingInReview(stack, posted.workflowId);
  } finally {
    await stack.admin.clearFaults();
  }
  const { transferId } = await stack.database.funding.findUniqueOrThrow({
    where: { id: posted.fundingId },
    select: { transferId: true },
  });
  await until(
    'the queued execute landing at the wallet',
    async () =>
      (await stack.admin.ledger()).transfers.some(
        (transfer) => transfer.transferId === transferId && transfer.status === 'APPROVED',
      ),
    60_000,
    250,
  );
  return { ...posted, transferId, secrets: [{ name: 'the cash-in code', value: code }] };
}

/** The checks of both review paths: four executes, retrieves, the review and the resolve update that ended it. */
const expectFundingReviewResolved = (history: HistoryJson) => {
  expectActivities(history, [
    'fundInOnePass',
    'executeTransfer',
    'retrieveTransfer',
    'markReconciling',
    'parkFundingForReview',
    'resolveFunding',
  ]);
  // The first execute is the one pass's, the other three are execute activities.
  if (count(history, 'executeTransfer') !== 3)
    fail(`expected 3 execute activities after the one pass's, the history has ${count(history, 'executeTransfer')}`);
  if (!hasEvent(history, 'EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED'))
    fail('expected the resolve update in the history');
};

/** Whether a worker has started the workflow's pending activity of this type (it is in flight). */
async function activityRunning(stack: ReplayStack, workflowId: string, activityType: string): Promise<boolean> {
  const { raw } = await stack.temporal.workflow.getHandle(workflowId).describe();
  return (raw.pendingActivities ?? []).some(
    (activity) =>
      activity.activityType?.name === activityType &&
      activity.state === proto.temporal.api.enums.v1.PendingActivityState.PENDING_ACTIVITY_STATE_STARTED,
  );
}

async function runSweep(stack: ReplayStack, olderThanSeconds: number): Promise<SweepReport> {
  const workflowId = `capture-reconcile-${randomUUID()}`;
  await startSweep(stack.temporal, { taskQueue: stack.taskQueue, workflowId, input: { olderThanSeconds } });
  return (await stack.result(workflowId)) as SweepReport;
}

/**
 * Opens the partner's tile for a new sandbox user (the sandbox calls the session URL, which starts
 * onboardEmbeddedSession) and waits for the onboarding result. The worker is stopped while the
 * session URL answers, so the tokens it stored can be read (they are secrets of the path) before
 * onboarding moves them to the link; `beforeOnboarding` runs then too (faults, the sandbox clock).
 */
async function onboard(
  stack: ReplayStack,
  beforeOnboarding: (row: { accessTokenExpiresAt: Date }) => Promise<unknown> = async () => {},
) {
  const user = await stack.admin.createUser({ kycLevel: 'KYC1', balance: '0.00', ...onboardingUserName });
  await stack.stopWorker();
  let sessionId: string;
  let row;
  try {
    sessionId = (await stack.admin.launch(user.userId)).sessionId;
    row = await stack.database.embeddedSession.findUniqueOrThrow({ where: { sessionIdHash: hashBearer(sessionId) } });
    if (row.status !== 'PENDING' || !row.accessTokenEncrypted || !row.refreshTokenEncrypted)
      fail(`the session row is ${row.status}, without its tokens`);
    await beforeOnboarding(row);
  } finally {
    await stack.startWorker();
  }
  const workflowId = onboardingWorkflowId(row.id);
  const outcome = (await stack.result(workflowId)) as OnboardEmbeddedSessionResult;
  const secrets: Secret[] = [
    { name: 'the session id', value: sessionId },
    {
      name: 'the delivered access token',
      value: stack.cipher.decrypt(row.accessTokenEncrypted!, sessionAccessTokenContext(row.id)),
    },
    {
      name: 'the delivered refresh token',
      value: stack.cipher.decrypt(row.refreshTokenEncrypted!, sessionRefreshTokenContext(row.id)),
    },
    { name: 'the user’s first name', value: onboardingUserName.firstName },
    { name: 'the user’s last name', value: onboardingUserName.lastName },
    { name: 'the user’s mobile number', value: user.mobile },
  ];
  return { user, workflowId, outcome, secrets };
}

/**
 * A funding stuck an hour ago in EXECUTING whose workflow never ran (its id was never started):
 * what the reconciliation sweep repairs from the wallet's own record of the transfer.
 */
async function stuckFunding(stack: ReplayStack, options: { executed: boolean }) {
  const user = await stack.admin.createUser({ kycLevel: 'KYC1', balance: '0.00' });
  const { code } = await stack.admin.cashInCode(user.userId);
  const transfer = await stack.wallet.createTransfer({
    recipient: { type: 'CODE', value: code },
    amount: amount('12.00'),
  });
  if (options.executed) await stack.wallet.executeTransfer(transfer.data.transferId);
  const id = randomUUID();
  await stack.database.funding.create({
    data: {
      id,
      idempotencyKey: `capture-stuck-${id}`,
      requestFingerprint: '0'.repeat(64),
      workflowId: `funding-capture-stuck-${id}`,
      status: 'EXECUTING',
      recipientType: 'CODE',
      cashInCodeEncrypted: stack.cipher.encrypt(code, cashInCodeContext(id)),
      cashInCodeMasked: `*****${code.slice(-2)}`,
      currency: 'PHP',
      amount: new Prisma.Decimal('12.00'),
      transferId: transfer.data.transferId,
      createdAt: new Date(Date.now() - 3_600_000),
      ownerSeenAt: new Date(Date.now() - 3_600_000),
    },
  });
  return { fundingId: id, secrets: [{ name: 'a stuck funding’s cash-in code', value: code }] };
}

/**
 * A funding posted through the API while no worker runs, then put where another run of it left it
 * (`CREATING` with a transfer it created and stored, or `EXECUTING` after it executed it), before
 * the worker starts: its workflow takes it over.
 */
async function takenOverFunding(stack: ReplayStack, status: 'CREATING' | 'EXECUTING', value: string) {
  await stack.stopWorker();
  try {
    const { code, secrets } = await codeFor(stack, { kycLevel: 'KYC1' });
    const posted = await postFunding(stack, { recipient: { type: 'CODE', code }, amount: amount(value) });
    const transfer = await stack.wallet.createTransfer({
      recipient: { type: 'CODE', value: code },
      amount: amount(value),
    });
    const { transferId } = transfer.data;
    if (status === 'EXECUTING') await stack.wallet.executeTransfer(transferId);
    await stack.database.funding.update({ where: { id: posted.fundingId }, data: { status, transferId } });
    return { ...posted, transferId, secrets };
  } finally {
    await stack.startWorker();
  }
}

/** How many times the wallet executed a transfer. */
async function executionsOf(stack: ReplayStack, transferId: string): Promise<number | undefined> {
  return (await stack.admin.ledger()).transfers.find((transfer) => transfer.transferId === transferId)?.executions;
}

/**
 * A partner endpoint for every event on a local receiver that answers with `statuses` in turn (the
 * last one from then on) and verifies each signature; `close` deletes the endpoint and stops.
 */
async function webhookReceiver(stack: ReplayStack, statuses: number[]) {
  const received: Array<{ id: string; verified: boolean; status: number }> = [];
  let secret = '';
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const headers = {
        id: req.headers['webhook-id'] as string | undefined,
        timestamp: req.headers['webhook-timestamp'] as string | undefined,
        signature: req.headers['webhook-signature'] as string | undefined,
      };
      const status = statuses[Math.min(received.length, statuses.length - 1)] ?? 204;
      received.push({
        id: headers.id ?? '',
        verified: verifyStandardWebhook(secret, headers, Buffer.concat(chunks).toString('utf8')),
        status,
      });
      res.statusCode = status;
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const response = await stack.opsFetch('/ops/webhooks/endpoints', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`,
      events: webhookEventTypes,
    }),
  });
  const endpoint = (await response.json()) as { id?: string; secret?: string };
  if (response.status !== 201 || !endpoint.id || !endpoint.secret)
    fail(`POST /ops/webhooks/endpoints: ${response.status}`);
  secret = endpoint.secret as string;
  return {
    received,
    secrets: [{ name: 'the webhook secret', value: secret }],
    close: async () => {
      await stack.opsFetch(`/ops/webhooks/endpoints/${endpoint.id as string}`, { method: 'DELETE' });
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/**
 * One deliverWebhooks run of a single delivery round of `roundMs` after a CODE funding's event was
 * written for an endpoint answering `statuses`: the run continues as new, which is stored; the
 * next run is terminated.
 */
async function deliveryRound(stack: ReplayStack, statuses: number[], roundMs: number) {
  const receiver = await webhookReceiver(stack, statuses);
  try {
    const funded = await fundByCode(stack, { kycLevel: 'KYC1' }, '20.00');
    expectOutcome(funded.result, 'APPROVED', null);
    const workflowId = `capture-webhooks-${randomUUID()}`;
    const handle = await startDeliverWebhooks(stack.temporal, {
      taskQueue: stack.taskQueue,
      workflowId,
      input: { pollIntervalMs: 100, roundMs, roundsPerRun: 1 },
    });
    // Its first run (a round lasts roundMs: it has not continued yet).
    const { runId } = await handle.describe();
    const run = stack.temporal.workflow.getHandle(workflowId, runId);
    await until(
      'the delivery round to end',
      async () => (await run.describe()).status.name !== 'RUNNING',
      roundMs + 60_000,
      250,
    );
    const status = (await run.describe()).status.name;
    await stack.temporal.workflow
      .getHandle(workflowId)
      .terminate('captured: one round is enough')
      .catch(() => undefined);
    // The next run's round may have begun: it learns of the termination only at a heartbeat, so it
    // is let finish before anything else (it would claim the next path's deliveries).
    await new Promise((resolve) => setTimeout(resolve, roundMs + 1000));
    if (status !== 'CONTINUED_AS_NEW') fail(`expected the run to continue as new, it ended ${status}`);
    const completed = (await run.fetchHistory()).events?.find(
      (event) => event.activityTaskCompletedEventAttributes,
    )?.activityTaskCompletedEventAttributes;
    const data = completed?.result?.payloads?.[0]?.data;
    const report = (data ? JSON.parse(Buffer.from(data).toString('utf8')) : {}) as DeliveryRoundReport;
    if (!receiver.received.every((each) => each.verified)) fail('a delivery did not verify under the endpoint secret');
    return {
      workflowId,
      runId,
      report,
      received: receiver.received,
      secrets: [...funded.secrets, ...receiver.secrets],
    };
  } finally {
    await receiver.close();
  }
}

async function capture(stack: ReplayStack, name: HistoryName): Promise<Captured> {
  switch (name) {
    case 'code-approved': {
      const captured = await fundByCode(stack, { kycLevel: 'KYC1' }, '100.50');
      expectOutcome(captured.result, 'APPROVED', null);
      return {
        ...captured,
        check: (history) => {
          expectActivities(
            history,
            ['fundInOnePass'],
            ['loadFunding', 'createTransfer', 'executeTransfer', 'retrieveTransfer', 'markReconciling'],
          );
          // One workflow task, no activity task: the whole funding in one local activity (a task
          // failed and retried would have run it twice: that path is cancelled-during-create).
          if (hasEvent(history, 'EVENT_TYPE_ACTIVITY_TASK_SCHEDULED')) fail('expected no activity task');
          const tasks = history.events.filter(
            (event) => event.eventType === 'EVENT_TYPE_WORKFLOW_TASK_COMPLETED',
          ).length;
          if (tasks !== 1) fail(`expected one workflow task, the history has ${tasks}`);
        },
      };
    }
    case 'token-approved-with-refresh': {
      // walletflow believes the access token expired: the vault refreshes it inside createTransfer.
      const { user, issued, linkId } = await embeddedLink(stack, '0.00', { expired: true });
      const { workflowId } = await postFunding(stack, {
        recipient: { type: 'TOKEN', linkId },
        amount: amount('10.00'),
      });
      const outcome = await result(stack, workflowId);
      expectOutcome(outcome, 'APPROVED', null);
      const refreshes = (await stack.admin.ledger()).refreshes.filter((refresh) => refresh.userId === user.userId);
      if (refreshes.length !== 1) fail(`expected one token refresh, the sandbox saw ${refreshes.length}`);
      const current = await stack.tokens.read(stack.database, linkId);
      if (!current || current.accessToken === issued.accessToken)
        fail('the link kept its old access token: no refresh happened');
      return {
        workflowId,
        result: outcome,
        secrets: [
          { name: 'the issued access token', value: issued.accessToken },
          { name: 'the issued refresh token', value: issued.refreshToken },
          { name: 'the refreshed access token', value: current!.accessToken },
          { name: 'the refreshed refresh token', value: current!.refreshToken },
        ],
      };
    }
    case 'm133-rejected': {
      const captured = await fundByCode(stack, { kycLevel: 'KYC0' }, '5.00');
      expectOutcome(captured.result, 'REJECTED', 'M133');
      return {
        ...captured,
        check: (history) =>
          expectActivities(history, ['fundInOnePass'], ['createTransfer', 'beginExecute', 'executeTransfer']),
      };
    }
    case 'declined': {
      const captured = await fundByCode(stack, { kycLevel: 'KYC1', blocked: true }, '5.00');
      expectOutcome(captured.result, 'DECLINED', '6002');
      return {
        ...captured,
        check: (history) => expectActivities(history, ['fundInOnePass'], ['executeTransfer', 'retrieveTransfer']),
      };
    }
    case 'execute-unknown-reconciled': {
      await stack.admin.setFaults([{ endpoint: 'transfers.execute', mode: 'error-after-effect', rate: 1 }]);
      try {
        const captured = await fundByCode(stack, { kycLevel: 'KYC1' }, '7.00');
        expectOutcome(captured.result, 'APPROVED', null);
        return {
          ...captured,
          check: (history) =>
            expectActivities(history, ['fundInOnePass', 'markReconciling', 'retrieveTransfer'], ['executeTransfer']),
        };
      } finally {
        await stack.admin.clearFaults();
      }
    }
    case 'processing-polled': {
      await stack.admin.settings({ processingDelayMs: 1500 });
      try {
        const captured = await fundByCode(stack, { kycLevel: 'KYC1' }, '3.00');
        expectOutcome(captured.result, 'APPROVED', null);
        return {
          ...captured,
          check: (history) => {
            expectActivities(history, ['fundInOnePass', 'retrieveTransfer'], ['markReconciling', 'executeTransfer']);
            if (!history.events.some((event) => event.eventType === 'EVENT_TYPE_TIMER_STARTED'))
              fail('expected a durable timer between polls');
          },
        };
      } finally {
        await stack.admin.settings({ processingDelayMs: 0 });
      }
    }
    case 'cancelled': {
      // No worker: the workflow waits on its task queue while ops cancels the funding.
      await stack.stopWorker();
      let captured: { workflowId: string; secrets: Secret[] };
      try {
        const { code, secrets } = await codeFor(stack, { kycLevel: 'KYC1' });
        const posted = await postFunding(stack, { recipient: { type: 'CODE', code }, amount: amount('4.00') });
        const cancelled = await stack.opsFetch(`/ops/fundings/${posted.fundingId}/cancel`, { method: 'POST' });
        if (cancelled.status !== 200) fail(`cancel: ${cancelled.status} ${await cancelled.text()}`);
        captured = { workflowId: posted.workflowId, secrets };
      } finally {
        await stack.startWorker();
      }
      const outcome = await result(stack, captured.workflowId);
      expectOutcome(outcome, 'FAILED', 'CANCELLED');
      // The one pass finds the funding past PENDING and hands over: the steps read it and finish.
      return {
        ...captured,
        result: outcome,
        check: (history) =>
          expectActivities(
            history,
            ['fundInOnePass', 'loadFunding', 'finishFunding'],
            ['markCreating', 'createTransfer'],
          ),
      };
    }

    case 'continued-reconcile-approved': {
      // A run continued as new after POLLS_PER_RUN (200) polls: its input carries `reconcile`.
      // The run before it cannot be captured here: 200 durable timers of up to 60 s are over three
      // hours of real time on the dev server. This run is started with the input continue-as-new
      // gives it (the transfer, 200 polls, one execute, its evidence), over a funding that has been
      // RECONCILING since an execute's answer was lost; the wallet shows the transfer APPROVED now.
      const user = await stack.admin.createUser({ kycLevel: 'KYC1', balance: '0.00' });
      const { code } = await stack.admin.cashInCode(user.userId);
      const transfer = await stack.wallet.createTransfer({
        recipient: { type: 'CODE', value: code },
        amount: amount('9.00'),
      });
      const executed = await stack.wallet.executeTransfer(transfer.data.transferId);
      const fundingId = randomUUID();
      const workflowId = `funding-capture-continued-${fundingId}`;
      await stack.database.funding.create({
        data: {
          id: fundingId,
          idempotencyKey: `capture-continued-${fundingId}`,
          requestFingerprint: '0'.repeat(64),
          workflowId,
          status: 'RECONCILING',
          recipientType: 'CODE',
          cashInCodeEncrypted: stack.cipher.encrypt(code, cashInCodeContext(fundingId)),
          cashInCodeMasked: `*****${code.slice(-2)}`,
          currency: 'PHP',
          amount: new Prisma.Decimal('9.00'),
          transferId: transfer.data.transferId,
          createdAt: new Date(Date.now() - 4 * 3_600_000),
          ownerSeenAt: new Date(Date.now() - 4 * 3_600_000),
        },
      });
      const input: FundWalletInput = {
        fundingId,
        reconcile: {
          transferId: transfer.data.transferId,
          polls: 200,
          executeAttempts: 1,
          evidence: [
            {
              at: new Date(Date.now() - 4 * 3_600_000).toISOString(),
              operation: 'transfers.execute',
              requestReferenceNo: executed.requestReferenceNo,
              httpStatus: 502,
              code: 'HTTP_5XX',
              outcome: 'unknown',
            },
          ],
        },
      };
      await stack.temporal.workflow.start<FundWalletWorkflow>(fundWalletWorkflowType, {
        taskQueue: stack.taskQueue,
        workflowId,
        args: [input],
        searchAttributes: {
          [statusKey.name]: ['RECONCILING'],
          [kindKey.name]: ['FUNDING'],
          [recipientTypeKey.name]: ['CODE'],
        },
      });
      // Its first poll waits pollDelayMs(200) = 60 s.
      const outcome = await result(stack, workflowId);
      expectOutcome(outcome, 'APPROVED', null);
      return {
        workflowId,
        result: outcome,
        secrets: [{ name: 'the cash-in code', value: code }],
        check: (history) => {
          expectActivities(
            history,
            ['loadFunding', 'retrieveTransfer', 'finishFunding'],
            ['markCreating', 'createTransfer', 'beginExecute', 'executeTransfer', 'markReconciling'],
          );
          if (!hasEvent(history, 'EVENT_TYPE_TIMER_STARTED'))
            fail('expected the durable timer before the first poll of the run');
        },
      };
    }
    case 'execute-not-executed-then-approved': {
      // The first execute is answered 503 before the wallet did anything (the fault is lifted once
      // it was answered): retrieve shows CREATED, so executing again is safe, and it is approved.
      const since = new Date();
      await stack.admin.setFaults([{ endpoint: 'transfers.execute', mode: 'error-before-effect', rate: 1 }]);
      let posted: { fundingId: string; workflowId: string };
      let secrets: Secret[];
      try {
        const fresh = await codeFor(stack, { kycLevel: 'KYC1' });
        secrets = fresh.secrets;
        posted = await postFunding(stack, { recipient: { type: 'CODE', code: fresh.code }, amount: amount('8.00') });
        await until(
          'the first execute answered 503',
          async () => (await walletCalls(stack, 'transfers.execute', 503, since)) >= 1,
          30_000,
          20,
        );
      } finally {
        await stack.admin.clearFaults();
      }
      const outcome = await result(stack, posted.workflowId);
      expectOutcome(outcome, 'APPROVED', null);
      return {
        workflowId: posted.workflowId,
        result: outcome,
        secrets,
        check: (history) => {
          // The one pass sends the first execute; the second is the execute activity's.
          expectActivities(
            history,
            ['fundInOnePass', 'executeTransfer', 'markReconciling', 'retrieveTransfer', 'finishFunding'],
            ['parkFundingForReview'],
          );
          if (count(history, 'executeTransfer') !== 1)
            fail(
              `expected 1 execute activity after the one pass's, the history has ${count(history, 'executeTransfer')}`,
            );
        },
      };
    }
    case 'execute-expired': {
      // The intent expires (the sandbox's transferExpirySeconds, its clock moved past it) while the
      // execute is refused with 429: Temporal retries the activity, the wallet answers
      // TRANSFER_EXPIRED, and the funding fails with nothing moved.
      const since = new Date();
      await stack.admin.settings({ transferExpirySeconds: 2 });
      await stack.admin.setFaults([{ endpoint: 'transfers.execute', mode: 'rate-limited', rate: 1 }]);
      let posted: { fundingId: string; workflowId: string };
      let secrets: Secret[];
      try {
        const fresh = await codeFor(stack, { kycLevel: 'KYC1' });
        secrets = fresh.secrets;
        posted = await postFunding(stack, { recipient: { type: 'CODE', code: fresh.code }, amount: amount('5.50') });
        await until(
          'an execute refused with 429',
          async () => (await walletCalls(stack, 'transfers.execute', 429, since)) >= 1,
          30_000,
          20,
        );
        await stack.admin.advanceClock(5);
      } finally {
        await stack.admin.clearFaults();
      }
      let outcome: FundingResult;
      try {
        outcome = await result(stack, posted.workflowId);
      } finally {
        await stack.admin.settings({ transferExpirySeconds: null });
      }
      expectOutcome(outcome, 'FAILED', 'TRANSFER_EXPIRED');
      return {
        workflowId: posted.workflowId,
        result: outcome,
        secrets,
        check: (history) => {
          // The one pass's execute is refused with 429 (nothing sent): the execute activity sends it, retried by
          // Temporal.
          expectActivities(
            history,
            ['fundInOnePass', 'executeTransfer', 'finishFunding'],
            ['createTransfer', 'beginExecute', 'retrieveTransfer', 'markReconciling'],
          );
          if (count(history, 'executeTransfer') !== 1) fail('expected one execute activity (retried by Temporal)');
        },
      };
    }
    case 'execute-late-review-resolved': {
      const landed = await fundingInReviewThenLanded(stack);
      const response = await stack.opsFetch(`/ops/fundings/${landed.fundingId}/resolve`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-ops-actor': 'histories-capture' },
        body: JSON.stringify({
          outcome: 'APPROVED',
          note: 'the wallet shows the transfer APPROVED: the queued execute landed',
        }),
      });
      if (response.status !== 200) fail(`resolve: ${response.status} ${await response.text()}`);
      const outcome = await result(stack, landed.workflowId);
      expectOutcome(outcome, 'APPROVED', null);
      return {
        workflowId: landed.workflowId,
        result: outcome,
        secrets: landed.secrets,
        check: expectFundingReviewResolved,
      };
    }
    case 'execute-late-review-swept': {
      const landed = await fundingInReviewThenLanded(stack);
      const report = await runSweep(stack, 0);
      const action = report.items.find((item) => item.fundingId === landed.fundingId)?.action;
      if (action !== 'resolved-from-wallet')
        fail(`expected the sweep to resolve it from the wallet, it reported ${JSON.stringify(report.items)}`);
      const outcome = await result(stack, landed.workflowId);
      expectOutcome(outcome, 'APPROVED', null);
      const funding = await stack.database.funding.findUniqueOrThrow({
        where: { id: landed.fundingId },
        select: { resolvedBy: true },
      });
      if (funding.resolvedBy !== 'reconciliation')
        fail(`expected the funding resolved by reconciliation, it was by ${funding.resolvedBy ?? 'nobody'}`);
      return {
        workflowId: landed.workflowId,
        result: outcome,
        secrets: landed.secrets,
        check: expectFundingReviewResolved,
      };
    }
    case 'create-failed': {
      // Every create is refused with 429 (Retry-After: 1 s, which the retry honours instead of the
      // policy's backoff): the 15 attempts run out in about 15 s and nothing was executed.
      await stack.admin.setFaults([{ endpoint: 'transfers.create', mode: 'rate-limited', rate: 1 }]);
      let captured: Awaited<ReturnType<typeof fundByCode>>;
      try {
        captured = await fundByCode(stack, { kycLevel: 'KYC1' }, '4.50');
      } finally {
        await stack.admin.clearFaults();
      }
      expectOutcome(captured.result, 'FAILED', 'CREATE_FAILED');
      return {
        ...captured,
        check: (history) => {
          // The one pass's create is refused (429): after its Retry-After the steps take over.
          expectActivities(
            history,
            ['fundInOnePass', 'markCreating', 'createTransfer', 'finishFunding'],
            ['beginExecute', 'executeTransfer'],
          );
          if (!hasEvent(history, 'EVENT_TYPE_ACTIVITY_TASK_FAILED'))
            fail('expected createTransfer to fail after its retries');
        },
      };
    }
    case 'cancelled-during-create': {
      // The create is slowed (3 s) and ops cancels while it runs (CREATING: nothing can have been
      // executed). The one pass's create comes back to a cancelled funding: the intent is kept
      // on record, never executed, and the funding ends FAILED/CANCELLED with no transfer.
      await stack.admin.setFaults([{ endpoint: 'transfers.create', mode: 'latency', rate: 1, delayMs: 3000 }]);
      let posted: { fundingId: string; workflowId: string };
      let secrets: Secret[];
      try {
        const fresh = await codeFor(stack, { kycLevel: 'KYC1' });
        secrets = fresh.secrets;
        posted = await postFunding(stack, { recipient: { type: 'CODE', code: fresh.code }, amount: amount('3.50') });
        await until(
          'the funding CREATING',
          async () =>
            (
              await stack.database.funding.findUniqueOrThrow({
                where: { id: posted.fundingId },
                select: { status: true },
              })
            ).status === 'CREATING',
          30_000,
          50,
        );
        const cancelled = await stack.opsFetch(`/ops/fundings/${posted.fundingId}/cancel`, { method: 'POST' });
        if (cancelled.status !== 200) fail(`cancel: ${cancelled.status} ${await cancelled.text()}`);
      } finally {
        await stack.admin.clearFaults();
      }
      const outcome = await result(stack, posted.workflowId);
      expectOutcome(outcome, 'FAILED', 'CANCELLED');
      const row = await stack.database.funding.findUniqueOrThrow({
        where: { id: posted.fundingId },
        select: { transferId: true, abandonedTransferIds: true },
      });
      if (row.transferId !== null || row.abandonedTransferIds.length !== 1)
        fail(`expected the created intent kept unexecuted, the funding has ${JSON.stringify(row)}`);
      const kept = (await stack.admin.ledger()).transfers.find(
        (transfer) => transfer.transferId === row.abandonedTransferIds[0],
      );
      if (!kept || kept.executions !== 0)
        fail(`expected the kept intent never executed, the wallet shows ${JSON.stringify(kept)}`);
      return {
        workflowId: posted.workflowId,
        result: outcome,
        secrets,
        check: (history) =>
          expectActivities(history, ['fundInOnePass'], ['createTransfer', 'beginExecute', 'executeTransfer']),
      };
    }

    case 'taken-over-created-transfer': {
      // Another run created the transfer, stored it and stopped before any execute (the funding
      // CREATING with its transfer): this run's one pass hands over, its claim sees a transfer it
      // did not create, moves the funding to EXECUTING and retrieves before any execute; the wallet
      // shows CREATED, so it executes, and the transfer is approved.
      const taken = await takenOverFunding(stack, 'CREATING', '6.50');
      const outcome = await result(stack, taken.workflowId);
      expectOutcome(outcome, 'APPROVED', null);
      if ((await executionsOf(stack, taken.transferId)) !== 1) fail('expected the taken-over transfer executed once');
      return {
        workflowId: taken.workflowId,
        result: outcome,
        secrets: taken.secrets,
        check: (history) =>
          expectActivitySequence(history, [
            'fundInOnePass',
            'loadFunding',
            'beginExecute',
            'markReconciling',
            'retrieveTransfer',
            'executeTransfer',
            'finishFunding',
          ]),
      };
    }
    case 'taken-over-executing-approved': {
      // Another run moved the funding to EXECUTING and executed the transfer, then stopped: an
      // execute may have been sent, so this run retrieves (never executes) and ends APPROVED.
      const taken = await takenOverFunding(stack, 'EXECUTING', '5.25');
      const outcome = await result(stack, taken.workflowId);
      expectOutcome(outcome, 'APPROVED', null);
      if ((await executionsOf(stack, taken.transferId)) !== 1)
        fail('expected the transfer executed once, by the earlier run');
      return {
        workflowId: taken.workflowId,
        result: outcome,
        secrets: taken.secrets,
        check: (history) =>
          expectActivitySequence(history, [
            'fundInOnePass',
            'loadFunding',
            'markReconciling',
            'retrieveTransfer',
            'finishFunding',
          ]),
      };
    }

    case 'retrieve-refused-review-resolved': {
      // The execute's answer is lost (502 after the effect), and every retrieve is then answered
      // 404 by the gateway (a fault rule with status 404: the sandbox's service answers 404 only
      // for a transfer it does not know): no state, so after 12 refused retrieves (about 7 minutes
      // of polling) the funding goes to NEEDS_REVIEW; ops resolves it from the wallet's record.
      await stack.admin.setFaults([
        { endpoint: 'transfers.execute', mode: 'error-after-effect', rate: 1 },
        { endpoint: 'transfers.retrieve', mode: 'error-before-effect', rate: 1, status: 404 },
      ]);
      let posted: { fundingId: string; workflowId: string };
      let secrets: Secret[];
      try {
        const fresh = await codeFor(stack, { kycLevel: 'KYC1' });
        secrets = fresh.secrets;
        posted = await postFunding(stack, { recipient: { type: 'CODE', code: fresh.code }, amount: amount('7.50') });
        const handle = stack.temporal.workflow.getHandle(posted.workflowId);
        await until(
          `${posted.workflowId} in NEEDS_REVIEW`,
          async () => (await handle.query(fundingStatusQuery)) === 'NEEDS_REVIEW',
          560_000,
          1000,
        );
      } finally {
        await stack.admin.clearFaults();
      }
      const response = await stack.opsFetch(`/ops/fundings/${posted.fundingId}/resolve`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-ops-actor': 'histories-capture' },
        body: JSON.stringify({ outcome: 'APPROVED', note: 'the wallet statement shows the transfer APPROVED' }),
      });
      if (response.status !== 200) fail(`resolve: ${response.status} ${await response.text()}`);
      const outcome = await result(stack, posted.workflowId);
      expectOutcome(outcome, 'APPROVED', null);
      return {
        workflowId: posted.workflowId,
        result: outcome,
        secrets,
        check: (history) => {
          expectActivities(
            history,
            ['fundInOnePass', 'markReconciling', 'retrieveTransfer', 'parkFundingForReview', 'resolveFunding'],
            ['executeTransfer'],
          );
          if (count(history, 'retrieveTransfer') !== 12)
            fail(`expected 12 refused retrieves, the history has ${count(history, 'retrieveTransfer')}`);
        },
      };
    }

    // payWallet
    case 'payment-succeeded': {
      const { issued, linkId } = await embeddedLink(stack, '100.00');
      const { workflowId } = await postPayment(stack, linkId, '30.00');
      const outcome = (await stack.result(workflowId)) as PaymentResult;
      expectOutcome(outcome, 'SUCCEEDED', null);
      return {
        workflowId,
        result: outcome,
        secrets: await linkSecrets(stack, linkId, issued),
        check: (history) => {
          expectActivities(
            history,
            [
              'loadPayment',
              'markPaymentCreating',
              'createPayment',
              'beginPaymentExecute',
              'executePayment',
              'finishPayment',
            ],
            ['parkForReview'],
          );
          if (count(history, 'executePayment') !== 1) fail('expected one execute');
        },
      };
    }
    case 'payment-insufficient-balance': {
      const { issued, linkId } = await embeddedLink(stack, '10.00');
      const { workflowId } = await postPayment(stack, linkId, '50.00');
      const outcome = (await stack.result(workflowId)) as PaymentResult;
      expectOutcome(outcome, 'FAILED', 'INSUFFICIENT_BALANCE');
      return {
        workflowId,
        result: outcome,
        secrets: await linkSecrets(stack, linkId, issued),
        check: (history) => {
          expectActivities(history, ['createPayment', 'executePayment', 'finishPayment'], ['parkForReview']);
          if (count(history, 'executePayment') !== 1) fail('expected one execute: INSUFFICIENT_BALANCE is final');
        },
      };
    }
    case 'payment-lost-answer-review-resolved': {
      const { user, issued, linkId } = await embeddedLink(stack, '100.00');
      // The first execute takes effect and its answer is lost; the workflow's second attempt (1 s
      // later) is refused by the gateway (400): a refusal after an unknown attempt may hide the
      // execution, so the payment goes to review, and ops resolves it from the wallet's ledger.
      await stack.admin.setFaults([{ endpoint: 'op.payments.execute', mode: 'error-after-effect', rate: 1 }]);
      let posted: { id: string; workflowId: string };
      try {
        posted = await postPayment(stack, linkId, '20.00');
        await until(
          'the first execute taking effect',
          async () =>
            (await stack.admin.ledger()).payments.some(
              (payment) => payment.userId === user.userId && payment.executions === 1,
            ),
          20_000,
          25,
        );
        await stack.admin.setFaults([
          { endpoint: 'op.payments.execute', mode: 'error-before-effect', rate: 1, status: 400 },
        ]);
        await untilInReview(stack, posted.workflowId);
      } finally {
        await stack.admin.clearFaults();
      }
      const review = await reviewOf(stack, posted.id);
      if (review.codes.join(',') !== 'HTTP_5XX,HTTP_4XX')
        fail(`expected attempts HTTP_5XX, HTTP_4XX; the review holds ${review.codes.join(', ')}`);
      await resolvePayment(stack, posted.id, 'SUCCEEDED', 'the wallet ledger shows the debit');
      const outcome = (await stack.result(posted.workflowId)) as PaymentResult;
      expectOutcome(outcome, 'SUCCEEDED', null);
      return {
        workflowId: posted.workflowId,
        result: outcome,
        secrets: await linkSecrets(stack, linkId, issued),
        check: (history) => expectReviewResolved(history, 2),
      };
    }
    case 'payment-unknown-review-resolved-failed': {
      const { issued, linkId } = await embeddedLink(stack, '100.00');
      await stack.admin.setFaults([{ endpoint: 'op.payments.execute', mode: 'error-before-effect', rate: 1 }]);
      let posted: { id: string; workflowId: string };
      try {
        posted = await postPayment(stack, linkId, '15.00');
        await untilInReview(stack, posted.workflowId);
      } finally {
        await stack.admin.clearFaults();
      }
      const review = await reviewOf(stack, posted.id);
      if (review.codes.length !== 4 || !/stayed unknown/.test(review.reason))
        fail(`expected 4 unknown attempts; the review holds ${review.codes.join(', ')}: ${review.reason}`);
      await resolvePayment(stack, posted.id, 'FAILED', 'no debit in the wallet ledger');
      const outcome = (await stack.result(posted.workflowId)) as PaymentResult;
      expectOutcome(outcome, 'FAILED', 'RESOLVED_FAILED');
      return {
        workflowId: posted.workflowId,
        result: outcome,
        secrets: await linkSecrets(stack, linkId, issued),
        check: (history) => {
          expectReviewResolved(history, 4);
          const timers = history.events.filter((event) => event.eventType === 'EVENT_TYPE_TIMER_STARTED').length;
          if (timers !== 3) fail(`expected 3 backoff timers between the 4 attempts, the history has ${timers}`);
        },
      };
    }
    case 'payment-rate-limited-then-succeeded': {
      // Every execute is refused with 429 (not processed) more often than an unknown outcome may
      // repeat; none counts as an attempt, and once the wallet takes it the payment succeeds.
      const { issued, linkId } = await embeddedLink(stack, '100.00');
      const since = new Date();
      await stack.admin.setFaults([{ endpoint: 'op.payments.execute', mode: 'rate-limited', rate: 1 }]);
      let posted: { id: string; workflowId: string };
      try {
        posted = await postPayment(stack, linkId, '12.00');
        await until(
          'five execute calls refused with 429',
          async () =>
            (await stack.database.walletCall.count({
              where: { operation: 'op.payments.execute', httpStatus: 429, startedAt: { gte: since } },
            })) >= 5,
          60_000,
          50,
        );
      } finally {
        await stack.admin.clearFaults();
      }
      const outcome = (await stack.result(posted.workflowId)) as PaymentResult;
      expectOutcome(outcome, 'SUCCEEDED', null);
      return {
        workflowId: posted.workflowId,
        result: outcome,
        secrets: await linkSecrets(stack, linkId, issued),
        check: (history) => {
          expectActivities(history, ['createPayment', 'executePayment', 'finishPayment'], ['parkForReview']);
          if (count(history, 'executePayment') < 6)
            fail('expected at least five refused executes and the one that succeeded');
        },
      };
    }

    case 'payment-lost-answer-already-executed': {
      // As payment-lost-answer-review-resolved, on today's code: the second execute's
      // PAYMENT_ALREADY_EXECUTED proves our first one executed, so the payment ends SUCCEEDED.
      const { user, issued, linkId } = await embeddedLink(stack, '100.00');
      await stack.admin.setFaults([{ endpoint: 'op.payments.execute', mode: 'error-after-effect', rate: 1 }]);
      let posted: { id: string; workflowId: string };
      try {
        posted = await postPayment(stack, linkId, '21.00');
        await until(
          'the first execute taking effect',
          async () =>
            (await stack.admin.ledger()).payments.some(
              (payment) => payment.userId === user.userId && payment.executions === 1,
            ),
          20_000,
          25,
        );
      } finally {
        await stack.admin.clearFaults();
      }
      const outcome = (await stack.result(posted.workflowId)) as PaymentResult;
      expectOutcome(outcome, 'SUCCEEDED', null);
      return {
        workflowId: posted.workflowId,
        result: outcome,
        secrets: await linkSecrets(stack, linkId, issued),
        check: (history) => {
          expectActivities(
            history,
            ['createPayment', 'executePayment', 'finishPayment'],
            ['parkForReview', 'resolvePayment'],
          );
          if (count(history, 'executePayment') !== 2)
            fail(`expected 2 executes, the history has ${count(history, 'executePayment')}`);
        },
      };
    }
    case 'payment-not-sent-exhausted-failed': {
      // Every execute is refused with 429 (Retry-After: 1 s): none was processed, so after
      // MAX_NOT_SENT (10) the payment fails, with no attempt of unknown outcome behind it.
      const { issued, linkId } = await embeddedLink(stack, '100.00');
      await stack.admin.setFaults([{ endpoint: 'op.payments.execute', mode: 'rate-limited', rate: 1 }]);
      let outcome: PaymentResult;
      let posted: { id: string; workflowId: string };
      try {
        posted = await postPayment(stack, linkId, '11.00');
        outcome = (await stack.result(posted.workflowId)) as PaymentResult;
      } finally {
        await stack.admin.clearFaults();
      }
      if (outcome.status !== 'FAILED') fail(`expected FAILED, the workflow returned ${outcome.status}`);
      return {
        workflowId: posted.workflowId,
        result: outcome,
        secrets: await linkSecrets(stack, linkId, issued),
        check: (history) => {
          expectActivities(history, ['createPayment', 'executePayment', 'finishPayment'], ['parkForReview']);
          if (count(history, 'executePayment') !== 10)
            fail(`expected 10 refused executes, the history has ${count(history, 'executePayment')}`);
        },
      };
    }
    case 'payment-resumed-executing-succeeded': {
      // A run dies during its execute (terminated while the wallet, slowed 3 s, takes it); the
      // execute lands. The sweep finds the payment EXECUTING with no running workflow and starts a
      // new run: it counts the earlier execute as unknown, executes, gets PAYMENT_ALREADY_EXECUTED
      // for our own payment id, and ends SUCCEEDED.
      const { user, issued, linkId } = await embeddedLink(stack, '100.00');
      await stack.admin.setFaults([{ endpoint: 'op.payments.execute', mode: 'latency', rate: 1, delayMs: 3000 }]);
      let posted: { id: string; workflowId: string };
      try {
        posted = await postPayment(stack, linkId, '13.00');
        const handle = stack.temporal.workflow.getHandle(posted.workflowId);
        await until(
          'executePayment running',
          () => activityRunning(stack, posted.workflowId, 'executePayment'),
          30_000,
          50,
        );
        await handle.terminate('histories capture: the run dies during its execute');
        await until(
          'the execute landing at the wallet',
          async () =>
            (await stack.admin.ledger()).payments.some(
              (payment) => payment.userId === user.userId && payment.executions === 1,
            ),
          20_000,
          100,
        );
      } finally {
        await stack.admin.clearFaults();
      }
      const { status } = await stack.database.payment.findUniqueOrThrow({
        where: { id: posted.id },
        select: { status: true },
      });
      if (status !== 'EXECUTING') fail(`expected the payment EXECUTING, it is ${status}`);
      const report = await runSweep(stack, 0);
      const action = report.paymentItems?.find((item) => item.id === posted.id)?.action;
      if (action !== 'workflow-started')
        fail(`expected the sweep to start its workflow, it reported ${JSON.stringify(report.paymentItems)}`);
      const outcome = (await stack.result(posted.workflowId)) as PaymentResult;
      expectOutcome(outcome, 'SUCCEEDED', null);
      return {
        workflowId: posted.workflowId,
        result: outcome,
        secrets: await linkSecrets(stack, linkId, issued),
        check: (history) => {
          expectActivities(
            history,
            ['loadPayment', 'executePayment', 'finishPayment'],
            ['markPaymentCreating', 'createPayment', 'beginPaymentExecute', 'parkForReview'],
          );
          if (count(history, 'executePayment') !== 1)
            fail(`expected one execute in the resumed run, the history has ${count(history, 'executePayment')}`);
        },
      };
    }

    // onboardEmbeddedSession
    case 'onboarding-linked': {
      const { user, workflowId, outcome, secrets } = await onboard(stack);
      expectOutcome(outcome, 'READY', null);
      const link = await stack.database.link.findUnique({
        where: { profileId_kind: { profileId: user.profileId, kind: 'EMBEDDED' } },
      });
      if (!link || link.id !== outcome.linkId)
        fail(`expected the user's EMBEDDED link ${outcome.linkId ?? '(none)'}, found ${link?.id ?? 'none'}`);
      return {
        workflowId,
        result: outcome,
        secrets,
        check: (history) => expectActivities(history, ['linkEmbeddedSession'], ['failEmbeddedSession']),
      };
    }
    case 'onboarding-profile-refused': {
      // The delivered access token expires before onboarding runs (the sandbox clock moves past
      // it): the profile call is refused with 401, so the user must open the tile again.
      const { workflowId, outcome, secrets } = await onboard(stack, async (row) => {
        const { now } = await stack.admin.clock();
        await stack.admin.advanceClock(
          Math.max(1, Math.ceil((row.accessTokenExpiresAt.getTime() - Date.parse(now)) / 1000) + 1),
        );
      });
      expectOutcome(outcome, 'FAILED', 'REAUTH_REQUIRED');
      return {
        workflowId,
        result: outcome,
        secrets,
        check: (history) => expectActivities(history, ['linkEmbeddedSession'], ['failEmbeddedSession']),
      };
    }
    case 'onboarding-profile-unavailable': {
      // Every profile call fails with a 503: linkEmbeddedSession's retries run out (~16 s), then
      // failEmbeddedSession ends the session FAILED.
      let onboarded: Awaited<ReturnType<typeof onboard>>;
      try {
        onboarded = await onboard(stack, () =>
          stack.admin.setFaults([{ endpoint: 'op.profile', mode: 'error-before-effect', rate: 1 }]),
        );
      } finally {
        await stack.admin.clearFaults();
      }
      const { workflowId, outcome, secrets } = onboarded;
      expectOutcome(outcome, 'FAILED', 'ONBOARDING_FAILED');
      return {
        workflowId,
        result: outcome,
        secrets,
        check: (history) => expectActivities(history, ['linkEmbeddedSession', 'failEmbeddedSession']),
      };
    }

    // reconcileFundings
    case 'reconcile-sweep': {
      const executed = await stuckFunding(stack, { executed: true });
      const unexecuted = await stuckFunding(stack, { executed: false });
      const workflowId = `capture-reconcile-${randomUUID()}`;
      await startSweep(stack.temporal, { taskQueue: stack.taskQueue, workflowId, input: { olderThanSeconds: 600 } });
      const report = (await stack.result(workflowId)) as SweepReport;
      const action = (fundingId: string) => report.items.find((item) => item.fundingId === fundingId)?.action;
      if (
        action(executed.fundingId) !== 'finished-from-wallet' ||
        action(unexecuted.fundingId) !== 'failed-not-executed'
      ) {
        fail(
          `expected finished-from-wallet and failed-not-executed, the sweep reported ${JSON.stringify(report.items)}`,
        );
      }
      return {
        workflowId,
        result: report,
        secrets: [...executed.secrets, ...unexecuted.secrets],
        check: (history) => expectActivities(history, ['sweepStuckFundings']),
      };
    }

    // purgeExpired
    case 'purge-expired': {
      // A login state long expired, so the purge has something to delete (its hash is no secret:
      // the state it hashes was never issued).
      const stateHash = hashBearer(randomUUID());
      await stack.database.loginState.create({
        data: { stateHash, partnerUserId: 'capture-purge', expiresAt: new Date(Date.now() - 30 * 86_400_000) },
      });
      const workflowId = manualPurgeWorkflowId(`capture-${randomUUID()}`);
      const handle = await startPurgeExpired(stack.temporal, {
        taskQueue: stack.taskQueue,
        workflowId,
        input: { retentionSeconds: 7 * 86_400 },
      });
      const report = await handle.result();
      if (report.deleted.login_state < 1 || (await stack.database.loginState.count({ where: { stateHash } })) !== 0) {
        fail(`expected the expired login state purged, the purge reported ${JSON.stringify(report)}`);
      }
      return {
        workflowId,
        result: report,
        secrets: [],
        check: (history) => expectActivities(history, ['purgeExpiredRows']),
      };
    }

    // settleDay (the capture's API runs it in pages of two, two items an activity, two activities a run)
    case 'settlement-settled': {
      // One funding: its side in one activity, the payments' (none) in another, then the finish.
      const { workflowId } = await settleDayOf(stack, 1);
      const outcome = (await stack.result(workflowId)) as SettleDayResult;
      if (outcome.checked !== 1 || outcome.matched !== 1)
        fail(`expected 1 line matched, got ${describeResult(outcome)}`);
      return {
        workflowId,
        result: outcome,
        secrets: [],
        check: (history) =>
          expectActivitySequence(history, ['beginSettlementRun', 'settleItems', 'settleItems', 'finishSettlementRun']),
      };
    }
    case 'settlement-continued-as-new':
    case 'settlement-continued-finished': {
      // Six fundings: two activities of two, then the run continues as new where it got to; the
      // next run reads the last two and the end of the fundings, continues as new again; the last
      // run reads the payments and finishes. The first run and the last are stored.
      const { workflowId } = await settleDayOf(stack, 6);
      const outcome = (await stack.result(workflowId)) as SettleDayResult;
      if (outcome.checked !== 6 || outcome.matched !== 6)
        fail(`expected 6 lines matched, got ${describeResult(outcome)}`);
      // The runs of the chain, once the visibility store lists all three.
      let runs: Array<{ runId: string; startTime: Date }> = [];
      for (let tries = 0; runs.length < 3 && tries < 50; tries += 1) {
        if (tries > 0) await new Promise((resolve) => setTimeout(resolve, 200));
        runs = [];
        for await (const execution of stack.temporal.workflow.list({ query: `WorkflowId = '${workflowId}'` }))
          runs.push({ runId: execution.runId, startTime: execution.startTime });
      }
      if (runs.length !== 3) fail(`expected 3 runs of the chain, found ${runs.length}`);
      if (name === 'settlement-continued-finished') {
        return {
          workflowId,
          result: outcome,
          secrets: [],
          check: (history) => expectActivitySequence(history, ['settleItems', 'finishSettlementRun']),
        };
      }
      return {
        workflowId,
        runId: runs.reduce((first, run) => (run.startTime < first.startTime ? run : first)).runId,
        result: outcome,
        secrets: [],
        check: (history) => {
          expectActivitySequence(history, ['beginSettlementRun', 'settleItems', 'settleItems']);
          if (history.events.at(-1)?.eventType !== 'EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW')
            fail('expected the run to continue as new');
        },
      };
    }

    // fundBatch
    // fundLane
    case 'lane-carried': {
      // Two fundings wait in lane 0 (stored as the API stores them under load, with their holds):
      // one to a KYC1 wallet (APPROVED), one to a KYC0 wallet (REJECTED, M133). A lane started to
      // continue as new after 4 reads carries both, then waits, then continues as new.
      const lane = 0;
      const fundings = createFundingRecord({ database: stack.database, cipher: stack.cipher });
      const secrets: Secret[] = [];
      const ids: string[] = [];
      for (const kycLevel of ['KYC1', 'KYC0'] as const) {
        const { code } = await codeFor(stack, { kycLevel });
        secrets.push({ name: `a ${kycLevel} cash-in code`, value: code });
        const id = randomUUID();
        await fundings.insert({
          id,
          idempotencyKey: `capture-lane-${id}`,
          requestFingerprint: '0'.repeat(64),
          workflowId: `funding-capture-lane-${id}`,
          recipient: { type: 'CODE', code },
          amount: moneyOf(amount('3.00')),
          lane,
        });
        ids.push(id);
      }
      const workflowId = laneWorkflowId(stack.taskQueue, lane);
      const handle = await stack.temporal.workflow.start(fundLaneWorkflowType, {
        taskQueue: stack.taskQueue,
        workflowId,
        args: [{ lane, chunksPerRun: 4 }],
      });
      try {
        await until('both fundings final', async () => {
          const rows = await stack.database.funding.findMany({ where: { id: { in: ids } } });
          return (
            rows
              .map((row) => row.status)
              .sort()
              .join(',') === 'APPROVED,REJECTED'
          );
        });
        await until(
          'the lane’s first run to continue as new',
          async () => (await handle.describe()).runId !== handle.firstExecutionRunId,
          90_000,
        );
      } finally {
        await handle.terminate('captured').catch(() => undefined);
      }
      return {
        workflowId,
        runId: handle.firstExecutionRunId,
        result: { lane, carried: ids.length },
        secrets,
        check: (history) => expectActivities(history, ['runLaneChunk']),
      };
    }

    case 'batch-completed': {
      const { batchId, secrets } = await postBatch(stack, 12);
      const workflowId = batchWorkflowId(batchId);
      const outcome = (await stack.result(workflowId)) as FundBatchResult;
      const counts = await batchCounts(stack, batchId);
      if (outcome.state !== 'COMPLETED' || counts.APPROVED !== 12)
        fail(`expected COMPLETED with 12 APPROVED, got ${outcome.state} ${JSON.stringify(counts)}`);
      return {
        workflowId,
        result: outcome,
        secrets,
        check: (history) => expectActivities(history, [...batchActivities, 'unfinishedBatchItems', 'completeBatch']),
      };
    }
    case 'batch-paused-resumed-cancelled': {
      // Slow executes, so the moves land while items are under way.
      await stack.admin.setFaults([{ endpoint: 'transfers.execute', mode: 'latency', rate: 1, delayMs: 1500 }]);
      try {
        const { batchId, secrets } = await postBatch(stack, 150);
        const workflowId = batchWorkflowId(batchId);
        const done = async () => (await batchCounts(stack, batchId)).APPROVED ?? 0;
        const waitFor = async (count: number) => {
          const deadline = Date.now() + 60_000;
          while ((await done()) < count) {
            if (Date.now() > deadline) fail(`fewer than ${count} items approved in 60 s`);
            await new Promise((resolve) => setTimeout(resolve, 100));
          }
        };
        await waitFor(4);
        await moveBatch(stack, batchId, 'pause');
        await new Promise((resolve) => setTimeout(resolve, 1500));
        await moveBatch(stack, batchId, 'resume');
        await waitFor((await done()) + 4);
        await moveBatch(stack, batchId, 'cancel');
        const outcome = (await stack.result(workflowId)) as FundBatchResult;
        const counts = await batchCounts(stack, batchId);
        if (outcome.state !== 'CANCELLED' || !counts.CANCELLED)
          fail(`expected CANCELLED with items cancelled, got ${outcome.state} ${JSON.stringify(counts)}`);
        return {
          workflowId,
          result: outcome,
          secrets,
          check: (history) => {
            expectActivities(history, batchActivities, ['completeBatch']);
            if (!history.events.some((event) => event.eventType === 'EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED'))
              fail('expected the state-change signals');
          },
        };
      } finally {
        await stack.admin.clearFaults();
      }
    }

    // deliverWebhooks
    case 'webhooks-delivered': {
      const round = await deliveryRound(stack, [204], 3000);
      if (round.report.succeeded < 1 || round.received.length < 1)
        fail(`expected a delivery, the round reported ${JSON.stringify(round.report)}`);
      return {
        workflowId: round.workflowId,
        runId: round.runId,
        result: round.report,
        secrets: round.secrets,
        check: checkDeliveryRun,
      };
    }
    case 'webhooks-retried': {
      // Refused once (500), delivered on the retry 30 s later, within the same round.
      const round = await deliveryRound(stack, [500, 204], 45_000);
      const ids = round.received.map((each) => each.id);
      if (round.report.retrying < 1 || round.report.succeeded < 1 || ids.length < 2 || ids[0] !== ids[1]) {
        fail(
          `expected a refused attempt, then the same webhook-id delivered; the round reported ${JSON.stringify(round.report)}, the receiver saw ${ids.length}`,
        );
      }
      return {
        workflowId: round.workflowId,
        runId: round.runId,
        result: round.report,
        secrets: round.secrets,
        check: checkDeliveryRun,
      };
    }
  }
}

/**
 * A funding batch of `count` items to fresh cash-in codes, stored through the API (it starts its runner); the codes are
 * its secrets.
 */
async function postBatch(stack: ReplayStack, count: number): Promise<{ batchId: string; secrets: Secret[] }> {
  const user = await stack.admin.createUser({ kycLevel: 'KYC1', balance: '0.00' });
  const secrets: Secret[] = [];
  const lines = ['reference,recipient_type,recipient,amount'];
  for (let index = 1; index <= count; index += 1) {
    const { code } = await stack.admin.cashInCode(user.userId);
    secrets.push({ name: `the cash-in code of item ${index}`, value: code });
    lines.push(`capture-${index},CODE,${code},1.00`);
  }
  const response = await stack.opsFetch('/ops/funding-batches?name=capture', {
    method: 'POST',
    headers: { 'content-type': 'text/csv', 'idempotency-key': `capture-${randomUUID()}` },
    body: `${lines.join('\n')}\n`,
  });
  const answer = (await response.json()) as { batchId?: string; state?: string };
  if (response.status !== 202 || !answer.batchId || answer.state !== 'RUNNING')
    fail(`POST /ops/funding-batches: ${response.status} ${JSON.stringify(answer)}`);
  return { batchId: answer.batchId as string, secrets };
}

async function moveBatch(stack: ReplayStack, batchId: string, action: 'pause' | 'resume' | 'cancel'): Promise<void> {
  const response = await stack.opsFetch(`/ops/funding-batches/${batchId}/${action}`, { method: 'POST' });
  if (response.status !== 200) fail(`POST …/${action}: ${response.status} ${await response.text()}`);
}

/** A batch's items by state, as the batch view counts them. */
async function batchCounts(stack: ReplayStack, batchId: string): Promise<Record<string, number>> {
  const response = await stack.opsFetch(`/ops/funding-batches/${batchId}`);
  return ((await response.json()) as { counts: Record<string, number> }).counts;
}

const batchActivities = ['batchState', 'nextBatchItems', 'runBatchItems'];

/** A deliverWebhooks run: its delivery rounds, then continue-as-new. */
function checkDeliveryRun(history: HistoryJson): void {
  expectActivities(history, ['deliverDueWebhooks']);
  if (!history.events.some((event) => event.eventType === 'EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW'))
    fail('expected the run to continue as new');
}

main().then(
  () => {
    if (!interrupted) process.exit(0);
  },
  (error: Error) => {
    // Interrupted: the signal handler is closing the stack and exits when done.
    if (interrupted) return;
    process.stderr.write(`histories:capture failed: ${error.stack ?? error.message}\n`);
    process.exit(1);
  },
);
