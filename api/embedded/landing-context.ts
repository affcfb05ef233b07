// What every part of the landing page shares (landing.ts puts the parts together): its
// dependencies, the clock, and the request's web session, read once per request because the rate
// limit and the route both need it.
import type { Request } from 'express';
import type { Database } from '../../lib/database.ts';
import type { Logger } from '../../lib/logger.ts';
import type { TokenVault } from '../../links/token-vault.ts';
import type { FundingService } from '../../fundings/funding-service.ts';
import type { PaymentService } from '../../payments/payment-service.ts';
import type { Ledger } from '../../ledger/ledger.ts';
import type { FundingLimits } from '../../ledger/limits.ts';
import type { RateLimiter } from '../http/rate-limit.ts';
import type { OnboardingDispatcher } from './onboarding-dispatcher.ts';
import { readAppSession, type AppSessionView } from './web-sessions.ts';

export interface LandingDependencies {
  database: Database;
  /** A session whose onboarding has not started yet (still in the outbox) has it started when its user arrives. */
  onboarding: Pick<OnboardingDispatcher, 'expedite'>;
  fundings: Pick<FundingService, 'start'>;
  payments: Pick<PaymentService, 'start'>;
  vault: Pick<TokenVault, 'getAccessToken'>;
  /** The user's partner balance (USER:{partnerUserId}). */
  ledger: Pick<Ledger, 'account'>;
  /** Section 10's limits: what the page offers never exceeds them; absent: none. */
  limits?: FundingLimits;
  logger: Logger;
  webSessionTtlMs: number;
  /** true: always Secure cookies (PUBLIC_URL is https); absent: Secure when the request came over HTTPS. */
  secureCookies?: boolean | undefined;
  /** How long GET /app waits for onboarding before it shows the loading page. */
  onboardingWaitMs?: number;
  /** Requests per client address under /app (PUBLIC_RATE_LIMIT_PER_MINUTE); absent: unlimited. */
  rateLimiter?: RateLimiter;
  /**
   * The pages' own status polls of a live web session (GET /app/status, /app/activity,
   * /app/withdrawals/{id}/status, /app/deposits/{id}/status), counted per web session
   * (WEB_SESSION_POLL_LIMIT_PER_MINUTE) instead of against the address: many users behind one
   * carrier NAT share an address. A poll without a live web session counts against the address.
   * Absent: polls count against the address like everything else.
   */
  pollRateLimiter?: RateLimiter;
  now?: () => number;
}

export interface LandingContext {
  deps: LandingDependencies;
  now: () => number;
  /** The request's live web session, or null; read from the database once per request. */
  sessionOf(req: Request): Promise<AppSessionView | null>;
}

export function createLandingContext(deps: LandingDependencies): LandingContext {
  const now = deps.now ?? Date.now;
  const sessions = new WeakMap<Request, Promise<AppSessionView | null>>();
  return {
    deps,
    now,
    sessionOf: (req) => {
      let session = sessions.get(req);
      if (!session) {
        session = readAppSession(deps.database, req, new Date(now()));
        sessions.set(req, session);
      }
      return session;
    },
  };
}
