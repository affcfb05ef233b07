// The session onboarding workflow's activities: the session's onboarding itself lives in
// links/embedded-onboarding.ts (the landing page runs it too when the user is already there);
// these map its outcomes to Temporal's retries and failures. Results carry ids and codes.
import { ApplicationFailure } from '@temporalio/activity';
import type { OnboardEmbeddedSessionResult } from '../domain/embedded-session.ts';
import type { Database, RefreshPool } from '../lib/database.ts';
import type { Logger } from '../lib/logger.ts';
import { createSessionOnboarding } from '../links/embedded-onboarding.ts';
import type { TokenCipher } from '../lib/token-cipher.ts';
import type { TokenStore } from '../links/token-store.ts';
import {
  embeddedSessionFailureTypes,
  type OnboardEmbeddedSessionActivities,
} from '../workflows/onboard-embedded-session.contract.ts';
import type { WalletClient } from '../wallet/index.ts';
import { walletRetry } from './wallet-retry.ts';

export interface EmbeddedSessionActivityDependencies {
  database: Database;
  wallet: Pick<WalletClient, 'getProfile' | 'refreshEmbedded'>;
  tokens: TokenStore;
  cipher: TokenCipher;
  logger: Logger;
  refreshPool: RefreshPool;
  walletTimeoutMs?: number;
}

export function createEmbeddedSessionActivities(
  deps: EmbeddedSessionActivityDependencies,
): OnboardEmbeddedSessionActivities {
  const onboarding = createSessionOnboarding(deps);
  return {
    async linkEmbeddedSession(sessionRecordId: string): Promise<OnboardEmbeddedSessionResult> {
      const outcome = await onboarding.link(sessionRecordId);
      switch (outcome.kind) {
        case 'done':
          return outcome.result;
        case 'retry':
          throw walletRetry(
            outcome.error,
            `profile ${outcome.error.outcome}: ${outcome.error.code} (${outcome.error.requestReferenceNo})`,
          );
        case 'not-found':
          throw ApplicationFailure.nonRetryable(
            `embedded session ${sessionRecordId} does not exist`,
            embeddedSessionFailureTypes.notFound,
          );
        case 'corrupt':
          throw ApplicationFailure.nonRetryable('embedded session has no tokens', embeddedSessionFailureTypes.corrupt);
      }
    },

    failEmbeddedSession: (sessionRecordId: string, code: string): Promise<OnboardEmbeddedSessionResult> =>
      onboarding.fail(sessionRecordId, code),
  };
}
