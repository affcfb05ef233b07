// purgeExpired: deletes expired login states, login grants, web sessions and embedded sessions past
// their retention margin, run by a Temporal Schedule (worker/purge-schedule.ts). One activity: a
// few bounded batches of deletes, each retry deleting what is left.
import { proxyActivities, setWorkflowOptions } from '@temporalio/workflow';
import type { PurgeExpiredActivities, PurgeExpiredInput, PurgeExpiredResult } from './purge-expired.contract.ts';

const { purgeExpiredRows } = proxyActivities<PurgeExpiredActivities>({
  startToCloseTimeout: '10 minutes',
  heartbeatTimeout: '1 minute',
  retry: { initialInterval: '5 seconds', backoffCoefficient: 2, maximumInterval: '1 minute', maximumAttempts: 5 },
});

// Auto-upgrade (docs/changing-workflows.md): a run moves to the current build at its next workflow
// task (a timer firing, an activity finishing, a signal), and that build replays its history: a
// change to its commands goes behind patched() while a run of the code before may be open.
setWorkflowOptions({ versioningBehavior: 'AUTO_UPGRADE' }, purgeExpired);

export async function purgeExpired(input: PurgeExpiredInput): Promise<PurgeExpiredResult> {
  return purgeExpiredRows(input);
}
