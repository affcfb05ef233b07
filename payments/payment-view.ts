// The payment as the ops API and the landing page show it: amounts as decimal strings, the wallet's
// payment id and fee once created, the review evidence and resolution when there was one.
import type { Payment, PaymentEvent } from '../generated/prisma/client.ts';
import type { PaymentView } from '../domain/payment.ts';
import { reviewView } from '../domain/review.ts';
import { currencyMinorUnits, fromThousandths, toThousandths, type Currency } from '../domain/money.ts';

function decimalOf(currency: string, value: { toFixed(digits: number): string }): { currency: string; value: string } {
  const minor = currencyMinorUnits[currency as Currency] ?? 2;
  return { currency, value: fromThousandths(toThousandths(value.toFixed(3)) ?? 0n, minor) };
}

export function paymentView(payment: Payment & { events: PaymentEvent[] }): PaymentView {
  return {
    id: payment.id,
    paymentId: payment.walletPaymentId,
    status: payment.status,
    linkId: payment.linkId,
    purpose: payment.purpose,
    amount: decimalOf(payment.currency, payment.amount),
    fee: payment.fee !== null && payment.feeCurrency ? decimalOf(payment.feeCurrency, payment.fee) : null,
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
