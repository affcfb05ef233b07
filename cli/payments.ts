// `walletflow payments list|get|resolve`: merchant payments through the ops API. `get` of an
// unknown payment exits 1; `resolve` resolves one parked in NEEDS_REVIEW.
import type { Payment } from '../client/ops-client.generated.ts';
import { exitCodes } from './exit-codes.ts';
import { findPayment } from './ops-client.ts';
import { listQuery, parseNote, parseOutcome, type ListOptions } from './ops-input.ts';
import { amountText, printJson, printText, runOps, table, type OpsCommandOptions } from './output.ts';

export function formatPayment(payment: Payment): string {
  const fields = [
    ['payment', payment.id],
    ['status', payment.status],
    ['wallet payment', payment.paymentId ?? '-'],
    ['link', payment.linkId],
    ['purpose', payment.purpose],
    ['amount', amountText(payment.amount)],
    ['fee', amountText(payment.fee)],
    ['error', payment.error ? `${payment.error.code}: ${payment.error.message}` : '-'],
    ...(payment.review
      ? [
          [
            'review',
            payment.review.resolution
              ? `resolved ${payment.review.resolution.outcome} by ${payment.review.resolution.by}: ${payment.review.resolution.note}`
              : payment.review.reason,
          ],
        ]
      : []),
    ['created', payment.createdAt],
    ['updated', payment.updatedAt],
  ];
  const timeline = [
    ['TIME', 'STATUS', 'REQUEST-REFERENCE-NO', 'DETAIL'],
    ...payment.events.map((event) => [event.at, event.status, event.requestReferenceNo ?? '-', event.detail ?? '']),
  ];
  return `${table(fields)}\n\n${table(timeline)}\n`;
}

const show = (options: OpsCommandOptions, payment: Payment) =>
  options.output === 'json' ? printJson(payment) : printText(formatPayment(payment));

export const runPaymentsList = (options: OpsCommandOptions & ListOptions) =>
  runOps('payments list', options, async (client) => {
    const { body } = await client.listPayments(listQuery(options) as Parameters<typeof client.listPayments>[0]);
    if (options.output === 'json') return printJson(body);
    const rows = [
      ['CREATED', 'PAYMENT', 'STATUS', 'AMOUNT', 'LINK'],
      ...body.items.map((item) => [item.createdAt, item.id, item.status, amountText(item.amount), item.linkId]),
    ];
    printText(`${table(rows)}\n${body.nextCursor ? `next page: --cursor ${body.nextCursor}\n` : ''}`);
  });

export const runPaymentsGet = (paymentId: string, options: OpsCommandOptions) =>
  runOps('payments get', options, async (client) => {
    const payment = await findPayment(client, paymentId);
    if (!payment) {
      process.stderr.write(`walletflow payments get: no payment ${paymentId}\n`);
      return exitCodes.failed;
    }
    show(options, payment);
  });

export const runPaymentsResolve = (
  paymentId: string,
  options: OpsCommandOptions & { outcome: string; note: string; actor?: string },
) =>
  runOps('payments resolve', options, async (client) => {
    const body = {
      outcome: parseOutcome(options.outcome, ['SUCCEEDED', 'FAILED'] as const),
      note: parseNote(options.note),
    };
    show(
      options,
      (await client.resolvePayment({ paymentId, body, ...(options.actor ? { opsActor: options.actor } : {}) })).body,
    );
  });
