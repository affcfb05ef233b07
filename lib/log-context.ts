// Fields that every log line written inside a unit of work carries: the request id of an API
// request, the workflow id, run id and activity type of an activity. The logger (lib/logger.ts)
// reads them from here, so code deep inside (services, the vault, the wallet call log) need not
// pass a child logger along. Ids only: never a token or a code.
import { AsyncLocalStorage } from 'node:async_hooks';

export type LogContext = Readonly<Record<string, string>>;

const storage = new AsyncLocalStorage<LogContext>();

/** Runs `work` with `fields` added to every log line it writes (nested contexts add to the outer one). */
export function withLogContext<T>(fields: LogContext, work: () => T): T {
  const outer = storage.getStore();
  return storage.run(outer ? { ...outer, ...fields } : fields, work);
}

export function currentLogContext(): LogContext | undefined {
  return storage.getStore();
}
