// The purge activity: deletes expired login states, login grants, web sessions and embedded
// sessions, console sign-ins never finished and ended console sessions past a retention margin,
// and attempt counts no limit reads any more (they tell an incident nothing), and the audit's
// budget counts of minutes that are over (the summary rows keep their counts), in bounded batches
// (links/purge.ts says what is kept for the audit and why). Scheduled by the purgeExpired
// workflow; idempotent: a retry deletes what is left.
import { Context } from '@temporalio/activity';
import type { Logger } from '../lib/logger.ts';
import { databaseNow, type Database } from '../lib/database.ts';
import { purgeTables, type PurgeTable } from '../domain/purge.ts';
import { purgeExpiredBatch } from '../links/purge.ts';
import { purgeEndedConsoleRows } from '../access/console-sessions.ts';
import { purgeSpentAttemptCounts } from '../access/attempt-limits.ts';
import { purgeSpentAuditBudgets } from '../audit/ops-actions.ts';
import type { PurgeExpiredActivities, PurgeInput, PurgeReport } from '../workflows/purge-expired.contract.ts';

export interface PurgeDependencies {
  database: Database;
  logger: Logger;
  /** Tests only: the time taken for the database's clock; absent: the database's now(). */
  now?: () => number;
}

const DEFAULT_BATCH_SIZE = 500;
const DEFAULT_MAX_BATCHES = 100;

export function createPurgeActivities(deps: PurgeDependencies): PurgeExpiredActivities {
  return {
    async purgeExpiredRows(input: PurgeInput): Promise<PurgeReport> {
      const batchSize = input.batchSize ?? DEFAULT_BATCH_SIZE;
      const maxBatches = input.maxBatches ?? DEFAULT_MAX_BATCHES;
      // The database's clock, as the rows' times are (a worker's clock ahead would purge what is still in use).
      const at = deps.now ? deps.now() : (await databaseNow(deps.database)).getTime();
      const cutoff = new Date(at - input.retentionSeconds * 1000);
      const batchOf = (table: PurgeTable): Promise<number> => {
        switch (table) {
          case 'console_sign_in':
          case 'console_session':
            return purgeEndedConsoleRows(deps.database, table, cutoff, batchSize);
          case 'attempt_count':
            return purgeSpentAttemptCounts(deps.database, batchSize, deps.now);
          case 'ops_action_budget':
            return purgeSpentAuditBudgets(deps.database, batchSize);
          default:
            return purgeExpiredBatch(deps.database, table, cutoff, batchSize);
        }
      };
      const deleted = Object.fromEntries(purgeTables.map((table) => [table, 0])) as Record<PurgeTable, number>;
      const unfinished: PurgeTable[] = [];
      // Web sessions before embedded sessions: an embedded session goes once none refers to it.
      for (const table of purgeTables) {
        let batches = 0;
        for (;;) {
          const count = await batchOf(table);
          deleted[table] += count;
          batches += 1;
          heartbeat();
          if (count < batchSize) break;
          if (batches >= maxBatches) {
            unfinished.push(table);
            break;
          }
        }
      }
      deps.logger.info(
        { cutoff: cutoff.toISOString(), deleted, unfinished },
        'purged expired logins, sessions and attempt counts',
      );
      return { cutoff: cutoff.toISOString(), deleted, unfinished };
    },
  };
}

/** Tells Temporal the purge is alive, when it runs as an activity (a test may call it directly). */
function heartbeat(): void {
  try {
    Context.current().heartbeat();
  } catch {
    // Not inside an activity: nothing to tell.
  }
}
