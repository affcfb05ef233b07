// Persists the wallet client's audit hook into the append-only `wallet_call` table: one row per
// call with its Request-Reference-No, operation, status, outcome, error code and duration; and,
// when given metrics, counts the call and its latency (walletflow_wallet_call…). Offers the calls
// behind given Request-Reference-Nos to the console (walletCallsByReference).
import { overloadOf } from '../lib/admission.ts';
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

/**
 * The row written again, a second apart, when PostgreSQL or the API's pool refused its connection (lib/admission.ts):
 * the audit is the settlement's evidence of a call, not to be lost to a burst's wait.
 */
async function withConnectionRetries<T>(write: () => Promise<T>, tries = 3): Promise<T> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await write();
    } catch (error) {
      if (attempt >= tries || !overloadOf(error)?.connectionRefused) throw error;
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  }
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
      await withConnectionRetries(() =>
        database.walletCall.create({
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
        }),
      );
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

/** One recorded wallet call as the console shows it: never a body, a token or a code. */
export interface WalletCallView {
  requestReferenceNo: string;
  operation: string;
  method: string;
  httpStatus: number | null;
  outcome: string;
  errorCode: string | null;
  durationMs: number;
  startedAt: Date;
}

/**
 * The recorded calls behind these Request-Reference-Nos (a funding's or a payment's events and
 * review evidence carry them), oldest first: one index lookup per reference, at most `limit` rows.
 */
export async function walletCallsByReference(
  database: Database,
  references: readonly string[],
  limit = 200,
): Promise<WalletCallView[]> {
  const distinct = [...new Set(references)].slice(0, limit);
  if (distinct.length === 0) return [];
  return database.walletCall.findMany({
    where: { requestReferenceNo: { in: distinct } },
    orderBy: [{ startedAt: 'asc' }, { id: 'asc' }],
    take: limit,
    select: {
      requestReferenceNo: true,
      operation: true,
      method: true,
      httpStatus: true,
      outcome: true,
      errorCode: true,
      durationMs: true,
      startedAt: true,
    },
  });
}
