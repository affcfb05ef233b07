// The outcome table, row by row: what each failure means for each call.
import { describe, expect, it } from 'vitest';
import type { FailureCondition, WalletOperation, WalletOutcome } from '../../wallet/index.ts';
import { outcomeOf, outcomeTable } from '../../wallet/index.ts';
import { conditionOfStatus, isConflictOf } from '../../wallet/outcome.ts';
import { parseRetryAfter } from '../../lib/retry-after.ts';
import { classifyTransportFailure, redact } from '../../wallet/transport.ts';

const read: WalletOperation[] = ['transfers.retrieve', 'op.profile', 'connect.token.client_credentials'];
const creates: WalletOperation[] = ['transfers.create', 'op.payments.create'];
const executes: WalletOperation[] = ['transfers.execute', 'op.payments.execute'];
const rotation: WalletOperation[] = ['op.tokens'];
const codeExchange: WalletOperation[] = ['connect.token.authorization_code'];
const standaloneRefresh: WalletOperation[] = ['connect.token.refresh_token'];
const all = [...read, ...creates, ...executes, ...rotation, ...codeExchange, ...standaloneRefresh];
const effectful = [...creates, ...executes, ...rotation, ...codeExchange];

function expectRow(condition: FailureCondition, expected: Partial<Record<WalletOperation, WalletOutcome>>) {
  for (const operation of all) {
    expect({ operation, outcome: outcomeOf(operation, condition) }).toEqual({
      operation,
      outcome: expected[operation],
    });
  }
}
const each = (operations: WalletOperation[], outcome: WalletOutcome) =>
  Object.fromEntries(operations.map((operation) => [operation, outcome])) as Partial<
    Record<WalletOperation, WalletOutcome>
  >;

describe('outcome table', () => {
  it('covers every condition', () => {
    expect(Object.keys(outcomeTable).sort()).toEqual(
      [
        'already-executed',
        'client-error',
        'connection-refused',
        'connection-reset',
        'rate-limited',
        'server-error',
        'temporary-failure',
        'timeout',
        'unparsable-response',
      ].sort(),
    );
  });

  it('429 is retryable for every call', () => expectRow('rate-limited', each(all, 'retryable')));
  it('a refused connection is retryable for every call (nothing was sent)', () =>
    expectRow('connection-refused', each(all, 'retryable')));

  for (const condition of ['timeout', 'connection-reset', 'server-error', 'unparsable-response'] as const) {
    it(`${condition}: retryable for reads and the standalone refresh, unknown for every effectful call`, () =>
      expectRow(condition, { ...each([...read, ...standaloneRefresh], 'retryable'), ...each(effectful, 'unknown') }));
  }

  it('7011: retryable for reads and creates, unknown for executes, rotation and code exchange', () =>
    expectRow('temporary-failure', {
      ...each([...read, ...creates, ...standaloneRefresh], 'retryable'),
      ...each([...executes, ...rotation, ...codeExchange], 'unknown'),
    }));

  it('409 already executed: unknown (the caller reconciles)', () =>
    expectRow('already-executed', each(all, 'unknown')));
  it('any other 4xx: rejected', () => expectRow('client-error', each(all, 'rejected')));
});

describe('status and code classification', () => {
  it.each([
    [429, 'RATE_LIMITED', 'rate-limited'],
    [500, 'HTTP_5XX', 'server-error'],
    [502, 'HTTP_5XX', 'server-error'],
    [503, '7011', 'server-error'],
    [504, 'HTTP_5XX', 'server-error'],
    [302, 'HTTP_UNEXPECTED_STATUS', 'server-error'],
    [400, '7011', 'temporary-failure'],
    [400, 'temporarily_unavailable', 'temporary-failure'],
    [409, 'TRANSFER_ALREADY_EXECUTED', 'already-executed'],
    [409, 'PAYMENT_ALREADY_EXECUTED', 'already-executed'],
    [409, 'TRANSFER_EXPIRED', 'client-error'],
    [400, 'M133', 'client-error'],
    [400, '1096', 'client-error'],
    [400, 'CODE_INVALID', 'client-error'],
    [400, 'VALIDATION_ERROR', 'client-error'],
    [401, 'UNAUTHORIZED', 'client-error'],
    [401, 'USER_TOKEN_INVALID', 'client-error'],
    [401, 'CLIENT_TOKEN_INVALID', 'client-error'],
    [400, 'REFRESH_TOKEN_INVALID', 'client-error'],
    [400, 'INSUFFICIENT_BALANCE', 'client-error'],
    [404, 'TRANSFER_NOT_FOUND', 'client-error'],
    [404, 'PAYMENT_NOT_FOUND', 'client-error'],
    [400, 'invalid_grant', 'client-error'],
    [401, 'invalid_client', 'client-error'],
    [400, 'unsupported_grant_type', 'client-error'],
  ] as const)('HTTP %i %s is %s', (status, code, condition) => {
    expect(conditionOfStatus(status, code)).toBe(condition);
  });

  it('maps transport failures by whether the request can have been sent', () => {
    const withCode = (code: string) => Object.assign(new Error(code), { code });
    expect(classifyTransportFailure(new Error('aborted'), true)).toEqual({ condition: 'timeout', code: 'TIMEOUT' });
    expect(classifyTransportFailure(withCode('ECONNREFUSED'), false)).toEqual({
      condition: 'connection-refused',
      code: 'CONNECTION_REFUSED',
    });
    expect(classifyTransportFailure(withCode('ENOTFOUND'), false).condition).toBe('connection-refused');
    expect(classifyTransportFailure(withCode('UND_ERR_SOCKET'), false)).toEqual({
      condition: 'connection-reset',
      code: 'CONNECTION_RESET',
    });
    expect(classifyTransportFailure(withCode('ECONNRESET'), false).condition).toBe('connection-reset');
    expect(classifyTransportFailure(withCode('UND_ERR_HEADERS_TIMEOUT'), false).condition).toBe('timeout');
    expect(classifyTransportFailure(new Error('something else'), false).condition).toBe('connection-reset');
    expect(classifyTransportFailure(new Error('wrapped', { cause: withCode('ECONNREFUSED') }), false).condition).toBe(
      'connection-refused',
    );
  });

  it('takes a conflict code for the wallet’s word only as its 409: the same code in a 5xx’s or a 400’s body is not', () => {
    expect(isConflictOf({ httpStatus: 409, code: 'TRANSFER_EXPIRED' }, 'TRANSFER_EXPIRED')).toBe(true);
    expect(isConflictOf({ httpStatus: 409, code: 'PAYMENT_ALREADY_EXECUTED' }, 'PAYMENT_ALREADY_EXECUTED')).toBe(true);
    for (const httpStatus of [502, 503, 504, 500, 400, 404, null])
      expect(isConflictOf({ httpStatus, code: 'TRANSFER_EXPIRED' }, 'TRANSFER_EXPIRED')).toBe(false);
    expect(isConflictOf({ httpStatus: 409, code: 'TRANSFER_ALREADY_EXECUTED' }, 'TRANSFER_EXPIRED')).toBe(false);
  });

  it('reads Retry-After as seconds or an HTTP date', () => {
    expect(parseRetryAfter('3', 0)).toBe(3000);
    expect(parseRetryAfter(new Date(10_000).toUTCString(), 4_000)).toBe(6_000);
    expect(parseRetryAfter('soon', 0)).toBeUndefined();
    expect(parseRetryAfter(undefined, 0)).toBeUndefined();
  });

  it('redacts secrets and anything shaped like a cash-in code', () => {
    expect(redact('token abc.def.ghi refused, code 1234567 used', ['abc.def.ghi'])).toBe(
      'token [redacted] refused, code [redacted] used',
    );
    expect(redact('eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln is unknown', [])).toBe('[redacted] is unknown');
    expect(redact('transfer 9f1c2d34-5e6f-4a7b-8c9d-0e1f2a3b4c5d not found', [])).toBe(
      'transfer 9f1c2d34-5e6f-4a7b-8c9d-0e1f2a3b4c5d not found',
    );
  });
});
