// Persists the wallet client's audit hook into the append-only `wallet_call` table: one row per
// call with its Request-Reference-No, operation, status, outcome, error code and duration; and,
// when given metrics, counts the call and its latency (walletflow_wallet_call…).
import type { Database } from '../lib/database.ts';
import type { Logger } from '../lib/logger.ts';
import type { Metrics } from '../lib/metrics.ts';

/** The wallet client's audit record (wallet/call-record.ts), as this table stores it. */
export interface WalletCallRow {
  requestReferenceNo: string;
  service: string;
  operation: string;
  method: string;
  path: string;
  httpStatus: number | null;
  outcome: string;
  errorCode: string | null;
  durationMs: number;
  startedAt: Date;
}

export function createWalletCallLog(
  database: Database,
  logger: Logger,
  metrics?: Pick<Metrics, 'walletCall'>,
): { onCall: (record: WalletCallRow) => Promise<void>; onAuditError: (error: unknown, record: WalletCallRow) => void } {
  return {
    onCall: async (record) => {
      // Counted first: a lost audit row must not lose the sample too.
      metrics?.walletCall(record);
      await database.walletCall.create({
        data: {
          requestReferenceNo: record.requestReferenceNo,
          service: record.service,
          operation: record.operation,
          method: record.method,
          path: record.path.slice(0, 512),
          httpStatus: record.httpStatus,
          outcome: record.outcome,
          errorCode: record.errorCode?.slice(0, 64) ?? null,
          durationMs: Math.round(record.durationMs),
          startedAt: record.startedAt,
        },
      });
    },
    // A lost audit row must not fail a money movement; it is logged (ids only) instead.
    onAuditError: (error, record) => {
      logger.error(
        { err: error, requestReferenceNo: record.requestReferenceNo, operation: record.operation },
        'could not record a wallet call',
      );
    },
  };
}
