-- Issue 32, the console with real volume (docs/benchmarks.md): two reads of the console summed
-- every row they counted from the heap. A batch's tally (its items counted and summed by state:
-- every batch page, every push of its progress, every batch on the batches list) read 100,000 heap
-- rows for a large batch; the home page's totals of the day read every funding requested today (a
-- payroll batch's items among them). Each index they use now carries the columns they sum, so both
-- read the index alone; neither adds an index to the funding table. The new indexes are built
-- before the old ones are dropped; on a large table, build them with CREATE INDEX CONCURRENTLY by
-- hand before this migration runs.

-- CreateIndex
CREATE INDEX IF NOT EXISTS "funding_batch_id_status_batch_reference_error_code_amount_idx" ON "funding"("batch_id", "status", "batch_reference", "error_code", "amount");

-- CreateIndex
CREATE INDEX IF NOT EXISTS "funding_created_at_id_status_currency_amount_idx" ON "funding"("created_at", "id", "status", "currency", "amount");

-- DropIndex
DROP INDEX "funding_batch_id_status_batch_reference_idx";

-- DropIndex
DROP INDEX "funding_created_at_id_idx";
