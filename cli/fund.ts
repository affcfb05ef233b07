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
import { findFunding, opsClientFor, OpsNetworkError, OpsProblemError, type OpsClient } from './ops-client.ts';
import { resolveOpsTarget } from './ops-target.ts';
import { createFundingProgress, summaryLine } from './progress.ts';

export interface FundOptions {
  /** The code; `true` (--code with no value): read from standard input, or asked for on a terminal. */
  code?: string | true;
  link?: string;
  amount: string;
  currency: string;
  idempotencyKey?: string;
  /** false with --no-wait */
  wait: boolean;
  timeout: string;
  plain?: boolean;
  api?: string;
  /** json: the progress goes to stderr and the final funding, as the API gives it, to stdout. */
  output?: 'json' | 'text';
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

const timeoutSchema = z.coerce
  .number({ error: 'must be a number of seconds' })
  .positive('must be more than 0 seconds')
  .max(86_400, 'must be at most a day');

/** Checks the flags with the API's own schema, so bad input never reaches the API. */
export function parseFundInput(options: FundOptions): FundInput {
  const usage = (message: string) => new CliInputError(message, exitCodes.usage);
  if ((options.code === undefined) === (options.link === undefined)) {
    throw usage('give exactly one recipient: --code <7-digit cash-in code> or --link <linkId>');
  }
  const recipient =
    options.code !== undefined
      ? { type: 'CODE', code: String(options.code).trim() }
      : { type: 'TOKEN', linkId: (options.link ?? '').trim() };
  const body = createFundingSchema.safeParse({
    recipient,
    amount: { currency: options.currency.trim().toUpperCase(), value: options.amount.trim() },
  });
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

let out = (text: string) => process.stdout.write(text);

/**
 * The cash-in code of `--code` with no value: typed at a prompt that does not echo
 * it on a terminal, else the first line of standard input, so it lands in neither the shell's
 * history nor `ps`.
 */
async function readCode(): Promise<string> {
  const stdin = process.stdin;
  if (stdin.isTTY) {
    process.stderr.write('cash-in code (not shown): ');
    stdin.setRawMode(true);
    stdin.setEncoding('utf8');
    stdin.resume();
    let typed = '';
    try {
      for await (const chunk of stdin) {
        for (const character of chunk as string) {
          if (character === '\u0003') throw new CliInputError('cancelled', exitCodes.usage);
          // Enter, or Ctrl-D: the code as typed.
          if (character === '\r' || character === '\n' || character === '\u0004') return typed;
          typed = character === '\u007f' || character === '\b' ? typed.slice(0, -1) : typed + character;
        }
      }
      return typed;
    } finally {
      stdin.setRawMode(false);
      stdin.pause();
      process.stderr.write('\n');
    }
  }
  let text = '';
  for await (const chunk of stdin) text += String(chunk);
  return text.split(/\r?\n/)[0] ?? '';
}

export async function runFund(options: FundOptions): Promise<number> {
  const json = options.output === 'json';
  if (json) out = (text: string) => process.stderr.write(text);
  try {
    if (options.code === true) options = { ...options, code: await readCode() };
    else if (typeof options.code === 'string') {
      process.stderr.write(
        'note: a cash-in code given on the command line stays in the shell history and shows in ps; next time give --code alone and type it (or pipe it in)\n',
      );
    }
    const input = parseFundInput(options);
    const target = resolveOpsTarget(options);
    const client = opsClientFor(target);
    const { request, idempotencyKey } = input;
    const recipient =
      request.recipient.type === 'CODE'
        ? `cash-in code ${maskCashInCode(request.recipient.code)}`
        : `link ${request.recipient.linkId}`;
    const amount = normaliseAmount(request.amount);
    out(`funding ${amount.value} ${amount.currency} to ${recipient} through ${target.apiBase}\n`);
    out(`idempotency key ${idempotencyKey}  (to retry without funding twice: --idempotency-key ${idempotencyKey})\n`);

    const started = await client.createFunding({ idempotencyKey, body: request });
    const { fundingId } = started.body;
    out(
      started.status === 202
        ? `accepted: funding ${fundingId}\n`
        : `this idempotency key was used before with the same request: funding ${fundingId}\n`,
    );
    if (!options.wait) {
      out(`${summaryLine(started.body)}\n`);
      if (!isFinalFundingStatus(started.body.status)) out(`follow it with: walletflow status ${fundingId}\n`);
      if (json) process.stdout.write(`${JSON.stringify(started.body, null, 2)}\n`);
      return isFinalFundingStatus(started.body.status) ? exitCodeFor(started.body) : exitCodes.ok;
    }
    const { code, funding } = await follow(client, started.body, input.timeoutMs, options.plain === true || json);
    if (json) process.stdout.write(`${JSON.stringify(funding, null, 2)}\n`);
    return code;
  } catch (error) {
    return reportError('fund', error);
  }
}

/** Polls the funding until it is final or the time runs out, drawing its progress. */
async function follow(
  client: OpsClient,
  first: FundingView,
  timeoutMs: number,
  plain: boolean,
): Promise<{ code: number; funding: FundingView }> {
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
        return { code: exitCodes.timeout, funding };
      }
      await sleep(Math.min(pollIntervalMs, Math.max(deadline - Date.now(), 0)));
      try {
        const answer = await findFunding(client, fundingId);
        if (!answer) throw new CliInputError(`the funding ${fundingId} is gone from the API`, exitCodes.api);
        funding = answer;
        troubled = false;
      } catch (error) {
        // The funding runs on the server whatever happens here: ride out a restarting API.
        const transient = error instanceof OpsNetworkError || (error instanceof OpsProblemError && error.transient);
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
  return { code: exitCodeFor(funding), funding };
}
