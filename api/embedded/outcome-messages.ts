// What the landing page tells the user about a withdrawal (a funding) or a deposit (a payment), by status and code:
// plain words fit for the user, never internal codes alone.
import { z } from 'zod';
import type { FundingStatus } from '../../domain/funding.ts';
import type { PaymentStatus } from '../../domain/payment.ts';
import { fundingStatuses, isFinalFundingStatus } from '../../domain/funding.ts';
import { isFinalPaymentStatus, paymentErrorMessage, paymentStatuses } from '../../domain/payment.ts';

export const outcomeSchema = z.object({
  /** No further change is expected (NEEDS_REVIEW is not final: it is still being checked). */
  final: z.boolean(),
  tone: z.enum(['success', 'error', 'info']),
  title: z.string(),
  message: z.string(),
});
export type Outcome = z.infer<typeof outcomeSchema>;

/** What a progress page polls: the outcome and the funding's or payment's status. */
export const outcomeStatusSchema = outcomeSchema.extend({
  status: z.union([z.enum(fundingStatuses), z.enum(paymentStatuses)]),
});
export type OutcomeStatus = z.infer<typeof outcomeStatusSchema>;

export const reopenFromWallet =
  'Your wallet session has ended. Please close this page and open the app again from your wallet.';

const withdrawalMessages: Record<string, string> = {
  M133: 'Your wallet account is not upgraded yet. Upgrade it in the wallet app, then try again.',
  '6001': 'Your wallet has reached its limit, so the withdrawal could not be credited.',
  '6002': 'Your wallet account is blocked. Please contact the wallet’s support.',
  '6051': 'We cannot send money to wallets right now. Please try again later.',
  '1096': 'This withdrawal cannot go to this wallet account.',
  REAUTH_REQUIRED: reopenFromWallet,
  USER_TOKEN_INVALID: reopenFromWallet,
  LINK_NOT_USABLE: reopenFromWallet,
};

export function withdrawalOutcome(status: FundingStatus, errorCode: string | null, amount: string): Outcome {
  if (status === 'NEEDS_REVIEW') {
    return {
      final: false,
      tone: 'info',
      title: 'We’re checking your withdrawal',
      message:
        'The wallet did not confirm this withdrawal in time, so we are checking it. Please do not withdraw again; this page updates when it is resolved.',
    };
  }
  if (!isFinalFundingStatus(status)) {
    return {
      final: false,
      tone: 'info',
      title: 'Withdrawing…',
      message: `We are adding PHP ${amount} to your wallet. This takes a few seconds.`,
    };
  }
  if (status === 'APPROVED') {
    return {
      final: true,
      tone: 'success',
      title: 'Withdrawal approved',
      message: `PHP ${amount} was added to your wallet.`,
    };
  }
  const message =
    (errorCode && withdrawalMessages[errorCode]) ??
    (status === 'DECLINED'
      ? 'The wallet declined the withdrawal. Nothing was moved.'
      : 'The withdrawal did not go through. Nothing was moved.');
  return {
    final: true,
    tone: 'error',
    title: status === 'DECLINED' ? 'Withdrawal declined' : 'Withdrawal not done',
    message,
  };
}

export function depositOutcome(status: PaymentStatus, errorCode: string | null, amount: string): Outcome {
  if (status === 'NEEDS_REVIEW') {
    return {
      final: false,
      tone: 'info',
      title: 'We’re checking your deposit',
      message:
        'The wallet did not confirm this deposit in time, so we are checking it. Please do not deposit again; this page updates when it is resolved.',
    };
  }
  if (!isFinalPaymentStatus(status)) {
    return {
      final: false,
      tone: 'info',
      title: 'Depositing…',
      message: `We are moving PHP ${amount} from your wallet to your balance here. This takes a few seconds.`,
    };
  }
  if (status === 'SUCCEEDED') {
    return {
      final: true,
      tone: 'success',
      title: 'Deposit successful',
      message: `PHP ${amount} was added to your balance here.`,
    };
  }
  const message =
    errorCode === 'REAUTH_REQUIRED' || errorCode === 'USER_TOKEN_INVALID'
      ? reopenFromWallet
      : paymentErrorMessage(errorCode ?? 'FAILED');
  return { final: true, tone: 'error', title: 'Deposit failed', message };
}
