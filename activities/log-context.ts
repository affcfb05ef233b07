// Every log line an activity writes carries its workflow id, run id and activity type: each
// activity runs inside a log context (lib/log-context.ts) filled from the Temporal activity
// Context, so the loggers the activities got from their dependencies need no change.
import { Context } from '@temporalio/activity';
import { withLogContext } from '../lib/log-context.ts';

type ActivityFunction = (...args: never[]) => Promise<unknown>;

function currentActivityFields(): Record<string, string> | undefined {
  let info: Context['info'];
  try {
    info = Context.current().info;
  } catch {
    return undefined; // called outside a worker (a test calling the function directly)
  }
  // workflowExecution is absent only for an activity started on its own, outside a workflow.
  const execution = info.workflowExecution;
  return {
    ...(execution ? { workflowId: execution.workflowId, runId: execution.runId } : {}),
    activityType: info.activityType,
    activityId: info.activityId,
  };
}

/** The same activities, each run inside its activity's log context. */
export function withActivityLogContext<T extends Record<string, ActivityFunction>>(activities: T): T {
  const wrapped: Record<string, ActivityFunction> = {};
  for (const [name, activity] of Object.entries(activities)) {
    wrapped[name] = (...args) => {
      const fields = currentActivityFields();
      return fields ? withLogContext(fields, () => activity(...args)) : activity(...args);
    };
  }
  return wrapped as T;
}
