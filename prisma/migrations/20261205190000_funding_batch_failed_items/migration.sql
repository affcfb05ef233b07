-- A batch's FAILED items, the cancelled ones apart (fundings/funding-record.ts batchItemsPage: FAILED with the code
-- CANCELLED is the view's CANCELLED), a page at a time in reference order. The index of a batch's items by status gave
-- every FAILED one, each cancelled item read and dropped by its code: the FAILED view of a cancelled 100,000-item batch
-- read them all for each page. Partial: only batch items that failed on their own. On a large table, build it with
-- CREATE INDEX CONCURRENTLY by hand before this migration runs (it then finds it there).

-- CreateIndex
CREATE INDEX IF NOT EXISTS "funding_batch_failed_items_idx" ON "funding"("batch_id", "batch_reference") WHERE "status" = 'FAILED' AND "error_code" IS DISTINCT FROM 'CANCELLED' AND "batch_id" IS NOT NULL;
