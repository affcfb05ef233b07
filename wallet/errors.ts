// The wallet client's single error type: the HTTP status, the service's code, the request
// reference and whether the caller must reconcile, may retry or must stop (stripe-node style).
import type { WalletOperation } from './operations.ts';
import type { WalletOutcome } from './outcome.ts';

/** Codes the client itself assigns when the service gave none (or the failure was local). */
export const transportCodes = {
  timeout: 'TIMEOUT',
  connectionReset: 'CONNECTION_RESET',
  connectionRefused: 'CONNECTION_REFUSED',
  connectionFailed: 'CONNECTION_FAILED',
  unparsableResponse: 'UNPARSABLE_RESPONSE',
  server: 'HTTP_5XX',
  client: 'HTTP_4XX',
  unexpectedStatus: 'HTTP_UNEXPECTED_STATUS',
  invalidArgument: 'INVALID_ARGUMENT',
} as const;

export interface WalletErrorDetails {
  operation: WalletOperation;
  httpStatus: number | null;
  code: string;
  outcome: WalletOutcome;
  requestReferenceNo: string;
  retryAfterMs?: number;
  /** The service's own message, with every secret of the call removed. */
  serviceMessage?: string;
  /** A 2xx whose JSON is not the contract's shape, or about another record (UnusableResponseError.offContract). */
  offContract?: boolean;
  cause?: unknown;
}

/**
 * A call its caller's deadline no longer leaves room for, found right before its request would have gone out (after a
 * client token was fetched, say): nothing was sent. A money call sent then could outlive the activity that sent it,
 * and the activity's retry would send a second beside it.
 */
export class CallNotSent extends Error {
  override readonly name = 'CallNotSent';
  constructor(readonly operation: WalletOperation) {
    super(`${operation} was not sent: it could no longer end before its caller's deadline`);
  }
}

/**
 * The message is built from the operation, code, status and outcome only, so it never carries a
 * token, a cash-in code or a key; the service's text stays in `serviceMessage`, redacted.
 */
export class WalletError extends Error {
  override readonly name = 'WalletError';
  readonly operation: WalletOperation;
  readonly httpStatus: number | null;
  readonly code: string;
  readonly outcome: WalletOutcome;
  readonly requestReferenceNo: string;
  readonly retryAfterMs: number | undefined;
  readonly serviceMessage: string | undefined;
  readonly offContract: boolean;

  constructor(details: WalletErrorDetails, explanation?: string) {
    const status = details.httpStatus === null ? 'no HTTP status' : `HTTP ${details.httpStatus}`;
    super(
      `${details.operation} failed: ${details.code} (${status}, outcome ${details.outcome}, ` +
        `Request-Reference-No ${details.requestReferenceNo})${explanation ? `: ${explanation}` : ''}`,
      details.cause === undefined ? undefined : { cause: details.cause },
    );
    this.operation = details.operation;
    this.httpStatus = details.httpStatus;
    this.code = details.code;
    this.outcome = details.outcome;
    this.requestReferenceNo = details.requestReferenceNo;
    this.retryAfterMs = details.retryAfterMs;
    this.serviceMessage = details.serviceMessage;
    this.offContract = details.offContract ?? false;
  }
}

export function isWalletError(error: unknown): error is WalletError {
  return error instanceof WalletError;
}

/**
 * The wallet refusing this partner's own credentials, not the request: the token endpoint's `invalid_client` (a client
 * secret rotated at the wallet and not here), or the op service's 401 CLIENT_TOKEN_INVALID. Nothing of the call was
 * taken; a person cannot mend it by trying again, the partner's configuration can.
 */
export function isCredentialsRefusal(error: WalletError): boolean {
  return error.code === 'invalid_client' || (error.httpStatus === 401 && error.code === 'CLIENT_TOKEN_INVALID');
}

/**
 * A read the wallet answered 2xx with JSON it cannot use: not the contract's shape (a status it does not name, a field
 * missing), or about another record. The service itself answered, and shows nothing usable, as when it refuses to show
 * the record: asked again, it most likely answers the same. (A body that is not JSON, such as a proxy's or a gateway's
 * page, a 5xx, a 429 or no answer is the wallet unable to answer now.)
 */
export function isUnreadableAnswer(error: WalletError): boolean {
  return error.outcome !== 'rejected' && error.offContract;
}

/** The longest Retry-After honoured as given; a longer one waits this long. */
export const MAX_RETRY_AFTER_MS = 5 * 60_000;

/**
 * The shortest wait a Retry-After gives: `0`, or a date at or before our clock (a second's rounding, a clock a little
 * ahead), would have the refused call sent again at once, 429 after 429, as fast as the wallet answers.
 */
export const MIN_RETRY_AFTER_MS = 1000;

/** When the service asked us to come back, bounded; undefined when it did not say. */
export function retryDelayOf(error: Pick<WalletError, 'retryAfterMs'>): number | undefined {
  return error.retryAfterMs === undefined
    ? undefined
    : Math.min(Math.max(error.retryAfterMs, MIN_RETRY_AFTER_MS), MAX_RETRY_AFTER_MS);
}
