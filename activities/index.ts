// Activities: the side effects workflows schedule, built by a factory from injected dependencies
// so tests and the worker wire the same code to real services.
import type { Database } from '../lib/database.ts';
import type { Logger } from '../lib/logger.ts';

export interface ActivityDependencies {
  database: Database;
  logger: Logger;
}

export function createActivities(_deps: ActivityDependencies) {
  return {};
}

export type Activities = ReturnType<typeof createActivities>;
