// reconcileFundings: one sweep, run by a Temporal Schedule every few minutes (and
// once by `walletflow sweep`). The sweep is one activity: it is a batch of database reads,
// wallet retrieves and repairs, each repair idempotent.
import { proxyActivities, setWorkflowOptions } from '@temporalio/workflow';
import type { ReconcileFundingsActivities, ReconcileFundingsInput, ReconcileFundingsResult } from './reconcile.contract.ts';

/**
 * The heartbeat time-out cuts an attempt that stopped telling Temporal it is alive (a paused or
 * lost worker) in seconds; the attempt itself stops at its next item once its heartbeat is
 * answered cancelled, and every repair it would still write is fenced.
 */
const { sweepStuckFundings } = proxyActivities<ReconcileFundingsActivities>({
  startToCloseTimeout: '5 minutes',
  heartbeatTimeout: '30 seconds',
  retry: { initialInterval: '5 seconds', backoffCoefficient: 2, maximumInterval: '1 minute', maximumAttempts: 5 },
});

// Auto-upgrade (docs/changing-workflows.md): a long-lived workflow that continues as new moves to
// the current build; a change to its commands still needs a patch (or its next run to pick it up).
setWorkflowOptions({ versioningBehavior: 'AUTO_UPGRADE' }, reconcileFundings);

export async function reconcileFundings(input: ReconcileFundingsInput): Promise<ReconcileFundingsResult> {
  return sweepStuckFundings(input);
}
