// A transient wallet failure becomes a retryable activity failure that waits for the wallet's
// Retry-After when it gave one (bounded), and carries codes only.
import { describe, expect, it } from 'vitest';
import { isRateLimited, refreshBusyRetry, walletRetry } from '../../activities/wallet-retry.ts';
import { MAX_RETRY_AFTER_MS, MIN_RETRY_AFTER_MS, retryDelayOf } from '../../wallet/index.ts';
import { TokenRefreshBusy } from '../../links/token-vault.ts';
import { WalletError } from '../../wallet/errors.ts';

const limited = (retryAfterMs?: number) =>
  new WalletError({
    operation: 'transfers.create',
    httpStatus: 429,
    code: 'RATE_LIMITED',
    outcome: 'retryable',
    requestReferenceNo: '3f1c2a9e-6b0d-4e57-9a51-2f8d7c1e0b44',
    ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
    serviceMessage: 'slow down',
  });

describe('walletRetry', () => {
  it('waits for Retry-After when the wallet gave one, else leaves the delay to the retry policy', () => {
    const failure = walletRetry(limited(3000));
    expect(failure.nonRetryable).toBe(false);
    expect(failure.type).toBe('WalletTransient');
    expect(failure.nextRetryDelay).toBe(3000);
    expect(failure.message).toBe('transfers.create retryable: RATE_LIMITED (3f1c2a9e-6b0d-4e57-9a51-2f8d7c1e0b44)');
    expect(walletRetry(limited()).nextRetryDelay).toBeUndefined();
  });

  it('bounds an absurd Retry-After, and waits a second for a past date or 0 (a call sent again at once, 429 after 429)', () => {
    expect(retryDelayOf(limited(86_400_000))).toBe(MAX_RETRY_AFTER_MS);
    // Before: 0, and the settlement run's retrieves went out again at once, as fast as the wallet answered.
    expect(retryDelayOf(limited(-5))).toBe(MIN_RETRY_AFTER_MS);
    expect(retryDelayOf(limited(0))).toBe(MIN_RETRY_AFTER_MS);
    expect(retryDelayOf(limited(1500))).toBe(1500);
    expect(retryDelayOf(limited())).toBeUndefined();
  });
});

describe('refreshBusyRetry', () => {
  it('a refresh the vault’s line did not take is tried again after the line’s wait, as a transient failure but never as the wallet’s 429', () => {
    const failure = refreshBusyRetry(new TokenRefreshBusy('00000000-0000-4000-8000-000000000001', 30_000));
    expect(failure).toMatchObject({ nonRetryable: false, type: 'WalletTransient', nextRetryDelay: 30_000 });
    expect(isRateLimited(failure)).toBe(false);
    expect(failure.message).toBe('token refresh not sent: TOKEN_REFRESH_BUSY');
  });
});
