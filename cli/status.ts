// `walletflow status <fundingId>`: one funding as the ops API has it, with its timeline as a table
// (time, status, Request-Reference-No, detail), or the API's JSON with --json.
import type { FundingView } from '../domain/funding.ts';
import { exitCodes } from './exit-codes.ts';
import { reportError } from './cli-errors.ts';
import { createOpsClient } from './ops-client.ts';
import { resolveOpsTarget } from './ops-target.ts';

export interface StatusOptions {
  json?: boolean;
  api?: string;
  key?: string;
}

/** Left-aligned columns, two spaces apart; the last column is not padded. */
export function table(rows: string[][]): string {
  const widths: number[] = [];
  for (const row of rows) row.forEach((cell, index) => (widths[index] = Math.max(widths[index] ?? 0, cell.length)));
  return rows
    .map((row) => row.map((cell, index) => (index === row.length - 1 ? cell : cell.padEnd(widths[index] ?? 0))).join('  ').trimEnd())
    .join('\n');
}

export function formatFunding(funding: FundingView): string {
  const recipient = funding.recipient.type === 'CODE' ? `cash-in code ${funding.recipient.masked}` : `link ${funding.recipient.linkId}`;
  const fields = [
    ['funding', funding.fundingId],
    ['status', funding.status],
    ['recipient', recipient],
    ['amount', `${funding.amount.value} ${funding.amount.currency}`],
    ['transfer', funding.transferId ?? '-'],
    ['error', funding.error ? `${funding.error.code}: ${funding.error.message}` : '-'],
    ['created', funding.createdAt],
    ['updated', funding.updatedAt],
  ];
  const timeline = [
    ['TIME', 'STATUS', 'REQUEST-REFERENCE-NO', 'DETAIL'],
    ...funding.events.map((event) => [event.at, event.status, event.requestReferenceNo ?? '-', event.detail ?? '']),
  ];
  return `${table(fields)}\n\n${table(timeline)}\n`;
}

export async function runStatus(fundingId: string, options: StatusOptions): Promise<number> {
  try {
    const client = createOpsClient(resolveOpsTarget(options));
    const answer = await client.getFunding(fundingId);
    if (!answer) {
      process.stderr.write(`walletflow status: no funding ${fundingId}\n`);
      return exitCodes.failed;
    }
    process.stdout.write(options.json ? `${JSON.stringify(answer.raw, null, 2)}\n` : formatFunding(answer.funding));
    return exitCodes.ok;
  } catch (error) {
    return reportError('status', error);
  }
}
