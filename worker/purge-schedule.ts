// The Temporal Schedule that purges expired logins and sessions (workflows/purge-expired.ts).
// Created by the worker at start if missing, with the interval, retention and task queue it has;
// one that exists is left as it is (docs/operations.md). Overlapping runs are skipped.
import { ScheduleAlreadyRunning, type Client } from '@temporalio/client';
import { purgeExpiredScheduleAction, purgeScheduleId } from '../workflows/purge-expired.contract.ts';

export async function ensurePurgeSchedule(
  client: Client,
  options: { taskQueue: string; everyMinutes: number; retentionSeconds: number },
): Promise<'created' | 'exists'> {
  try {
    await client.schedule.create({
      scheduleId: purgeScheduleId,
      spec: { intervals: [{ every: `${options.everyMinutes} minutes` }] },
      action: purgeExpiredScheduleAction({
        taskQueue: options.taskQueue,
        input: { retentionSeconds: options.retentionSeconds },
      }),
      policies: { overlap: 'SKIP' },
    });
    return 'created';
  } catch (error) {
    if (error instanceof ScheduleAlreadyRunning) return 'exists';
    throw error;
  }
}
