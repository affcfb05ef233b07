// Which failed Temporal calls are refusals a caller may send again after Retry-After (lib/workflow-unavailable.ts), and
// which are errors: each gRPC status as grpc-js throws it (an Error with its code, details and metadata).
import { describe, expect, it } from 'vitest';
import { startedWords, workflowRefusalOf } from '../../lib/workflow-unavailable.ts';

function grpcError(code: number, details: string): Error {
  return Object.assign(new Error(`${code} ${details}`), { code, details, metadata: {} });
}

describe('workflowRefusalOf', () => {
  it('reads a call that broke off on the way (a reset stream, a call ended with no status) as one that may have been taken', () => {
    // The client retries these itself as passing; after its retries, each was answered 500 INTERNAL by the API.
    const brokenOff: Array<[number, string]> = [
      [13, 'Received RST_STREAM with code 2 triggered by internal client error'],
      [13, 'Call ended without gRPC status'],
      [2, 'unknown error from the frontend'],
      [10, 'aborted'],
      [1, 'Cancelled on client'],
      [15, 'data loss'],
    ];
    for (const [code, details] of brokenOff) {
      const refusal = workflowRefusalOf(new Error('start failed', { cause: grpcError(code, details) }));
      expect(refusal, details).toEqual({ reason: 'interrupted', retryAfterSeconds: 5, mayHaveBeenTaken: true });
      expect(startedWords(refusal!, 'it has not started.')).not.toContain('has not started');
    }
  });

  it('keeps its readings of the refusals it knew, and leaves a permanent refusal an error', () => {
    expect(workflowRefusalOf(grpcError(14, 'unavailable'))).toMatchObject({
      reason: 'unreachable',
      mayHaveBeenTaken: false,
    });
    expect(workflowRefusalOf(grpcError(4, 'deadline'))).toMatchObject({ reason: 'timed-out', mayHaveBeenTaken: true });
    expect(workflowRefusalOf(grpcError(8, 'exhausted'))).toMatchObject({ reason: 'busy', mayHaveBeenTaken: false });
    expect(workflowRefusalOf(grpcError(9, 'precondition'), { update: true })).toMatchObject({ reason: 'task-failing' });
    // A bug or a configuration Temporal refuses for good (a bad argument, no such namespace, no permission) is no
    // refusal to wait out.
    for (const code of [3, 5, 7, 9, 12, 16])
      expect(workflowRefusalOf(grpcError(code, 'refused')), String(code)).toBe(null);
    // An INTERNAL the client does not read as passing is a fault: a TLS alert, a message that cannot be read.
    for (const details of [
      'Received RST_STREAM with code 2 triggered by internal client error: SSL alert number 42',
      'Response message parsing error: invalid wire type',
    ])
      expect(workflowRefusalOf(grpcError(13, details)), details).toBe(null);
    expect(startedWords(workflowRefusalOf(grpcError(14, 'unavailable'))!, 'it has not started.')).toBe(
      'it has not started.',
    );
  });
});
