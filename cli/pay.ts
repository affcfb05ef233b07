// `walletflow pay`: takes a merchant payment from a linked wallet through the ops API and follows
// it until it is final (or parked for review), one line per step; the exit code says how it ended.
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { z } from 'zod';
import { idempotencyKeySchema } from '../domain/funding.ts';
import { normaliseAmount } from '../domain/money.ts';
import {
  createPaymentSchema,
  isFinalPaymentStatus,
  type CreatePaymentRequest,
  type PaymentView,
} from '../domain/payment.ts';
import { CliInputError, exitCodes } from './exit-codes.ts';
import { reportError } from './cli-errors.ts';
import { findPayment, opsClientFor, OpsNetworkError, OpsProblemError } from './ops-client.ts';
import { resolveOpsTarget } from './ops-target.ts';

export interface PayOptions {
  link: string;
  amount: string;
  currency: string;
  idempotencyKey?: string;
  wait: boolean;
  timeout: string;
  api?: string;
  /** json: the progress goes to stderr and the final payment, as the API gives it, to stdout. */
  output?: 'json' | 'text';
}

/** A payment parked for a person to resolve (`POST /ops/payments/{id}/resolve`). */
export const needsReviewExit = 4;

const flagOf: Record<string, string> = {
  linkId: '--link',
  'amount.value': '--amount',
  'amount.currency': '--currency',
};
const timeoutSchema = z.coerce
  .number({ error: 'must be a number of seconds' })
  .positive('must be more than 0 seconds')
  .max(86_400, 'must be at most a day');

export function parsePayInput(options: PayOptions): {
  request: CreatePaymentRequest;
  idempotencyKey: string;
  timeoutMs: number;
} {
  const usage = (message: string) => new CliInputError(message, exitCodes.usage);
  const body = createPaymentSchema.safeParse({
    linkId: options.link.trim(),
    amount: { currency: options.currency.trim().toUpperCase(), value: options.amount.trim() },
  });
  if (!body.success) {
    throw usage(
      body.error.issues
        .map((issue) => `${flagOf[issue.path.join('.')] ?? issue.path.join('.')}: ${issue.message}`)
        .join('; '),
    );
  }
  const idempotencyKey = idempotencyKeySchema.safeParse(options.idempotencyKey ?? randomUUID());
  if (!idempotencyKey.success) throw usage('--idempotency-key must be 1 to 255 printable characters');
  const timeout = timeoutSchema.safeParse(options.timeout);
  if (!timeout.success) throw usage(`--timeout ${timeout.error.issues[0]?.message ?? 'is not valid'}`);
  return { request: body.data, idempotencyKey: idempotencyKey.data, timeoutMs: Math.round(timeout.data * 1000) };
}

export function paymentExitCode(payment: PaymentView): number {
  if (payment.status === 'SUCCEEDED') return exitCodes.ok;
  if (payment.status === 'FAILED') return exitCodes.failed;
  if (payment.status === 'NEEDS_REVIEW') return needsReviewExit;
  return exitCodes.timeout;
}

export function paymentSummary(payment: PaymentView): string {
  const parts = [`payment ${payment.id}`, payment.status, `wallet payment ${payment.paymentId ?? '-'}`];
  if (payment.fee) parts.push(`fee ${payment.fee.value} ${payment.fee.currency}`);
  if (payment.error) parts.push(`error ${payment.error.code}: ${payment.error.message}`);
  if (payment.review && !payment.review.resolution) parts.push(`review: ${payment.review.reason}`);
  return parts.join('  ');
}

let out = (text: string) => process.stdout.write(text);

export async function runPay(options: PayOptions): Promise<number> {
  const json = options.output === 'json';
  if (json) out = (text: string) => process.stderr.write(text);
  try {
    const input = parsePayInput(options);
    const target = resolveOpsTarget(options);
    const client = opsClientFor(target);
    const amount = normaliseAmount(input.request.amount);
    out(
      `paying ${amount.value} ${amount.currency} from link ${input.request.linkId} to the merchant through ${target.apiBase}\n`,
    );
    out(
      `idempotency key ${input.idempotencyKey}  (to retry without paying twice: --idempotency-key ${input.idempotencyKey})\n`,
    );
    const started = await client.createPayment({ idempotencyKey: input.idempotencyKey, body: input.request });
    let payment: PaymentView = started.body;
    out(
      started.status === 202
        ? `accepted: payment ${payment.id}\n`
        : `this idempotency key was used before with the same request: payment ${payment.id}\n`,
    );
    let shown = 0;
    const showEvents = () => {
      for (const event of payment.events.slice(shown)) {
        out(
          `${event.at}  ${event.status.padEnd(12)}  ${[event.detail ?? '', event.requestReferenceNo ? `(ref ${event.requestReferenceNo})` : ''].filter(Boolean).join('  ')}`.trimEnd() +
            '\n',
        );
      }
      shown = payment.events.length;
    };
    const deadline = Date.now() + input.timeoutMs;
    for (;;) {
      showEvents();
      const decided = isFinalPaymentStatus(payment.status) || payment.status === 'NEEDS_REVIEW';
      if (decided || !options.wait) break;
      if (Date.now() >= deadline) {
        process.stderr.write(
          `walletflow pay: still ${payment.status} after ${Math.round(input.timeoutMs / 1000)} s; the payment goes on (GET /ops/payments/${payment.id})\n`,
        );
        break;
      }
      await sleep(300);
      try {
        const answer = await findPayment(client, payment.id);
        if (!answer) throw new CliInputError(`the payment ${payment.id} is gone from the API`, exitCodes.api);
        payment = answer;
      } catch (error) {
        if (!(error instanceof OpsNetworkError || (error instanceof OpsProblemError && error.transient))) throw error;
      }
    }
    out(`${paymentSummary(payment)}\n`);
    if (json) process.stdout.write(`${JSON.stringify(payment, null, 2)}\n`);
    if (!options.wait && !isFinalPaymentStatus(payment.status))
      return payment.status === 'NEEDS_REVIEW' ? needsReviewExit : exitCodes.ok;
    return paymentExitCode(payment);
  } catch (error) {
    return reportError('pay', error);
  }
}
