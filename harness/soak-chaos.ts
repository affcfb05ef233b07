// The soak's chaos: seeded sandbox faults on every wallet endpoint, and process chaos (worker
// SIGKILL, worker SIGSTOP for longer than a workflow task's time-out and SIGCONT, API SIGTERM and
// restart, Temporal dev server stop and start) at milestones of the run.
import type { LocalStack } from './local-stack.ts';

export interface FaultRule {
  endpoint: string;
  mode: string;
  rate: number;
  status?: number;
  delayMs?: number;
}

/**
 * Faults per endpoint. Transfers take the worst (the workflow reconciles by retrieve). Payment
 * execute has no retrieve: mostly faults that land before the effect (made good by a retry), and a
 * few after it, which end in NEEDS_REVIEW for ops. Token rotation (op.tokens) gets only faults
 * before the effect: an embedded refresh whose answer is lost has spent the refresh token, and
 * the link rightly needs the user again (REAUTH_REQUIRED), an outcome this soak does not plan.
 */
export function faultRules(): FaultRule[] {
  const before = (endpoint: string, rate = 0.05): FaultRule[] => [
    { endpoint, mode: 'error-before-effect', rate },
    { endpoint, mode: 'temporary-failure', rate },
    { endpoint, mode: 'rate-limited', rate },
    { endpoint, mode: 'latency', rate: 0.15, delayMs: 150 },
  ];
  return [
    { endpoint: 'transfers.create', mode: 'reset-after-effect', rate: 0.2 },
    { endpoint: 'transfers.create', mode: 'garbage-body', rate: 0.03 },
    ...before('transfers.create'),
    { endpoint: 'transfers.execute', mode: 'error-after-effect', rate: 0.3 },
    // A slow gateway: answered 504 at once, processed seconds later (contract section 9).
    { endpoint: 'transfers.execute', mode: 'late-effect', rate: 0.08, delayMs: 4000 },
    { endpoint: 'transfers.execute', mode: 'garbage-body', rate: 0.03 },
    ...before('transfers.execute'),
    { endpoint: 'transfers.retrieve', mode: 'garbage-body', rate: 0.05 },
    ...before('transfers.retrieve', 0.08),
    { endpoint: 'op.payments.create', mode: 'reset-after-effect', rate: 0.2 },
    ...before('op.payments.create'),
    { endpoint: 'op.payments.execute', mode: 'error-after-effect', rate: 0.1 },
    { endpoint: 'op.payments.execute', mode: 'late-effect', rate: 0.04, delayMs: 3000 },
    ...before('op.payments.execute', 0.06),
    ...before('op.tokens'),
    { endpoint: 'op.profile', mode: 'garbage-body', rate: 0.05 },
    ...before('op.profile'),
    { endpoint: 'connect.token', mode: 'garbage-body', rate: 0.03 },
    ...before('connect.token'),
  ];
}

export type ChaosAction = 'worker-kill' | 'worker-pause' | 'api-restart' | 'temporal-restart';

export interface ChaosCounts {
  'worker-kill': number;
  'worker-pause': number;
  'api-restart': number;
  'temporal-restart': number;
}

/** The order actions come in: the workers most often (killed or paused), the API and Temporal in turn. */
const cycle: ChaosAction[] = [
  'worker-kill',
  'worker-pause',
  'api-restart',
  'temporal-restart',
  'worker-pause',
  'worker-kill',
  'worker-pause',
];

/**
 * How long a paused worker stays stopped: longer than a workflow task's time-out (10 s), so its
 * tasks go to the other worker while its local activities (a one pass) are frozen mid-way, and
 * go on when it continues: an orphaned pass overlapping a new workflow task, for real.
 */
const PAUSE_MIN_MS = 12_000;
const PAUSE_SPREAD_MS = 3_000;

/**
 * How many actions a run of `total` requests gets: at least one of each of the four kinds as the
 * requests go out and the finale, then one per 25 requests.
 */
export function plannedActions(total: number): number {
  return Math.max(5, Math.ceil(total / 25));
}

/**
 * The requests posted when each action fires while requests go out: evenly spaced, the last
 * milestone (the last request) left to the finale, which fires after every request is out.
 */
export function chaosMilestones(total: number): number[] {
  const actions = plannedActions(total);
  const step = total / actions;
  return Array.from({ length: actions }, (_, index) => Math.ceil(step * (index + 1))).filter((at) => at < total);
}

/** What the soak says chaos will do to a run of `total` requests: the actions that fire, the finale included. */
export function chaosPlanLine(total: number): string {
  const during = chaosMilestones(total).length;
  return `${during + 1} process chaos actions (${during} as the requests go out, 1 after the last)`;
}

export interface Chaos {
  /** Tells chaos how many requests are posted; actions fire at evenly spaced milestones. */
  progress(posted: number): void;
  /** One more action after the last request (stragglers are still reconciling). */
  finale(): void;
  /** Resolves when every queued action is done. */
  drain(): Promise<void>;
  counts: ChaosCounts;
  log: string[];
}

export function createChaos(
  stack: LocalStack,
  options: { total: number; random: () => number; log: (line: string) => void },
): Chaos {
  const counts: ChaosCounts = { 'worker-kill': 0, 'worker-pause': 0, 'api-restart': 0, 'temporal-restart': 0 };
  const history: string[] = [];
  const milestones = chaosMilestones(options.total);
  let fired = 0;
  let queue: Promise<void> = Promise.resolve();
  const started = Date.now();

  const perform = async (action: ChaosAction) => {
    // A seeded gap: the previous action's effects play out first (a restarted worker is polling
    // again before Temporal goes away), and actions do not land on the same step of every workflow.
    await sleep(1000 + Math.floor(options.random() * 2000));
    const at = ((Date.now() - started) / 1000).toFixed(1);
    const begun = Date.now();
    switch (action) {
      case 'worker-kill':
        await stack.worker.stop('SIGKILL');
        await sleep(200 + Math.floor(options.random() * 1500));
        stack.worker.start();
        // Polling again before the next action (a Temporal restart should meet a running worker).
        await stack.worker.waitForOutput(/worker polling/, 30_000).catch(() => undefined);
        break;
      case 'worker-pause': {
        // A stop-the-world pause (a GC stall, a frozen VM): SIGSTOP, then SIGCONT.
        const target = stack.workers[Math.floor(options.random() * stack.workers.length)]!;
        const pid = target.pid();
        if (pid === undefined) break;
        process.kill(pid, 'SIGSTOP');
        try {
          await sleep(PAUSE_MIN_MS + Math.floor(options.random() * PAUSE_SPREAD_MS));
        } finally {
          try {
            process.kill(pid, 'SIGCONT');
          } catch {
            // It exited meanwhile (killed by a stop): nothing to continue.
          }
        }
        break;
      }
      case 'api-restart':
        await stack.api.stop('SIGTERM', 15_000);
        stack.api.start();
        await stack.apiListening(60_000);
        break;
      case 'temporal-restart':
        await stack.restartTemporal(500 + Math.floor(options.random() * 2000));
        break;
    }
    counts[action] += 1;
    const line = `+${at}s ${action} (${((Date.now() - begun) / 1000).toFixed(1)}s)`;
    history.push(line);
    options.log(`chaos: ${line}`);
  };
  const enqueue = (action: ChaosAction) => {
    queue = queue
      .then(() => perform(action))
      .catch((error: Error) => options.log(`chaos: ${action} failed: ${error.message}`));
  };

  return {
    progress(posted) {
      while (fired < milestones.length && posted >= milestones[fired]!) {
        enqueue(cycle[fired % cycle.length]!);
        fired += 1;
      }
    },
    finale() {
      enqueue('worker-kill');
    },
    drain: () => queue,
    counts,
    log: history,
  };
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
