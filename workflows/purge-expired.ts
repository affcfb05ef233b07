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

// Auto-upgrade (docs/changing-workflows.md): a long-lived workflow that continues as new moves to
// the current build; a change to its commands still needs a patch (or its next run to pick it up).
setWorkflowOptions({ versioningBehavior: 'AUTO_UPGRADE' }, purgeExpired);

export async function purgeExpired(input: PurgeExpiredInput): Promise<PurgeExpiredResult> {
  return purgeExpiredRows(input);
}
