// How a failure of an ops command is told to the user: the problem's code and detail, or where
// the API was expected; never a key or a cash-in code. The exit codes are in exit-codes.ts.
import { CliInputError, exitCodes } from './exit-codes.ts';
import { OpsApiError, OpsUnreachableError } from './ops-client.ts';

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
