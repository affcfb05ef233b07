// The one place that talks HTTP to the wallet service: keep-alive agent, a time-out on every
// call, a fresh Request-Reference-No per call, failure classification and the audit hook.
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { Agent, request } from 'undici';
import type { z } from 'zod';
import type { AuditErrorHook, CallRecordHook, CallStartHook, WalletCallRecord } from './call-record.ts';
import { reportCall } from './call-record.ts';
import { WalletError, transportCodes } from './errors.ts';
import type { WalletOperation } from './operations.ts';
import { serviceOf } from './operations.ts';
import type { FailureCondition, WalletOutcome } from './outcome.ts';
import { conditionOfStatus, outcomeOf } from './outcome.ts';
import { isUuid } from '../domain/ids.ts';
import { parseRetryAfter } from '../lib/retry-after.ts';

/** Every successful call returns its data with the Request-Reference-No it was sent with. */
export interface WalletResult<T> {
  data: T;
  requestReferenceNo: string;
}

export interface WalletCall<T> {
  operation: WalletOperation;
  method: 'GET' | 'POST' | 'PUT';
  baseUrl: string;
  /** Appended to baseUrl (which may carry a path prefix); no query string. */
  path: string;
  headers: Record<string, string>;
  body?: string;
  /** Values of this call that must never reach an error (tokens, codes, keys). */
  secrets: readonly string[];
  /** Turns a 2xx JSON body into the result; throws UnusableResponseError when it cannot. */
  parse: (body: unknown) => T | Promise<T>;
}

/** Thrown by a call's parse step: the service answered 2xx but the answer cannot be used. */
export class UnusableResponseError extends Error {
  override readonly name = 'UnusableResponseError';
  constructor(
    readonly code: string,
    /** null: the outcome table decides (as for any unparsable answer); else fixed. */
    readonly fixedOutcome: WalletOutcome | null,
    message: string,
    /**
     * The answer is JSON, but not the contract's shape or about another record: the service itself answered so (a
     * body that is not JSON may be a proxy's or a gateway's page).
     */
    readonly offContract = false,
  ) {
    super(message);
  }
}

/** A parse step from a zod schema; the error names the fields, never their values. */
export function parseWith<S extends z.ZodType>(schema: S): (body: unknown) => z.output<S> {
  return (body) => {
    const parsed = schema.safeParse(body);
    if (parsed.success) return parsed.data;
    const fields = [...new Set(parsed.error.issues.map((issue) => issue.path.join('.') || '(body)'))];
    throw new UnusableResponseError(
      transportCodes.unparsableResponse,
      null,
      `response does not match the contract at ${fields.slice(0, 5).join(', ')}`,
      true,
    );
  };
}

export interface WalletTransportOptions {
  timeoutMs: number;
  now: () => number;
  onCall?: CallRecordHook;
  onAuditError?: AuditErrorHook;
  /** Absent (tracing off): nothing is done per call. */
  onCallStart?: CallStartHook;
}

export interface WalletTransport {
  send<T>(call: WalletCall<T>): Promise<WalletResult<T>>;
  close(): Promise<void>;
}

/** Answers are small JSON documents; anything bigger is not an answer of this service. */
const MAX_RESPONSE_BYTES = 1024 * 1024;

export function createWalletTransport(options: WalletTransportOptions): WalletTransport {
  const agent = new Agent({
    keepAliveTimeout: 4_000,
    // Backstops for the per-call AbortSignal, which is what enforces timeoutMs.
    headersTimeout: options.timeoutMs + 1_000,
    bodyTimeout: options.timeoutMs + 1_000,
    maxResponseSize: MAX_RESPONSE_BYTES,
  });

  async function send<T>(call: WalletCall<T>): Promise<WalletResult<T>> {
    const requestReferenceNo = randomUUID();
    const startedAt = new Date(options.now());
    const started = performance.now();
    const path = new URL(call.baseUrl + call.path).pathname;
    const service = serviceOf(call.operation);
    const ended = options.onCallStart?.({
      requestReferenceNo,
      service,
      operation: call.operation,
      method: call.method,
      path,
    });

    const finish = async (
      httpStatus: number | null,
      outcome: WalletCallRecord['outcome'],
      errorCode: string | null,
    ) => {
      const record: WalletCallRecord = {
        requestReferenceNo,
        service,
        operation: call.operation,
        method: call.method,
        path,
        httpStatus,
        outcome,
        errorCode,
        durationMs: Math.round(performance.now() - started),
        startedAt,
      };
      ended?.(record);
      await reportCall(record, options.onCall, options.onAuditError);
    };

    const fail = async (error: WalletError): Promise<never> => {
      await finish(error.httpStatus, error.outcome, error.code);
      throw error;
    };

    const signal = AbortSignal.timeout(options.timeoutMs);
    let status: number;
    let text: string;
    let retryAfter: string | undefined;
    try {
      const response = await request(call.baseUrl + call.path, {
        method: call.method,
        headers: { ...call.headers, 'request-reference-no': requestReferenceNo },
        body: call.body,
        signal,
        dispatcher: agent,
      });
      status = response.statusCode;
      const header = response.headers['retry-after'];
      retryAfter = Array.isArray(header) ? header[0] : header;
      text = await response.body.text();
    } catch (cause) {
      const { condition, code } = classifyTransportFailure(cause, signal.aborted);
      return fail(
        new WalletError({
          operation: call.operation,
          httpStatus: null,
          code,
          outcome: outcomeOf(call.operation, condition),
          requestReferenceNo,
          cause,
        }),
      );
    }

    if (status < 200 || status >= 300) {
      const body = parseJson(text);
      const code = serviceCodeOf(body) ?? fallbackCodeOf(status);
      const condition = conditionOfStatus(status, code);
      const retryAfterMs = status === 429 ? parseRetryAfter(retryAfter, options.now()) : undefined;
      return fail(
        new WalletError({
          operation: call.operation,
          httpStatus: status,
          code,
          outcome: outcomeOf(call.operation, condition),
          requestReferenceNo,
          ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
          ...serviceMessageOf(body, call.secrets),
        }),
      );
    }

    try {
      const body = parseJson(text);
      if (body === undefined) {
        throw new UnusableResponseError(transportCodes.unparsableResponse, null, 'response body is not JSON');
      }
      const data = await call.parse(body);
      await finish(status, 'ok', null);
      return { data, requestReferenceNo };
    } catch (error) {
      // Anything the parse step throws means the answer could not be used; an unforeseen error
      // is treated like an unparsable body so the outcome stays on the safe side.
      const unusable =
        error instanceof UnusableResponseError
          ? error
          : new UnusableResponseError(transportCodes.unparsableResponse, null, 'response could not be read');
      const outcome = unusable.fixedOutcome ?? outcomeOf(call.operation, 'unparsable-response');
      return fail(
        new WalletError(
          {
            operation: call.operation,
            httpStatus: status,
            code: unusable.code,
            outcome,
            requestReferenceNo,
            ...(unusable.offContract ? { offContract: true } : {}),
            ...(unusable === error ? {} : { cause: error }),
          },
          redact(unusable.message, call.secrets),
        ),
      );
    }
  }

  return { send, close: () => agent.close() };
}

/** Transport failures: whether the request can have reached the service decides the outcome. */
export function classifyTransportFailure(
  error: unknown,
  timedOut: boolean,
): { condition: FailureCondition; code: string } {
  if (timedOut) return { condition: 'timeout', code: transportCodes.timeout };
  const code = errorCodeOf(error);
  switch (code) {
    case 'ECONNREFUSED':
      return { condition: 'connection-refused', code: transportCodes.connectionRefused };
    // Name resolution and routing fail before a byte is sent.
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
    case 'UND_ERR_CONNECT_TIMEOUT':
      return { condition: 'connection-refused', code: transportCodes.connectionFailed };
    case 'UND_ERR_HEADERS_TIMEOUT':
    case 'UND_ERR_BODY_TIMEOUT':
    case 'ETIMEDOUT':
      return { condition: 'timeout', code: transportCodes.timeout };
    case 'UND_ERR_RES_EXCEEDED_MAX_SIZE':
      return { condition: 'unparsable-response', code: transportCodes.unparsableResponse };
    default:
      // ECONNRESET, EPIPE, UND_ERR_SOCKET and anything unforeseen: the request may have been
      // processed, so it is treated as a broken connection after sending.
      return { condition: 'connection-reset', code: transportCodes.connectionReset };
  }
}

function errorCodeOf(error: unknown): string | undefined {
  for (let current = error, depth = 0; current instanceof Error && depth < 5; depth++) {
    const code = (current as Error & { code?: unknown }).code;
    if (typeof code === 'string') return code;
    current = current.cause;
  }
  return undefined;
}

function parseJson(text: string): unknown {
  try {
    return text.length === 0 ? undefined : (JSON.parse(text) as unknown);
  } catch {
    return undefined;
  }
}

const serviceCodePattern = /^[A-Za-z0-9_.-]{1,64}$/;

/** `code` of the transfer and op services, `error` of the OAuth token endpoint. */
function serviceCodeOf(body: unknown): string | undefined {
  if (typeof body !== 'object' || body === null) return undefined;
  const { code, error } = body as { code?: unknown; error?: unknown };
  const candidate = typeof code === 'string' ? code : typeof error === 'string' ? error : undefined;
  // Only identifier-like codes are kept: a code is compared and logged, a value never is.
  return candidate !== undefined && serviceCodePattern.test(candidate) ? candidate : undefined;
}

function fallbackCodeOf(status: number): string {
  if (status >= 500) return transportCodes.server;
  if (status >= 400) return transportCodes.client;
  return transportCodes.unexpectedStatus;
}

function serviceMessageOf(body: unknown, secrets: readonly string[]): { serviceMessage?: string } {
  if (typeof body !== 'object' || body === null) return {};
  const { message, error_description: description } = body as { message?: unknown; error_description?: unknown };
  const text = typeof message === 'string' ? message : typeof description === 'string' ? description : undefined;
  return text === undefined ? {} : { serviceMessage: redact(text.slice(0, 500), secrets) };
}

/**
 * Removes from a service's text every secret of the call and anything shaped like one the call
 * did not know: a cash-in code (7 digits) or a long opaque string (a token or key); ids (UUIDs)
 * stay readable.
 */
export function redact(text: string, secrets: readonly string[]): string {
  let result = text;
  for (const secret of secrets) {
    if (secret.length > 0) result = result.split(secret).join('[redacted]');
  }
  return result
    .replace(/\b\d{7}\b/g, '[redacted]')
    .replace(/[A-Za-z0-9_\-.~+/=]{24,}/g, (match) => (isUuid(match) ? match : '[redacted]'));
}
