// Activities: the side effects workflows schedule, built by a factory from injected dependencies
// so tests and the worker wire the same code to real services.
import type { Database } from '../lib/database.ts';
import type { Logger } from '../lib/logger.ts';
import type { TokenCipher } from '../lib/token-cipher.ts';
import { createTokenStore } from '../lib/token-store.ts';
import type { Client } from '@temporalio/client';
import type { WalletClient } from '../wallet/index.ts';
import { createReconcileActivities } from './reconcile.ts';
import { createEmbeddedSessionActivities } from './embedded-session.ts';
import { createFundingActivities } from './funding.ts';
import { createPaymentActivities } from './payment.ts';
import { createTokenVault } from './token-vault.ts';

export interface ActivityDependencies {
  database: Database;
  wallet: WalletClient;
  cipher: TokenCipher;
  logger: Logger;
  /** For the reconciliation sweep, which looks at workflows and may start one. */
  temporal: Client;
  taskQueue: string;
  now?: () => number;
}

export function createActivities(deps: ActivityDependencies) {
  const vault = createTokenVault({
    database: deps.database,
    tokens: createTokenStore(deps.cipher),
    wallet: deps.wallet,
    logger: deps.logger,
    ...(deps.now ? { now: deps.now } : {}),
  });
  return {
    ...createEmbeddedSessionActivities({ database: deps.database, wallet: deps.wallet, tokens: createTokenStore(deps.cipher), cipher: deps.cipher, logger: deps.logger }),
    ...createFundingActivities({ database: deps.database, wallet: deps.wallet, vault, cipher: deps.cipher, logger: deps.logger }),
    ...createPaymentActivities({ database: deps.database, wallet: deps.wallet, vault, logger: deps.logger }),
    ...createReconcileActivities({ database: deps.database, wallet: deps.wallet, temporal: deps.temporal, taskQueue: deps.taskQueue, logger: deps.logger }),
  };
}

export type Activities = ReturnType<typeof createActivities>;
