// `walletflow status <fundingId>`: one funding as the ops API has it, with its timeline as a table
// (time, status, Request-Reference-No, detail), or the API's JSON with --output json. The same as
// `walletflow fundings get`, kept under its first name.
import { runFundingsGet } from './fundings.ts';
import type { OpsCommandOptions } from './output.ts';

export interface StatusOptions extends OpsCommandOptions {
  /** The old spelling of --output json. */
  json?: boolean;
}

export const runStatus = (fundingId: string, options: StatusOptions) =>
  runFundingsGet(fundingId, { ...options, output: options.json ? 'json' : (options.output ?? 'text') });
