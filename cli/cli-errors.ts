// The exit codes of the ops commands (fund, status) and how a failure is told to the user: the
// problem's code and detail, or where the API was expected; never a key or a cash-in code.
import { OpsApiError, OpsUnreachableError } from './ops-client.ts';

export const exitCodes = {
  ok: 0,
  /** The funding ended other than APPROVED, or `status` of an unknown funding. */
  failed: 1,
  /** Still not final when --timeout ran out: the funding goes on. */
  timeout: 2,
  /** The API refused the request, answered with an error, or could not be reached. */
  api: 3,
  /** Bad command-line input (EX_USAGE). */
  usage: 64,
  /** No ops API key or an unreadable key file (EX_CONFIG, as elsewhere in walletflow). */
  config: 78,
  /** Interrupted (Ctrl-C) while following. */
  interrupted: 130,
} as const;

/** A usage or configuration problem found before any request: message and exit code. */
export class CliInputError extends Error {
  constructor(
    message: string,
    readonly exitCode: number,
  ) {
    super(message);
  }
}

/** Writes what went wrong to stderr and returns the exit code; rethrows what it does not know. */
export function reportError(command: string, error: unknown): number {
  const say = (text: string) => process.stderr.write(`walletflow ${command}: ${text}\n`);
  if (error instanceof CliInputError) {
    say(error.message);
    return error.exitCode;
  }
  if (error instanceof OpsUnreachableError) {
    say(`the ops API is not reachable at ${error.apiBase} (${error.reason}).`);
    say('is walletflow running? start it with `npm run dev`, or point the CLI at it with --api <url> or WALLETFLOW_API_URL.');
    return exitCodes.api;
  }
  if (error instanceof OpsApiError) {
    say(`the ops API answered ${error.status} ${error.code}: ${error.detail}`);
    if (error.status === 401) say('check the ops API key: --key, WALLETFLOW_OPS_KEY, OPS_API_KEYS or .walletflow/dev-state.json.');
    return exitCodes.api;
  }
  throw error;
}
