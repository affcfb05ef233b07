-- The FAILED fundings with a transfer by (updated_at, id) (fundings/funding-record.ts listFailedWithTransfer): the
-- sweep's re-check reads them a page at a time from its position. Through the (status, updated_at) index the planner
-- took FAILED, recent and with a transfer for independent (a cancelled batch's items are FAILED with none), and could
-- walk (status, created_at, id) through every FAILED funding instead. Partial: only FAILED fundings with a transfer.
-- On a large table, build it with CREATE INDEX CONCURRENTLY by hand before this migration runs (it then finds it
-- there).

-- CreateIndex
CREATE INDEX IF NOT EXISTS "funding_failed_with_transfer_idx" ON "funding"("updated_at", "id") WHERE "status" = 'FAILED' AND "transfer_id" IS NOT NULL;
