// A wallet call that failed in a way worth trying again becomes a retryable activity failure. The
// message carries codes only. When the service said when to come back (429 with Retry-After,
// contract-decisions section 2), the next attempt waits exactly that long instead of the retry
// policy's backoff; an absurd Retry-After is capped so a funding never sleeps for hours on it.
import { ApplicationFailure } from '@temporalio/activity';
import type { TokenRefreshBusy } from '../links/token-vault.ts';
import { MAX_RETRY_AFTER_MS, retryDelayOf, type WalletError } from '../wallet/index.ts';

/** The ApplicationFailure type of a wallet call worth trying again. */
export const walletTransientType = 'WalletTransient';

/** A failure walletRetry made: the wallet could not answer now (a 429, a 5xx, no answer). */
export function isWalletTransient(error: unknown): boolean {
  return error instanceof ApplicationFailure && error.type === walletTransientType;
}

export function walletRetry(
  error: WalletError,
  message = `${error.operation} ${error.outcome}: ${error.code} (${error.requestReferenceNo})`,
): ApplicationFailure {
  const nextRetryDelay = retryDelayOf(error);
  return ApplicationFailure.create({
    message,
    type: walletTransientType,
    nonRetryable: false,
    // The wallet's "too many requests" (429), told apart from other transient failures: a batch
    // slows down as a whole on it, not on a reset connection (activities/batch.ts).
    details: [{ rateLimited: error.httpStatus === 429 }],
    ...(nextRetryDelay === undefined ? {} : { nextRetryDelay }),
  });
}

/**
 * A token refresh the vault did not send (its line was full): nothing reached the wallet, so it
 * is tried again as a transient wallet failure would be, after the line's wait; never the
 * wallet's 429, so a batch does not slow down for it.
 */
export function refreshBusyRetry(error: TokenRefreshBusy): ApplicationFailure {
  return ApplicationFailure.create({
    message: `token refresh not sent: ${error.code}`,
    type: walletTransientType,
    nonRetryable: false,
    details: [{ rateLimited: false }],
    nextRetryDelay: Math.min(Math.max(error.retryAfterMs, 0), MAX_RETRY_AFTER_MS),
  });
}

/** Whether a failure made by walletRetry was the wallet's 429. */
export function isRateLimited(failure: ApplicationFailure): boolean {
  const [first] = failure.details ?? [];
  return typeof first === 'object' && first !== null && (first as { rateLimited?: unknown }).rateLimited === true;
}
