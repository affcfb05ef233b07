// The audit of ops writes (contract-decisions section 12: every action records the key's name):
// one row per write request to the ops API, whatever it answered (a refusal too), with the ops
// key's name when a valid one was presented (and the X-Ops-Actor note). The only writer of
// ops_action. Rows are written behind the answers, a few at a time, and a write that fails is
// tried again (with a growing wait) until it lands: an audit row is never only logged. What waits
// is bounded; past it the oldest rows are dropped, counted and logged, never the process's memory.
import type { Database } from '../lib/database.ts';
import type { Logger } from '../lib/logger.ts';

export interface OpsActionEntry {
  /** The key's name; null when no valid key was presented (a 401). */
  keyName: string | null;
  /** The X-Ops-Actor note, when the caller gave a well-formed one. */
  actor: string | null;
  method: string;
  path: string;
  status: number;
  requestId: string | null;
  /** When the request was answered (rows written later keep the moment of the act). */
  at?: Date;
  /** Where: the ops API (default) or the console. */
  channel?: 'api' | 'console';
}

export interface OpsActionLog {
  /** Queues the row; it is written shortly, and again until it lands. */
  record(entry: OpsActionEntry): void;
  /** Waits until every row recorded so far is written, or `timeoutMs` passed; true when all are. */
  drain(timeoutMs?: number): Promise<boolean>;
  /** Rows waiting to be written, and rows dropped because too many waited (tests, metrics). */
  state(): { waiting: number; dropped: number };
}

export interface OpsActionLogOptions {
  /** Rows per INSERT; default 500. */
  batchSize?: number;
  /** Rows that may wait; past it the oldest go. Default 100,000 (about 30 MB). */
  maxWaiting?: number;
  /** Waits after failed writes, the last one repeated; default 250 ms doubling to 10 s. */
  retryDelaysMs?: readonly number[];
}

const DEFAULT_RETRY_DELAYS_MS = [250, 500, 1000, 2000, 5000, 10_000];

const rowOf = (entry: OpsActionEntry) => ({
  keyName: entry.keyName?.slice(0, 128) ?? null,
  actor: entry.actor?.slice(0, 100) ?? null,
  method: entry.method.slice(0, 8),
  path: entry.path.slice(0, 512),
  status: entry.status,
  requestId: entry.requestId?.slice(0, 64) ?? null,
  at: entry.at ?? new Date(),
  channel: entry.channel ?? 'api',
});

export function createOpsActionLog(database: Database, logger: Logger, options: OpsActionLogOptions = {}): OpsActionLog {
  const batchSize = options.batchSize ?? 500;
  const maxWaiting = options.maxWaiting ?? 100_000;
  const delays = options.retryDelaysMs ?? DEFAULT_RETRY_DELAYS_MS;
  const waiting: Array<ReturnType<typeof rowOf>> = [];
  let dropped = 0;
  let writing: Promise<void> | null = null;
  const drained: Array<() => void> = [];

  async function writeAll(): Promise<void> {
    let failures = 0;
    while (waiting.length > 0) {
      const rows = waiting.slice(0, batchSize);
      try {
        await database.opsAction.createMany({ data: rows });
        // Only what was written leaves the line (rows dropped meanwhile shifted it: drop by identity).
        const written = new Set(rows);
        let kept = 0;
        for (const row of waiting) if (!written.has(row)) waiting[kept++] = row;
        waiting.length = kept;
        failures = 0;
      } catch (error) {
        const delay = delays[Math.min(failures, delays.length - 1)]!;
        failures += 1;
        logger.error({ err: (error as Error).message, waiting: waiting.length, retryInMs: delay }, 'could not write ops audit rows: trying again');
        await new Promise((resolve) => setTimeout(resolve, delay).unref());
      }
    }
    for (const resolve of drained.splice(0)) resolve();
  }

  function startWriting(): void {
    if (writing) return;
    writing = writeAll().finally(() => {
      writing = null;
      if (waiting.length > 0) startWriting();
    });
  }

  return {
    record(entry) {
      waiting.push(rowOf(entry));
      if (waiting.length > maxWaiting) {
        const over = waiting.length - maxWaiting;
        waiting.splice(0, over);
        dropped += over;
        logger.error({ dropped: over, waiting: waiting.length }, 'ops audit rows dropped: too many waited to be written');
      }
      startWriting();
    },
    async drain(timeoutMs = 10_000) {
      if (waiting.length === 0) return true;
      let timer: NodeJS.Timeout | undefined;
      const done = await Promise.race([
        new Promise<boolean>((resolve) => drained.push(() => resolve(true))),
        new Promise<boolean>((resolve) => {
          timer = setTimeout(() => resolve(false), timeoutMs);
        }),
      ]);
      clearTimeout(timer);
      return done;
    },
    state: () => ({ waiting: waiting.length, dropped }),
  };
}
