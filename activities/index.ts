// Activities: the side effects workflows schedule, built by a factory from injected dependencies
// so tests and the worker wire the same code to real services.
import type { Database } from '../lib/database.ts';
import type { Logger } from '../lib/logger.ts';
import type { TokenCipher } from '../lib/token-cipher.ts';
import { createTokenStore } from '../lib/token-store.ts';
import type { WalletClient } from '../wallet/index.ts';
import { createFundingActivities } from './funding.ts';
import { createPaymentActivities } from './payment.ts';
import { createTokenVault } from './token-vault.ts';

export interface ActivityDependencies {
  database: Database;
  wallet: WalletClient;
  cipher: TokenCipher;
  logger: Logger;
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
    ...createFundingActivities({ database: deps.database, wallet: deps.wallet, vault, cipher: deps.cipher, logger: deps.logger }),
    ...createPaymentActivities({ database: deps.database, wallet: deps.wallet, vault, logger: deps.logger }),
  };
}

export type Activities = ReturnType<typeof createActivities>;
