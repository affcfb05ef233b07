// Checks of the ops commands' flags before any request (exit 64 on a bad one): list filters,
// resolve outcomes and notes. Values that may be secret are never echoed.
import { CliInputError, exitCodes } from './exit-codes.ts';

export interface ListOptions {
  status?: string;
  from?: string;
  to?: string;
  limit?: string;
  cursor?: string;
}

const isoWithOffset = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/;

const usage = (message: string) => new CliInputError(message, exitCodes.usage);

/** The list filters as query parameters; the API checks the values themselves (400 on a bad one). */
export function listQuery(options: ListOptions): Record<string, string | number> {
  const query: Record<string, string | number> = {};
  if (options.status) query.status = options.status.trim().toUpperCase();
  for (const name of ['from', 'to'] as const) {
    const value = options[name]?.trim();
    if (!value) continue;
    if (!isoWithOffset.test(value) || Number.isNaN(Date.parse(value)))
      throw usage(`--${name} must be an ISO-8601 time with an offset, e.g. 2026-01-31T00:00:00+08:00`);
    query[name] = value;
  }
  if (options.cursor) query.cursor = options.cursor.trim();
  if (options.limit !== undefined) {
    const limit = Number(options.limit);
    if (!Number.isInteger(limit) || limit < 1 || limit > 200)
      throw usage('--limit must be a whole number from 1 to 200');
    query.limit = limit;
  }
  return query;
}

export function parseOutcome<T extends string>(given: string, allowed: readonly T[]): T {
  const outcome = given.trim().toUpperCase();
  if (!(allowed as readonly string[]).includes(outcome)) throw usage(`--outcome must be ${allowed.join(' or ')}`);
  return outcome as T;
}

export function parseNote(given: string): string {
  const note = given.trim();
  if (note.length < 1 || note.length > 500)
    throw usage('--note must be 1 to 500 characters (why, as checked with the wallet operator)');
  return note;
}
