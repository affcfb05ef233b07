// What a failed wallet call means for the caller, as one table: rejected (nothing happened),
// unknown (it may have happened: reconcile before any next step) or retryable (safe to repeat).
import type { CallEffect, WalletOperation } from './operations.ts';
import { effectOf } from './operations.ts';

export type WalletOutcome = 'rejected' | 'unknown' | 'retryable';

/** What went wrong, independent of which call it was. */
export type FailureCondition =
  | 'rate-limited' // 429
  | 'connection-refused' // nothing was sent
  | 'timeout' // sent, no (complete) answer in time
  | 'connection-reset' // sent, the connection broke
  | 'server-error' // 5xx (502/503/504 included) or an unexpected status
  | 'temporary-failure' // service code 7011
  | 'unparsable-response' // a 2xx whose body is not JSON or not the contract's shape
  | 'already-executed' // 409 TRANSFER_ALREADY_EXECUTED / PAYMENT_ALREADY_EXECUTED
  | 'client-error'; // any other 4xx: the service refused the request

const R = 'retryable';
const U = 'unknown';
const X = 'rejected';

/**
 * Rows: conditions; columns: call effects. Read the `execute` column as "money may have moved":
 * every condition where the request may have been processed is `unknown` there.
 */
export const outcomeTable: Record<FailureCondition, Record<CallEffect, WalletOutcome>> = {
  //                        read  create  execute  rotation  code-exchange  standalone-refresh
  'rate-limited': { read: R, create: R, execute: R, rotation: R, 'code-exchange': R, 'standalone-refresh': R },
  'connection-refused': { read: R, create: R, execute: R, rotation: R, 'code-exchange': R, 'standalone-refresh': R },
  timeout: { read: R, create: U, execute: U, rotation: U, 'code-exchange': U, 'standalone-refresh': R },
  'connection-reset': { read: R, create: U, execute: U, rotation: U, 'code-exchange': U, 'standalone-refresh': R },
  'server-error': { read: R, create: U, execute: U, rotation: U, 'code-exchange': U, 'standalone-refresh': R },
  'temporary-failure': { read: R, create: R, execute: U, rotation: U, 'code-exchange': U, 'standalone-refresh': R },
  'unparsable-response': { read: R, create: U, execute: U, rotation: U, 'code-exchange': U, 'standalone-refresh': R },
  'already-executed': { read: U, create: U, execute: U, rotation: U, 'code-exchange': U, 'standalone-refresh': U },
  'client-error': { read: X, create: X, execute: X, rotation: X, 'code-exchange': X, 'standalone-refresh': X },
};

export function outcomeOf(operation: WalletOperation, condition: FailureCondition): WalletOutcome {
  return outcomeTable[condition][effectOf(operation)];
}

/**
 * 7011 is the services' temporary failure; the token endpoint speaks OAuth, whose spelling of the
 * same thing is `temporarily_unavailable` (RFC 6749 section 4.1.2.1).
 */
const temporaryFailureCodes: ReadonlySet<string> = new Set(['7011', 'temporarily_unavailable']);
const alreadyExecutedCodes: ReadonlySet<string> = new Set(['TRANSFER_ALREADY_EXECUTED', 'PAYMENT_ALREADY_EXECUTED']);

/** The codes the contract answers with 409, each a final word about the call (contract sections 2 and 5). */
export type ConflictCode = 'TRANSFER_EXPIRED' | 'TRANSFER_ALREADY_EXECUTED' | 'PAYMENT_ALREADY_EXECUTED';

/**
 * Whether a failed call's answer is the service's 409 `code`: the only answer that says so. The same code in the body
 * of a 5xx (a gateway relaying or templating an error) or of any other status is no such word: the outcome table
 * reads that answer by its status.
 */
export function isConflictOf(answer: { httpStatus: number | null; code: string }, code: ConflictCode): boolean {
  return answer.httpStatus === 409 && answer.code === code;
}

/**
 * The op service's refusals of a payment's execute (contract section 5: its statuses and codes), each its word that
 * nothing was debited. Any other 4xx (a gateway's page, a code under a status the service never gives it) is no answer
 * of the service's, and may follow a debit: the outcome is unknown.
 */
const paymentExecuteRefusals: ReadonlyMap<string, number> = new Map([
  ['VALIDATION_ERROR', 400],
  ['INSUFFICIENT_BALANCE', 400],
  ['PAYMENT_NOT_FOUND', 404],
  ['USER_TOKEN_INVALID', 401],
]);

export function isPaymentExecuteRefusal(answer: { httpStatus: number | null; code: string }): boolean {
  return answer.httpStatus !== null && paymentExecuteRefusals.get(answer.code) === answer.httpStatus;
}

/** Classifies a non-2xx answer. 5xx wins over any code in its body: the service failed. */
export function conditionOfStatus(httpStatus: number, code: string): FailureCondition {
  if (httpStatus === 429) return 'rate-limited';
  if (httpStatus >= 500 || httpStatus < 400) return 'server-error';
  if (temporaryFailureCodes.has(code)) return 'temporary-failure';
  if (httpStatus === 409 && alreadyExecutedCodes.has(code)) return 'already-executed';
  return 'client-error';
}
