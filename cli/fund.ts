// `walletflow fund`: starts a funding through the ops API (by cash-in code or by link) and follows
// it until it is final, showing each step; the exit code says how it ended.
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { z } from 'zod';
import {
  createFundingSchema,
  idempotencyKeySchema,
  isFinalFundingStatus,
  maskCashInCode,
  type CreateFundingRequest,
  type FundingView,
} from '../domain/funding.ts';
import { normaliseAmount } from '../domain/money.ts';
import { CliInputError, exitCodes } from './exit-codes.ts';
import { reportError } from './cli-errors.ts';
import { createOpsClient, OpsApiError, OpsUnreachableError, type OpsClient } from './ops-client.ts';
import { resolveOpsTarget } from './ops-target.ts';
import { createFundingProgress, summaryLine } from './progress.ts';

export interface FundOptions {
  code?: string;
  link?: string;
  amount: string;
  currency: string;
  idempotencyKey?: string;
  /** false with --no-wait */
  wait: boolean;
  timeout: string;
  plain?: boolean;
  api?: string;
  key?: string;
}

interface FundInput {
  request: CreateFundingRequest;
  idempotencyKey: string;
  timeoutMs: number;
}

const pollIntervalMs = 300;

/** Which flag a field of the request body comes from, to name it in messages. */
const flagOf: Record<string, string> = {
  'recipient.code': '--code',
  'recipient.linkId': '--link',
  'amount.value': '--amount',
  'amount.currency': '--currency',
};

const timeoutSchema = z.coerce.number({ error: 'must be a number of seconds' }).positive('must be more than 0 seconds').max(86_400, 'must be at most a day');

/** Checks the flags with the API's own schema, so bad input never reaches the API. */
export function parseFundInput(options: FundOptions): FundInput {
  const usage = (message: string) => new CliInputError(message, exitCodes.usage);
  if ((options.code === undefined) === (options.link === undefined)) {
    throw usage('give exactly one recipient: --code <7-digit cash-in code> or --link <linkId>');
  }
  const recipient = options.code !== undefined ? { type: 'CODE', code: options.code.trim() } : { type: 'TOKEN', linkId: (options.link ?? '').trim() };
  const body = createFundingSchema.safeParse({ recipient, amount: { currency: options.currency.trim().toUpperCase(), value: options.amount.trim() } });
  if (!body.success) {
    // Issue messages name the field, never echo the value (a code stays unprinted).
    const messages = body.error.issues.map((issue) => {
      const field = issue.path.join('.');
      return `${flagOf[field] ?? field}: ${issue.message}`;
    });
    throw usage(messages.join('; '));
  }
  const idempotencyKey = idempotencyKeySchema.safeParse(options.idempotencyKey ?? randomUUID());
  if (!idempotencyKey.success) throw usage('--idempotency-key must be 1 to 255 printable characters');
  const timeout = timeoutSchema.safeParse(options.timeout);
  if (!timeout.success) throw usage(`--timeout ${timeout.error.issues[0]?.message ?? 'is not valid'}`);
  return { request: body.data, idempotencyKey: idempotencyKey.data, timeoutMs: Math.round(timeout.data * 1000) };
}

export function exitCodeFor(funding: FundingView): number {
  if (funding.status === 'APPROVED') return exitCodes.ok;
  return isFinalFundingStatus(funding.status) ? exitCodes.failed : exitCodes.timeout;
}

const out = (text: string) => process.stdout.write(text);

export async function runFund(options: FundOptions): Promise<number> {
  try {
    const input = parseFundInput(options);
    const target = resolveOpsTarget(options);
    const client = createOpsClient(target);
    const { request, idempotencyKey } = input;
    const recipient = request.recipient.type === 'CODE' ? `cash-in code ${maskCashInCode(request.recipient.code)}` : `link ${request.recipient.linkId}`;
    const amount = normaliseAmount(request.amount);
    out(`funding ${amount.value} ${amount.currency} to ${recipient} through ${target.apiBase}\n`);
    out(`idempotency key ${idempotencyKey}  (to retry without funding twice: --idempotency-key ${idempotencyKey})\n`);

    const started = await client.createFunding(request, idempotencyKey);
    const { fundingId } = started.funding;
    out(
      started.created
        ? `accepted: funding ${fundingId}\n`
        : `this idempotency key was used before with the same request: funding ${fundingId}\n`,
    );
    if (!options.wait) {
      out(`${summaryLine(started.funding)}\n`);
      if (!isFinalFundingStatus(started.funding.status)) out(`follow it with: walletflow status ${fundingId}\n`);
      return isFinalFundingStatus(started.funding.status) ? exitCodeFor(started.funding) : exitCodes.ok;
    }
    return await follow(client, started.funding, input.timeoutMs, options.plain === true);
  } catch (error) {
    return reportError('fund', error);
  }
}

/** Polls the funding until it is final or the time runs out, drawing its progress. */
async function follow(client: OpsClient, first: FundingView, timeoutMs: number, plain: boolean): Promise<number> {
  const tty = Boolean(process.stdout.isTTY) && !plain;
  const color = tty && !process.env.NO_COLOR;
  const progress = createFundingProgress({ tty, color, write: out, columns: () => process.stdout.columns });
  const spinner = tty ? setInterval(() => progress.tick(), 100) : undefined;
  const { fundingId } = first;
  const onInterrupt = () => {
    progress.close();
    process.stderr.write(`\nstopped following; the funding goes on. Check it with: walletflow status ${fundingId}\n`);
    process.exit(exitCodes.interrupted);
  };
  process.once('SIGINT', onInterrupt);
  const deadline = Date.now() + timeoutMs;
  let funding = first;
  let troubled = false;
  try {
    for (;;) {
      progress.update(funding);
      if (isFinalFundingStatus(funding.status)) break;
      if (Date.now() >= deadline) {
        progress.close();
        out(`${summaryLine(funding, color)}\n`);
        process.stderr.write(
          `walletflow fund: still ${funding.status} after ${Math.round(timeoutMs / 1000)} s; the funding goes on. Check it with: walletflow status ${fundingId}\n`,
        );
        return exitCodes.timeout;
      }
      await sleep(Math.min(pollIntervalMs, Math.max(deadline - Date.now(), 0)));
      try {
        const answer = await client.getFunding(fundingId);
        if (!answer) throw new OpsApiError(404, 'FUNDING_NOT_FOUND', `no funding ${fundingId}`);
        funding = answer.funding;
        troubled = false;
      } catch (error) {
        // The funding runs on the server whatever happens here: ride out a restarting API.
        const transient = error instanceof OpsUnreachableError || (error instanceof OpsApiError && error.transient);
        if (!transient) throw error;
        if (!troubled) {
          progress.close();
          process.stderr.write(`walletflow fund: ${(error as Error).message}; retrying\n`);
          troubled = true;
        }
      }
    }
  } finally {
    if (spinner) clearInterval(spinner);
    process.off('SIGINT', onInterrupt);
    progress.close();
  }
  out(`${summaryLine(funding, color)}\n`);
  return exitCodeFor(funding);
}
