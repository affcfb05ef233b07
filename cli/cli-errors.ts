// How a failure of an ops command is told to the user: the problem's code and detail, or where
// the API was expected; never a key or a cash-in code. The exit codes are in exit-codes.ts.
import { CliInputError, exitCodes } from './exit-codes.ts';
import { OpsNetworkError, OpsProblemError } from './ops-client.ts';
import { opsKeySources } from './ops-target.ts';

/** Network failures that mean no request reached the API: the address refused, unknown, or a port fetch refuses. */
const nothingSent = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'bad port']);

/** Writes what went wrong to stderr and returns the exit code; rethrows what it does not know. */
export function reportError(command: string, error: unknown): number {
  const say = (text: string) => process.stderr.write(`walletflow ${command}: ${text}\n`);
  if (error instanceof CliInputError) {
    say(error.message);
    return error.exitCode;
  }
  if (error instanceof OpsNetworkError && error.brokenOff && error.method === 'GET') {
    say(`the ops API's answer broke off (${error.reason}); nothing of it was used. Run the command again.`);
    return exitCodes.api;
  }
  if (error instanceof OpsNetworkError && error.brokenOff) {
    // The API answered 2xx: the write was applied; a new key would apply it twice.
    say(`the ops API applied the request, but its answer broke off (${error.reason}).`);
    const key = error.idempotencyKey ? ` --idempotency-key ${error.idempotencyKey}` : '';
    say(`to see its answer, send the same command again with${key || ' the same --idempotency-key'}: applied once.`);
    return exitCodes.api;
  }
  /** A write that may have gone out and been applied (a large batch stored, an adjustment posted, an endpoint made). */
  const mayBeApplied = (why: string, idempotencyKey: string | undefined) => {
    say(`${why}: the request may have been applied.`);
    if (idempotencyKey)
      say(`send the same command again with --idempotency-key ${idempotencyKey}: applied once, never twice.`);
    else say('look before running it again (a list or get command): it has no key to apply it only once.');
    return exitCodes.api;
  };
  if (error instanceof OpsNetworkError && error.method !== 'GET' && !nothingSent.has(error.reason))
    return mayBeApplied(`the ops API at ${error.baseUrl} gave no answer (${error.reason})`, error.idempotencyKey);
  if (error instanceof OpsNetworkError) {
    say(`the ops API is not reachable at ${error.baseUrl} (${error.reason}).`);
    say(
      'is walletflow running? start it with `npm run dev`, or point the CLI at it with --api <url> or WALLETFLOW_API_URL.',
    );
    return exitCodes.api;
  }
  if (error instanceof OpsProblemError && error.method !== 'GET' && error.status >= 500 && error.problem === undefined)
    // Not the API's answer (a load balancer's 502 or 504 while the API went on).
    return mayBeApplied(`a ${error.status} that is not the ops API's answer`, error.idempotencyKey);
  if (error instanceof OpsProblemError) {
    say(`the ops API answered ${error.status} ${error.code}: ${error.detail}`);
    if (error.status === 401) say(`check the ops API key: ${opsKeySources}.`);
    if (error.status === 403) say('the ops API key lacks the scope this command needs (OPS_API_KEYS name:scopes:key).');
    return exitCodes.api;
  }
  throw error;
}
