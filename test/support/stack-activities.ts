// A stack's worker activities, built as its in-process worker builds them, for a test that calls
// activities directly (through MockActivityEnvironment, or a Worker of its own): one routine, where
// each file wrote the same dependencies out again.
import { createActivities, type ActivityDependencies } from '../../activities/index.ts';
import { createLogger } from '../../lib/logger.ts';
import { createTokenCipher } from '../../lib/token-cipher.ts';
import type { PartnerStack } from './partner-stack.ts';

/** The activities on `stack`'s database, wallet and Temporal, quiet; `extra`: what a test sets besides. */
export function stackActivities(
  stack: Pick<PartnerStack, 'database' | 'refreshPool' | 'wallet' | 'encryptionKey' | 'temporal' | 'taskQueue'>,
  extra: Partial<ActivityDependencies> = {},
): ReturnType<typeof createActivities> {
  return createActivities({
    database: stack.database,
    refreshPool: stack.refreshPool,
    wallet: stack.wallet,
    cipher: createTokenCipher(stack.encryptionKey),
    logger: createLogger({ level: 'silent' }),
    temporal: stack.temporal,
    taskQueue: stack.taskQueue,
    ...extra,
  });
}
