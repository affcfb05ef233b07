// A batch's report (contract-decisions section 14: one row per item), as the ops API's
// GET /ops/funding-batches/{id}/report and the console's download both stream it: its columns and
// its rows, read a page at a time as the answer takes them (api/http/csv-stream.ts).
import type { CsvReport } from '../lib/csv.ts';
import type { BatchService } from './batch-service.ts';

export const batchReportColumns = ['reference', 'funding_id', 'status', 'error_code', 'currency', 'amount'] as const;

/** The report of a batch that exists (the caller checked). */
export function batchReport(batches: Pick<BatchService, 'allItems'>, batchId: string): CsvReport {
  async function* rows() {
    for await (const item of batches.allItems(batchId))
      yield [item.reference, item.fundingId, item.status, item.errorCode, item.amount.currency, item.amount.value];
  }
  return { report: 'batch-report', header: batchReportColumns, rows: rows() };
}
