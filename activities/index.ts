// Activities: the side effects workflows schedule, built by a factory from injected dependencies
// so tests and the worker wire the same code to real services. Each runs in a log context naming
// its workflow and activity type (activities/log-context.ts).
import type { Database } from '../lib/database.ts';
import type { Logger } from '../lib/logger.ts';
import type { Metrics } from '../lib/metrics.ts';
import type { TokenCipher } from '../links/token-cipher.ts';
import { createTokenStore } from '../links/token-store.ts';
import type { Client } from '@temporalio/client';
import type { WalletClient } from '../wallet/index.ts';
import { createReconcileActivities } from './reconcile.ts';
import { createEmbeddedSessionActivities } from './embedded-session.ts';
import { createFundingActivities } from './funding.ts';
import { createPaymentActivities } from './payment.ts';
import { createPurgeActivities } from './purge.ts';
import { withActivityLogContext } from './log-context.ts';
import { createTokenVault } from '../links/token-vault.ts';
import { createFundingRecord } from '../fundings/funding-record.ts';
import { createPaymentRecord } from '../payments/payment-record.ts';

export interface ActivityDependencies {
  database: Database;
  wallet: WalletClient;
  cipher: TokenCipher;
  logger: Logger;
  /** For the reconciliation sweep, which looks at workflows and may start one. */
  temporal: Client;
  taskQueue: string;
  /** The worker's registry (lib/metrics.ts); absent: nothing is counted. */
  metrics?: Metrics;
  now?: () => number;
}

export function createActivities(deps: ActivityDependencies) {
  // exactOptionalPropertyTypes: pass `metrics` only when there is one.
  const metrics = deps.metrics ? { metrics: deps.metrics } : {};
  const tokens = createTokenStore(deps.cipher);
  const vault = createTokenVault({
    database: deps.database,
    tokens,
    wallet: deps.wallet,
    logger: deps.logger,
    ...metrics,
    ...(deps.now ? { now: deps.now } : {}),
  });
  // One record per aggregate: the only writers of its tables, shared by the workflow's steps and the sweep.
  const fundings = createFundingRecord({ database: deps.database, cipher: deps.cipher, ...metrics });
  const payments = createPaymentRecord({ database: deps.database, ...metrics });
  return withActivityLogContext({
    ...createEmbeddedSessionActivities({ database: deps.database, wallet: deps.wallet, tokens, cipher: deps.cipher, logger: deps.logger }),
    ...createFundingActivities({ fundings, wallet: deps.wallet, vault, logger: deps.logger }),
    ...createPaymentActivities({ payments, wallet: deps.wallet, vault, logger: deps.logger }),
    ...createReconcileActivities({ fundings, payments, wallet: deps.wallet, temporal: deps.temporal, taskQueue: deps.taskQueue, logger: deps.logger, ...metrics }),
    ...createPurgeActivities({ database: deps.database, logger: deps.logger, ...(deps.now ? { now: deps.now } : {}) }),
  });
}

export type Activities = ReturnType<typeof createActivities>;
