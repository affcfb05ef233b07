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
