// The stored workflow histories (test/replay/histories/*.json, Temporal's JSON export format)
// and the secret checks both the capture script and the replay tests run on them. No vitest here.
import { fundLaneWorkflowType } from '../../workflows/fund-lane.contract.ts';
import { readdirSync, readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { DefaultLogger, Runtime, Worker, type ReplayResult, type ReplayWorkerOptions } from '@temporalio/worker';
import { fundWalletWorkflowType } from '../../workflows/fund-wallet.contract.ts';
import { onboardEmbeddedSessionWorkflowType } from '../../workflows/onboard-embedded-session.contract.ts';
import { payWalletWorkflowType } from '../../workflows/pay-wallet.contract.ts';
import { reconcileFundingsWorkflowType } from '../../workflows/sweep.contract.ts';
import { purgeExpiredWorkflowType } from '../../workflows/purge-expired.contract.ts';
import { deliverWebhooksWorkflowType } from '../../workflows/deliver-webhooks.contract.ts';
import { fundBatchWorkflowType } from '../../workflows/fund-batch.contract.ts';
import { settleDayWorkflowType } from '../../workflows/settle-day.contract.ts';

export const historiesDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../replay/histories');

/** One stored history per path, by workflow type; the file name is the path name. */
export const historyPaths = {
  [fundWalletWorkflowType]: [
    'code-approved',
    'token-approved-with-refresh',
    'm133-rejected',
    'declined',
    'execute-unknown-reconciled',
    'processing-polled',
    'cancelled',
    'continued-reconcile-approved',
    'execute-not-executed-then-approved',
    'execute-expired',
    'execute-late-review-resolved',
    'execute-late-review-swept',
    'create-failed',
    'cancelled-during-create',
    'taken-over-created-transfer',
    'taken-over-executing-approved',
    'retrieve-refused-review-resolved',
  ],
  [payWalletWorkflowType]: [
    'payment-succeeded',
    'payment-insufficient-balance',
    'payment-lost-answer-review-resolved',
    'payment-unknown-review-resolved-failed',
    'payment-rate-limited-then-succeeded',
    'payment-lost-answer-already-executed',
    'payment-not-sent-exhausted-failed',
    'payment-resumed-executing-succeeded',
  ],
  [onboardEmbeddedSessionWorkflowType]: [
    'onboarding-linked',
    'onboarding-profile-refused',
    'onboarding-profile-unavailable',
  ],
  [reconcileFundingsWorkflowType]: ['reconcile-sweep'],
  [purgeExpiredWorkflowType]: ['purge-expired'],
  [deliverWebhooksWorkflowType]: ['webhooks-delivered', 'webhooks-retried'],
  [fundBatchWorkflowType]: ['batch-completed', 'batch-paused-resumed-cancelled'],
  [fundLaneWorkflowType]: ['lane-carried'],
  [settleDayWorkflowType]: ['settlement-settled', 'settlement-continued-as-new', 'settlement-continued-finished'],
} as const;
export type WorkflowType = keyof typeof historyPaths;
export type HistoryName = (typeof historyPaths)[WorkflowType][number];
export const workflowTypes = Object.keys(historyPaths) as WorkflowType[];
export const historyNames: readonly HistoryName[] = workflowTypes.flatMap((type) => historyPaths[type]);

/**
 * The name the onboarding paths give their sandbox users: the profile the workflow reads holds it,
 * and no stored history may (checked at capture and by the replay tests).
 */
export const onboardingUserName = { firstName: 'Marisol', lastName: 'Dimaculangan' } as const;

/** Where older captures are kept (one folder per label) while workflows on older code may still run. */
export const archiveDir = path.join(historiesDir, 'archive');

export const historyFile = (name: string) => path.join(historiesDir, `${name}.json`);

/** Every stored history, current and archived, as paths relative to historiesDir without `.json`. */
export function listStoredHistories(): string[] {
  return readdirSync(historiesDir, { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.json'))
    .map((file) => file.slice(0, -'.json'.length).split(path.sep).join('/'))
    .sort();
}

export async function readStoredHistory(name: string): Promise<unknown> {
  return JSON.parse(await readFile(historyFile(name), 'utf8')) as unknown;
}

/** Replays stored histories (by name) with one replay worker; each result's workflowId is the name. */
export async function replayStored(options: ReplayWorkerOptions, names: string[]): Promise<ReplayResult[]> {
  const histories = await Promise.all(
    names.map(async (name) => ({ workflowId: name, history: await readStoredHistory(name) })),
  );
  const results: ReplayResult[] = [];
  for await (const result of Worker.runReplayHistories(options, histories)) results.push(result);
  return results;
}

/**
 * Replays stored histories (by name) with their run's input changed by `change`: a run a build before started with an
 * input field it did not know, as today's code must replay it.
 */
export async function replayStoredWithInput(
  options: ReplayWorkerOptions,
  names: string[],
  change: (input: Record<string, unknown>) => Record<string, unknown>,
): Promise<ReplayResult[]> {
  const histories = await Promise.all(
    names.map(async (name) => {
      const history = (await readStoredHistory(name)) as {
        events: Array<{
          workflowExecutionStartedEventAttributes?: { input?: { payloads?: Array<{ data?: string }> } };
        }>;
      };
      const started = history.events[0]!.workflowExecutionStartedEventAttributes!.input!.payloads![0]!;
      const input = JSON.parse(decodeBase64(started.data!)) as Record<string, unknown>;
      started.data = Buffer.from(JSON.stringify(change(input))).toString('base64');
      return { workflowId: name, history };
    }),
  );
  const results: ReplayResult[] = [];
  for await (const result of Worker.runReplayHistories(options, histories)) results.push(result);
  return results;
}

/**
 * For the replay tests: each replay worker logs its life (and webpack's) at INFO, and Core warns
 * of each expected nondeterminism; errors still show. Not for the capture script (its own runtime).
 */
export function installQuietReplayRuntime(): void {
  try {
    Runtime.install({
      logger: new DefaultLogger('WARN'),
      telemetryOptions: { logging: { filter: { core: 'ERROR', other: 'ERROR' } } },
    });
  } catch {
    // A runtime exists already in this process (another file installed one): keep it.
  }
}

/** The workflow type a history ran, from its first event. */
export function workflowTypeOf(history: unknown): string | undefined {
  const first = (
    history as { events?: Array<{ workflowExecutionStartedEventAttributes?: { workflowType?: { name?: string } } }> }
  ).events?.[0];
  return first?.workflowExecutionStartedEventAttributes?.workflowType?.name;
}

/** The stored histories (current and archived) of one workflow type, by what each file ran. */
export function storedHistoriesOf(type: WorkflowType): string[] {
  return listStoredHistories().filter(
    (name) => workflowTypeOf(JSON.parse(readFileSync(historyFile(name), 'utf8'))) === type,
  );
}

interface HistoryEvent {
  eventType: string;
  [attributes: string]: unknown;
}
type Payloads = { payloads?: Array<{ data?: string }> } | undefined;
const firstPayload = (payloads: Payloads): unknown => {
  const data = payloads?.payloads?.[0]?.data;
  return data === undefined ? undefined : (JSON.parse(decodeBase64(data)) as unknown);
};

/**
 * What a stored history shows, for the path-specific replay tests: its input and result, the
 * patches it took (markers), the activities it ran in order (local ones from their markers), its
 * timers, updates and whether it continued as new.
 */
export function historyFacts(history: unknown) {
  const events = (history as { events: HistoryEvent[] }).events;
  const attributes = <T>(event: HistoryEvent, name: string) => event[name] as T | undefined;
  const started = events[0]
    ? attributes<{ input?: Payloads }>(events[0], 'workflowExecutionStartedEventAttributes')
    : undefined;
  const completed = events.find((event) => event.eventType === 'EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED');
  const markers = events.flatMap((event) => {
    const marker = attributes<{ markerName?: string; details?: Record<string, Payloads> }>(
      event,
      'markerRecordedEventAttributes',
    );
    return marker ? [marker] : [];
  });
  const count = (eventType: string) => events.filter((event) => event.eventType === eventType).length;
  return {
    input: firstPayload(started?.input),
    result: completed
      ? firstPayload(attributes<{ result?: Payloads }>(completed, 'workflowExecutionCompletedEventAttributes')?.result)
      : undefined,
    patches: markers
      .filter((marker) => marker.markerName === 'core_patch')
      .map((marker) => (firstPayload(marker.details?.['patch-data']) as { id: string }).id),
    activities: events.flatMap((event): string[] => {
      const scheduled = attributes<{ activityType?: { name?: string } }>(event, 'activityTaskScheduledEventAttributes');
      if (scheduled?.activityType?.name) return [scheduled.activityType.name];
      const marker = attributes<{ markerName?: string; details?: Record<string, Payloads> }>(
        event,
        'markerRecordedEventAttributes',
      );
      if (marker?.markerName !== 'core_local_activity') return [];
      const data = marker.details?.data?.payloads?.[0]?.data;
      const type = data ? /"activity_type":"([^"]+)"/.exec(decodeBase64(data))?.[1] : undefined;
      return type ? [type] : [];
    }),
    /** The attempt of each started activity (2 and more: Temporal retried it), in order. */
    activityAttempts: events.flatMap((event) => {
      const activityStarted = attributes<{ attempt?: number }>(event, 'activityTaskStartedEventAttributes');
      return activityStarted?.attempt === undefined ? [] : [activityStarted.attempt];
    }),
    timers: count('EVENT_TYPE_TIMER_STARTED'),
    updatesCompleted: count('EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED'),
    continuedAsNew: count('EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW') > 0,
  };
}

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

function decodeBase64(value: string): string {
  return Buffer.from(value, 'base64').toString('utf8');
}

/**
 * The history as text a person (or a scan) can read: every payload's base64 `data` decoded (and
 * parsed when it is JSON), so a secret inside an activity argument or result is visible. In the
 * raw file every JSON payload starts with `eyJ` (base64 of `{"`), which would hide a real JWT.
 */
export function readableHistory(history: unknown): string {
  const visit = (node: Json): Json => {
    if (Array.isArray(node)) return node.map(visit);
    if (node === null || typeof node !== 'object') return node;
    const metadata = node.metadata;
    if (typeof node.data === 'string' && metadata && typeof metadata === 'object' && !Array.isArray(metadata)) {
      const decodedMetadata = Object.fromEntries(
        Object.entries(metadata).map(([key, value]) => [key, typeof value === 'string' ? decodeBase64(value) : value]),
      );
      const text = decodeBase64(node.data);
      let data: Json = text;
      if (decodedMetadata.encoding === 'json/plain') {
        try {
          data = JSON.parse(text) as Json;
        } catch {
          // Not JSON after all: keep the text, the scan still sees it.
        }
      }
      return { ...node, metadata: decodedMetadata, data };
    }
    return Object.fromEntries(Object.entries(node).map(([key, value]) => [key, visit(value)]));
  };
  return JSON.stringify(visit(history as Json));
}

/** Patterns no stored history may contain, whatever the test data was (scanned decoded). */
const forbiddenPatterns: Array<{ name: string; pattern: RegExp }> = [
  {
    name: 'a 7-digit number near a "CODE" value (a cash-in code)',
    pattern: /"CODE"[^{}]{0,120}?(?<![0-9A-Za-z])\d{7}(?![0-9A-Za-z])/,
  },
  { name: 'a JWT/JWE-looking token (eyJ…)', pattern: /eyJ[A-Za-z0-9_-]{8,}/ },
  { name: 'the name transferApiKey', pattern: /transferApiKey/i },
  { name: 'the name clientSecret', pattern: /clientSecret/i },
];

/**
 * Proto int64 fields (JSON strings of digits), the worker identity (pid@host) and the nanoseconds
 * of a timestamp (a local activity's marker records its completion time) may hold 7 digits.
 */
const numericKey = /(?:Id|Bytes|[vV]ersion|Count|Size)$|^identity$|^nanos$/;
const sevenDigits = /(?<![0-9A-Za-z])\d{7}(?![0-9A-Za-z])/;

/** Paths of string values with a standalone 7-digit number (the shape of a cash-in code). */
function sevenDigitValues(node: unknown, at = '$'): string[] {
  if (Array.isArray(node)) return node.flatMap((item, index) => sevenDigitValues(item, `${at}[${index}]`));
  if (node === null || typeof node !== 'object') return [];
  return Object.entries(node).flatMap(([key, value]) => {
    if (typeof value === 'string') return !numericKey.test(key) && sevenDigits.test(value) ? [`${at}.${key}`] : [];
    if (typeof value === 'number')
      return sevenDigits.test(String(value)) && !numericKey.test(key) ? [`${at}.${key}`] : [];
    return sevenDigitValues(value, `${at}.${key}`);
  });
}

/**
 * What in a history looks like a secret: each exact `secrets` value found in the raw or the
 * decoded text, and each forbidden pattern in the decoded text. Empty when clean.
 */
export function findSecretLeaks(history: unknown, secrets: Array<{ name: string; value: string }> = []): string[] {
  const raw = JSON.stringify(history);
  const readable = readableHistory(history);
  const leaks: string[] = [];
  for (const secret of secrets) {
    if (secret.value.length < 4) throw new Error(`secret ${secret.name} is too short to search for`);
    if (raw.includes(secret.value) || readable.includes(secret.value)) leaks.push(secret.name);
  }
  for (const where of sevenDigitValues(JSON.parse(readable)))
    leaks.push(`a 7-digit number (a cash-in code?) at ${where}`);
  for (const { name, pattern } of forbiddenPatterns) {
    const match = pattern.exec(readable);
    // Some context to find it by, with the match itself left out.
    if (match) leaks.push(`${name} at …${readable.slice(Math.max(0, match.index - 60), match.index)}<here>…`);
  }
  return leaks;
}
