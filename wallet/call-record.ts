// The audit record of one wallet call, handed to the onCall hook after every call. It carries
// ids, status and timing only: never tokens, codes, keys or bodies.
import type { WalletOperation, WalletService } from './operations.ts';
import type { WalletOutcome } from './outcome.ts';

export interface WalletCallRecord {
  requestReferenceNo: string;
  service: WalletService;
  operation: WalletOperation;
  method: 'GET' | 'POST' | 'PUT';
  /** The URL path (base prefix included), never the query string. */
  path: string;
  httpStatus: number | null;
  outcome: 'ok' | WalletOutcome;
  errorCode: string | null;
  durationMs: number;
  startedAt: Date;
}

export type CallRecordHook = (record: WalletCallRecord) => void | Promise<void>;

/** What is known of a call before it is sent: the same ids and names as its record, nothing else. */
export type WalletCallStart = Pick<
  WalletCallRecord,
  'requestReferenceNo' | 'service' | 'operation' | 'method' | 'path'
>;

/**
 * Called as each call starts (tracing: one span per call); the function it returns is called once
 * with the call's record when the call ends, before the onCall hook. Neither may throw.
 */
export type CallStartHook = (call: WalletCallStart) => (record: WalletCallRecord) => void;
export type AuditErrorHook = (error: unknown, record: WalletCallRecord) => void;

/** Runs the hook so that nothing it does (throw, reject) changes the call's result. */
export async function reportCall(
  record: WalletCallRecord,
  onCall: CallRecordHook | undefined,
  onAuditError: AuditErrorHook | undefined,
): Promise<void> {
  if (!onCall) return;
  try {
    await onCall(record);
  } catch (error) {
    try {
      onAuditError?.(error, record);
    } catch {
      // The audit error hook failing too must still not change the call's result.
    }
  }
}
