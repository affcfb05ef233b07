// What the landing page tells a wallet user about a withdrawal or a deposit in each state
// (api/embedded/outcome-messages.ts): nothing said that walletflow does not know.
import { describe, expect, it } from 'vitest';
import { depositOutcome, withdrawalOutcome } from '../../api/embedded/outcome-messages.ts';
import { fundingStatuses, isFinalFundingStatus } from '../../domain/funding.ts';
import { paymentStatuses } from '../../domain/payment.ts';

describe('the landing page’s words for an outcome', () => {
  it('say of a withdrawal or a deposit in review that it is being checked, not that it takes a few seconds, and not to try again', () => {
    // Before: a withdrawal in review (an execute whose outcome stayed unknown, for hours maybe) read "This takes a few
    // seconds", and the user, seeing nothing come, withdrew again.
    for (const outcome of [
      withdrawalOutcome('NEEDS_REVIEW', null, '10.00'),
      depositOutcome('NEEDS_REVIEW', null, '10.00'),
    ]) {
      expect(outcome).toMatchObject({ final: false, tone: 'info' });
      expect(outcome.title).toMatch(/checking/);
      expect(outcome.message).toMatch(/do not (withdraw|deposit) again/);
      expect(outcome.message).not.toMatch(/few seconds/);
    }
  });

  it('call no state final but the final ones, and none a success but the wallet’s approval', () => {
    for (const status of fundingStatuses) {
      const outcome = withdrawalOutcome(status, null, '10.00');
      expect(outcome.tone === 'success', status).toBe(status === 'APPROVED');
      expect(outcome.final, status).toBe(isFinalFundingStatus(status));
    }
    for (const status of paymentStatuses)
      expect(depositOutcome(status, null, '10.00').tone === 'success', status).toBe(status === 'SUCCEEDED');
  });
});
