// An activity that met a full database line (lib/admission.ts Overloaded, or Prisma's own load
// time-out behind it) fails retryable, after the line's Retry-After: nothing it would have written
// was written, so a load refusal is tried again, never read as a final answer.
import { ApplicationFailure } from '@temporalio/activity';
import { overloadOf } from '../lib/admission.ts';

type ActivityFunction = (...args: never[]) => Promise<unknown>;

/** The ApplicationFailure type of an activity the database could not take now. */
export const databaseOverloadedType = 'DatabaseOverloaded';

/** `error` as a retryable failure when it is a load refusal; otherwise `error` itself. */
export function retryableWhenOverloaded(error: unknown): unknown {
  const overload = overloadOf(error);
  // A refused connection may be a failover or an outage, not a burst: the activity's own retry policy and its backoff
  // (a funding's create tries for minutes), never a fixed 2 s that would spend its attempts in half a minute.
  if (!overload || overload.connectionRefused) return error;
  return ApplicationFailure.create({
    message: `the database could not take this now (${overload.reason}): nothing was written; tried again`,
    type: databaseOverloadedType,
    nonRetryable: false,
    nextRetryDelay: overload.retryAfterSeconds * 1000,
  });
}

/** The same activities, each failing retryable (after Retry-After) when the database refused it for load. */
export function withOverloadRetry<T extends Record<string, ActivityFunction>>(activities: T): T {
  const wrapped: Record<string, ActivityFunction> = {};
  for (const [name, activity] of Object.entries(activities)) {
    wrapped[name] = async (...args) => {
      try {
        return await activity(...args);
      } catch (error) {
        throw retryableWhenOverloaded(error);
      }
    };
  }
  return wrapped as T;
}
