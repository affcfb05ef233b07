// Whether an activity failed with a given ApplicationFailure type, as a workflow sees it: wrapped
// in an ActivityFailure, or, for a local activity's own failure, possibly unwrapped. Part of the
// workflow bundle.
import { ActivityFailure, ApplicationFailure } from '@temporalio/workflow';

export function failedWith(error: unknown, type: string): boolean {
  const failure = error instanceof ActivityFailure ? error.cause : error;
  return failure instanceof ApplicationFailure && failure.type === type;
}
