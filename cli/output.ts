// What every ops command prints: `--output json` the API's answer as it came (for scripts and
// jq), `--output text` (the default) tables for people. Tables are left-aligned columns.
import { reportError } from './cli-errors.ts';
import { exitCodes } from './exit-codes.ts';
import { opsClientFor, type OpsClient } from './ops-client.ts';
import { resolveOpsTarget } from './ops-target.ts';

export type OutputFormat = 'json' | 'text';

/** The options every ops command takes. */
export interface OpsCommandOptions {
  api?: string;
  output?: OutputFormat | 'csv';
}

/** Left-aligned columns, two spaces apart; the last column is not padded. */
export function table(rows: string[][]): string {
  const widths: number[] = [];
  for (const row of rows) row.forEach((cell, index) => (widths[index] = Math.max(widths[index] ?? 0, cell.length)));
  return rows
    .map((row) =>
      row
        .map((cell, index) => (index === row.length - 1 ? cell : cell.padEnd(widths[index] ?? 0)))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

/**
 * Says a write's Idempotency-Key on stderr before its request goes out (stdout stays the answer's): whatever becomes
 * of the request, the same command with this key is applied once.
 */
export function sayKey(command: string, key: string): void {
  process.stderr.write(
    `walletflow ${command}: idempotency key ${key} (to retry without applying it twice: --idempotency-key ${key})\n`,
  );
}

export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

export function printText(text: string): void {
  process.stdout.write(text.endsWith('\n') ? text : `${text}\n`);
}

export const amountText = (amount: { value: string; currency: string } | null | undefined) =>
  amount ? `${amount.value} ${amount.currency}` : '-';

/**
 * Runs one ops command: resolves the target, hands it the client, maps failures to exit codes.
 * `work` returns the exit code (ok unless it says otherwise).
 */
export async function runOps(
  command: string,
  options: OpsCommandOptions,
  work: (client: OpsClient) => Promise<number | void>,
  client: { timeoutMs?: number } = {},
): Promise<number> {
  try {
    const ops = opsClientFor(resolveOpsTarget(options), client);
    return (await work(ops)) ?? exitCodes.ok;
  } catch (error) {
    return reportError(command, error);
  }
}
