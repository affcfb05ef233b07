// The Temporal Schedule that runs the reconciliation sweep every few minutes. Created by the
// worker at start if missing; overlapping runs are skipped.
import { ScheduleAlreadyRunning, type Client } from '@temporalio/client';

export const reconcileScheduleId = 'walletflow-reconcile';

export async function ensureReconcileSchedule(
  client: Client,
  options: { taskQueue: string; everyMinutes: number; olderThanSeconds: number },
): Promise<'created' | 'exists'> {
  try {
    await client.schedule.create({
      scheduleId: reconcileScheduleId,
      spec: { intervals: [{ every: `${options.everyMinutes} minutes` }] },
      action: {
        type: 'startWorkflow',
        workflowType: 'reconcileFundings',
        taskQueue: options.taskQueue,
        args: [{ olderThanSeconds: options.olderThanSeconds }],
      },
      policies: { overlap: 'SKIP' },
    });
    return 'created';
  } catch (error) {
    if (error instanceof ScheduleAlreadyRunning) return 'exists';
    throw error;
  }
}
