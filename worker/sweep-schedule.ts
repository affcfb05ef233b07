// The Temporal Schedule that runs the sweep every few minutes. Created by the worker at start if
// missing, with the interval, age and task queue it has; one that exists is left as it is (a
// changed setting reaches it once it is deleted: docs/operations.md). Overlapping runs are skipped.
import { ScheduleAlreadyRunning, type Client } from '@temporalio/client';
import { sweepScheduleAction, sweepScheduleId } from '../workflows/sweep.contract.ts';

export async function ensureSweepSchedule(
  client: Client,
  options: { taskQueue: string; everyMinutes: number; olderThanSeconds: number },
): Promise<'created' | 'exists'> {
  try {
    await client.schedule.create({
      scheduleId: sweepScheduleId,
      spec: { intervals: [{ every: `${options.everyMinutes} minutes` }] },
      action: sweepScheduleAction({
        taskQueue: options.taskQueue,
        input: { olderThanSeconds: options.olderThanSeconds },
      }),
      policies: { overlap: 'SKIP' },
    });
    return 'created';
  } catch (error) {
    if (error instanceof ScheduleAlreadyRunning) return 'exists';
    throw error;
  }
}
