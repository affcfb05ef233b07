// Replay compares commands, not the values they carry: Temporal's replay (Worker.runReplayHistories)
// checks that today's code schedules the same activities, timers and markers and completes, but
// not what the completion returns or what a continue-as-new passes on (the previous release's
// payWallet histories end with the pre-rename `paymentId`, and replay clean on code that returns
// `walletPaymentId`). So this test replays every stored history on today's workflows with an
// interceptor (fixtures/result-recorder.ts) that hands each run's result, or its continue-as-new
// input, to a sink the replay worker calls during replay, and compares it with the history's
// completion event: today's code must end each stored path as the history did. Differences the
// previous release's histories are known to have are listed, each with why.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundleWorkflowCode, type InjectedSinks } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  installQuietReplayRuntime,
  listStoredHistories,
  readStoredHistory,
  replayStored,
  workflowTypeOf,
} from '../support/replay-histories.ts';
import { payWalletWorkflowType } from '../../workflows/pay-wallet.contract.ts';
import type { ResultSinks } from './fixtures/result-recorder.ts';

installQuietReplayRuntime();
const stored = listStoredHistories();
const workflowsPath = fileURLToPath(new URL('../../workflows/index.ts', import.meta.url));
const recorder = fileURLToPath(new URL('./fixtures/result-recorder.ts', import.meta.url));

/** How a run ended: what it returned, or the input it continued as new with. */
type Ending = { returned: unknown } | { continuedAsNew: unknown[] };

interface Payloads {
  payloads?: Array<{ data?: string }>;
}
const decoded = (payloads: Payloads | undefined) =>
  (payloads?.payloads ?? []).map((payload) =>
    payload.data === undefined
      ? undefined
      : (JSON.parse(Buffer.from(payload.data, 'base64').toString('utf8')) as unknown),
  );

/** The ending a stored history records: its completion's result, or its continue-as-new's input. */
async function recordedEnding(name: string): Promise<Ending | undefined> {
  const { events } = (await readStoredHistory(name)) as { events: Array<Record<string, unknown>> };
  const last = events.at(-1)!;
  const completed = last.workflowExecutionCompletedEventAttributes as { result?: Payloads } | undefined;
  if (completed) return { returned: decoded(completed.result)[0] };
  const continued = last.workflowExecutionContinuedAsNewEventAttributes as { input?: Payloads } | undefined;
  if (continued) return { continuedAsNew: decoded(continued.input) };
  return undefined;
}

/**
 * Where a previous release's history ends otherwise than today's code ends the same path, and why
 * that is right: by workflow type, the difference as `recorded → today's`.
 */
const KNOWN_DIFFERENCES: Array<{
  type: string;
  under: string;
  why: string;
  recorded: (value: Record<string, unknown>) => Record<string, unknown>;
}> = [
  {
    type: payWalletWorkflowType,
    under: 'archive/release-360981c/',
    why: "the result's wallet payment id was renamed from paymentId to walletPaymentId after that release: its runs that end on today's build return walletPaymentId",
    recorded: ({ paymentId, ...rest }) => ({ ...rest, walletPaymentId: paymentId }),
  },
];

let dir: string;
let bundle: string;
const endings = new Map<string, Ending>();

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'walletflow-results-replay-'));
  bundle = path.join(dir, 'workflow-bundle-results.js');
  const { code } = await bundleWorkflowCode({
    workflowsPath,
    workflowInterceptorModules: [recorder],
    logger: { trace() {}, debug() {}, info() {}, warn() {}, error: console.error, log() {} },
  });
  await writeFile(bundle, code);
  const sinks: InjectedSinks<ResultSinks> = {
    replayed: {
      returned: { fn: (info, value) => void endings.set(info.workflowId, { returned: value }), callDuringReplay: true },
      continuedAsNew: {
        fn: (info, args) => void endings.set(info.workflowId, { continuedAsNew: args }),
        callDuringReplay: true,
      },
    },
  };
  const results = await replayStored({ workflowBundle: { codePath: bundle }, sinks }, stored);
  const failed = results
    .filter((result) => result.error)
    .map((result) => `${result.workflowId}: ${String(result.error)}`);
  if (failed.length > 0) throw new Error(`replay failed: ${failed.join('; ')}`);
}, 300_000);

afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe("today's workflows end each stored path as its history did", () => {
  it('hears every replayed run end', () => {
    expect(stored.length).toBeGreaterThan(60);
    expect(stored.filter((name) => !endings.has(name))).toEqual([]);
  });

  it.each(stored.filter((name) => !name.startsWith('archive/')))(
    '%s: the same result (or continue-as-new input)',
    async (name) => {
      expect(endings.get(name)).toEqual(await recordedEnding(name));
    },
  );

  it.each(stored.filter((name) => name.startsWith('archive/')))(
    '%s: the same, but for the known differences',
    async (name) => {
      const recorded = await recordedEnding(name);
      const type = workflowTypeOf(await readStoredHistory(name));
      const known = KNOWN_DIFFERENCES.find(
        (difference) => difference.type === type && name.startsWith(difference.under),
      );
      const expected =
        known && recorded && 'returned' in recorded
          ? { returned: known.recorded(recorded.returned as Record<string, unknown>) }
          : recorded;
      expect(endings.get(name)).toEqual(expected);
    },
  );

  it('lists only differences some history has', async () => {
    for (const difference of KNOWN_DIFFERENCES) {
      const affected: string[] = [];
      for (const name of stored.filter((each) => each.startsWith(difference.under))) {
        if (workflowTypeOf(await readStoredHistory(name)) === difference.type) affected.push(name);
      }
      expect(affected.length, difference.why).toBeGreaterThan(0);
      // Each affected history does end otherwise than today's code: the entry is needed.
      for (const name of affected)
        expect(endings.get(name), `${name}: ${difference.why}`).not.toEqual(await recordedEnding(name));
    }
  });
});
