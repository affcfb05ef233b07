// The payment as the ops API and the landing page show it: amounts as decimal strings, the wallet's
// payment id and fee once created, the review evidence and resolution when there was one.
import type { Payment, PaymentEvent } from '../generated/prisma/client.ts';
import type { PaymentView } from '../domain/payment.ts';
import { reviewView } from '../domain/review.ts';
import { storedAmount } from '../domain/money.ts';

export function paymentView(payment: Payment & { events: PaymentEvent[] }): PaymentView {
  return {
    id: payment.id,
    paymentId: payment.walletPaymentId,
    status: payment.status,
    linkId: payment.linkId,
    purpose: payment.purpose,
    amount: storedAmount(payment),
    fee:
      payment.fee !== null && payment.feeCurrency
        ? storedAmount({ amount: payment.fee, currency: payment.feeCurrency })
        : null,
    error: payment.errorCode ? { code: payment.errorCode, message: payment.errorMessage ?? payment.errorCode } : null,
    review: reviewView(payment, ['SUCCEEDED', 'FAILED'] as const),
    createdAt: payment.createdAt.toISOString(),
    updatedAt: payment.updatedAt.toISOString(),
    events: payment.events.map((event) => ({
      at: event.at.toISOString(),
      status: event.status,
      requestReferenceNo: event.requestReferenceNo,
      detail: event.detail,
    })),
  };
}
