// WALLET_TIMEOUT_MS against the execute activities' start-to-close, checked when the worker starts:
// an execute sent at the start of an attempt must end (answer or time-out) before
// the attempt itself can time out, or Temporal's retry could send a second execute while the first
// is still in flight. Creates and retrieves are safe to overlap (a create moves no money).
import { ConfigError } from '../lib/config.ts';
import { ACTIVITY_DEADLINE_MARGIN_MS } from '../activities/activity-clock.ts';
import { fundWalletActivityTimeouts } from '../workflows/fund-wallet.contract.ts';
import { payWalletActivityTimeouts } from '../workflows/pay-wallet.contract.ts';

/** The execute activities, by the name an operator would look for, and their start-to-close. */
const executeActivities = {
  'fundWallet executeTransfer': fundWalletActivityTimeouts.executeMs,
  'payWallet executePayment': payWalletActivityTimeouts.executeMs,
} as const;

/** The longest WALLET_TIMEOUT_MS every execute activity can hold, with the margin kept before its end. */
export const maxWalletTimeoutMs = Math.min(...Object.values(executeActivities)) - ACTIVITY_DEADLINE_MARGIN_MS;

/** Throws a ConfigError naming WALLET_TIMEOUT_MS when an execute could outlive its activity. */
export function checkWalletTimeout(walletTimeoutMs: number): void {
  const tooShort = Object.entries(executeActivities).filter(
    ([, startToCloseMs]) => walletTimeoutMs + ACTIVITY_DEADLINE_MARGIN_MS > startToCloseMs,
  );
  if (tooShort.length === 0) return;
  throw new ConfigError([
    `WALLET_TIMEOUT_MS: ${walletTimeoutMs} ms would let an execute outlive its activity (${tooShort
      .map(([name, ms]) => `${name}: ${ms} ms`)
      .join(
        ', ',
      )}), and a retry could send a second execute while the first is in flight; at most ${maxWalletTimeoutMs} ms`,
  ]);
}
