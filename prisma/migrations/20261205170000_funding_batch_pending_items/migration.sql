-- A batch runner reads its batch's PENDING items a page at a time in id order from its cursor (fundings/funding-record.ts
-- nextPendingBatchItems). No index had them in that order: each page fetched every PENDING item of the batch and sorted
-- them (a 100,000-item batch: 500 pages of up to 100,000 rows). Partial: only batch items still PENDING, the few a
-- running batch has left. On a large table, build it with CREATE INDEX CONCURRENTLY by hand before this migration runs
-- (it then finds it there).

-- CreateIndex
CREATE INDEX IF NOT EXISTS "funding_batch_pending_items_idx" ON "funding"("batch_id", "id") WHERE "status" = 'PENDING' AND "batch_id" IS NOT NULL;

-- The planner takes a batch's items and their status for independent columns, so it reckons a batch's PENDING items a
-- few dozen (a batch's share of the table times PENDING's) and would sort them rather than read this index. The most
-- common (batch, status) pairs, counted by the next ANALYZE, tell it how many of a large batch's items are PENDING.
CREATE STATISTICS IF NOT EXISTS "funding_batch_status_stats" (mcv) ON "batch_id", "status" FROM "funding";
