// WALLET_TIMEOUT_MS against the execute activities' time-outs: the worker refuses a
// wallet time-out that could leave an execute in flight when its activity times out and is retried.
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../lib/config.ts';
import { WALLET_TIMEOUT_MS_MAX } from '../../lib/config/environment.ts';
import { checkWalletTimeout, maxWalletTimeoutMs } from '../../worker/activity-timeouts.ts';
import { activityClock, callFitsBefore } from '../../activities/activity-clock.ts';
import { fundWalletActivityTimeouts } from '../../workflows/fund-wallet.contract.ts';
import { payWalletActivityTimeouts } from '../../workflows/pay-wallet.contract.ts';

describe('WALLET_TIMEOUT_MS against the execute activities', () => {
  it('accepts the default and anything that ends before every execute activity does', () => {
    expect(() => checkWalletTimeout(10_000)).not.toThrow();
    expect(() => checkWalletTimeout(maxWalletTimeoutMs)).not.toThrow();
    expect(maxWalletTimeoutMs).toBeLessThan(
      Math.min(fundWalletActivityTimeouts.executeMs, payWalletActivityTimeouts.executeMs),
    );
  });

  it('is refused with the configuration itself past that bound: the API and `walletflow config check` refuse it too', () => {
    // Before: only the worker refused it at start, so a deploy's configuration check passed it and the migrations ran.
    expect(WALLET_TIMEOUT_MS_MAX).toBe(maxWalletTimeoutMs);
    expect(loadConfig({ WALLET_TIMEOUT_MS: String(maxWalletTimeoutMs) }).walletTimeoutMs).toBe(maxWalletTimeoutMs);
    expect(() => loadConfig({ WALLET_TIMEOUT_MS: String(maxWalletTimeoutMs + 1) })).toThrow(
      /WALLET_TIMEOUT_MS: at most 18000 ms/,
    );
  });

  it('refuses a time-out an execute could outlive its activity with, naming the variable', () => {
    for (const walletTimeoutMs of [maxWalletTimeoutMs + 1, 30_000, 120_000]) {
      const failure = (() => {
        try {
          checkWalletTimeout(walletTimeoutMs);
        } catch (error) {
          return error;
        }
        return undefined;
      })();
      expect(failure).toBeInstanceOf(ConfigError);
      expect((failure as ConfigError).problems.join(' ')).toMatch(/^WALLET_TIMEOUT_MS: .*executeTransfer/);
    }
  });

  it('sends a call only while it can end before the activity does', () => {
    let now = 1_000_000;
    const clock = { attempt: 1, deadlineMs: now + 20_000 };
    expect(callFitsBefore(clock, 10_000, () => now)).toBe(true);
    now += 9_000;
    expect(callFitsBefore(clock, 10_000, () => now)).toBe(false);
    // Outside an activity: the first attempt, no deadline.
    expect(activityClock()).toEqual({ attempt: 1, deadlineMs: Number.POSITIVE_INFINITY });
  });
});
