// Merchant payments: create debits nothing; execute debits amount plus fee once, and an execute
// after a failed one answers the same failure again (contract-decisions section 5).
import { randomUUID } from 'node:crypto';
import { addPhp, comparePhp, subtractPhp, toWire, walletCurrency, type WalletAmount } from './amounts.ts';
import { serviceError } from './answers.ts';
import type { SandboxContext } from './context.ts';
import type { PaymentRecord } from './state.ts';

export function paymentView(record: PaymentRecord) {
  return {
    id: record.paymentId,
    p2mId: record.p2mId,
    requestReferenceNumber: record.requestReferenceNumber,
    amount: toWire(record.amount),
    fee: toWire(record.fee),
  };
}

export function createPayment(
  context: SandboxContext,
  input: { p2mId: string; amount: WalletAmount; userId: string; requestReferenceNumber: string },
): PaymentRecord {
  if (input.p2mId !== context.registration.p2mId)
    throw serviceError(400, 'VALIDATION_ERROR', 'p2mId is not the merchant registered for this client');
  const record: PaymentRecord = {
    paymentId: randomUUID(),
    p2mId: input.p2mId,
    userId: input.userId,
    requestReferenceNumber: input.requestReferenceNumber,
    amount: input.amount,
    fee: { currency: walletCurrency, value: context.state.settings.merchantFee },
    status: 'CREATED',
    failure: null,
    executions: 0,
    createdAt: context.clock.now(),
  };
  context.state.payments.set(record.paymentId, record);
  return record;
}

export function executePayment(context: SandboxContext, paymentId: string, userId: string): PaymentRecord {
  const record = context.state.payments.get(paymentId);
  // Another user's payment is not found for this user: its existence is none of their business.
  if (!record || record.userId !== userId) throw serviceError(404, 'PAYMENT_NOT_FOUND', 'No payment with this id');
  if (record.status === 'EXECUTED')
    throw serviceError(409, 'PAYMENT_ALREADY_EXECUTED', 'The payment was executed already');
  if (record.failure) throw serviceError(record.failure.httpStatus, record.failure.code, record.failure.message);
  const user = context.state.users.get(userId);
  const total = addPhp(record.amount.value, record.fee.value);
  if (!user || comparePhp(user.balance, total) < 0) {
    record.status = 'FAILED';
    record.failure = {
      httpStatus: 400,
      code: 'INSUFFICIENT_BALANCE',
      message: 'The wallet balance does not cover amount plus fee',
    };
    throw serviceError(record.failure.httpStatus, record.failure.code, record.failure.message);
  }
  user.balance = subtractPhp(user.balance, total);
  record.status = 'EXECUTED';
  record.executions += 1;
  return record;
}
