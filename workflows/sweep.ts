// The sweep's workflow (its type keeps the first name, reconcileFundings: workflows/sweep.contract.ts): one sweep, run
// by a Temporal Schedule every few minutes (and
// once by `walletflow sweep`). The sweep is one activity: it is a batch of database reads,
// wallet retrieves and repairs, each repair idempotent.
import { proxyActivities, setWorkflowOptions } from '@temporalio/workflow';
import type { SweepActivities, SweepInput, SweepReport } from './sweep.contract.ts';

/**
 * The heartbeat time-out cuts an attempt that stopped telling Temporal it is alive (a paused or
 * lost worker) in seconds; the attempt itself stops at its next item once its heartbeat is
 * answered cancelled, and every repair it would still write is fenced.
 */
const { sweepStuckFundings } = proxyActivities<SweepActivities>({
  startToCloseTimeout: '5 minutes',
  heartbeatTimeout: '30 seconds',
  retry: { initialInterval: '5 seconds', backoffCoefficient: 2, maximumInterval: '1 minute', maximumAttempts: 5 },
});

// Auto-upgrade (docs/changing-workflows.md): a run moves to the current build at its next workflow
// task (a timer firing, an activity finishing, a signal), and that build replays its history: a
// change to its commands goes behind patched() while a run of the code before may be open.
setWorkflowOptions({ versioningBehavior: 'AUTO_UPGRADE' }, reconcileFundings);

export async function reconcileFundings(input: SweepInput): Promise<SweepReport> {
  return sweepStuckFundings(input);
}
