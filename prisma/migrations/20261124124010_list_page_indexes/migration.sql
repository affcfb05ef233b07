-- Issue 18, flat with data (docs/benchmarks.md): list pages by (status, created_at, id), so the
-- index gives the order and a page starts at its cursor; the sweep's recent FAILED fundings by
-- (status, updated_at), not all FAILED ones. On a large table, build them with CREATE INDEX
-- CONCURRENTLY by hand before this migration runs (it then only drops the old ones).

-- DropIndex
DROP INDEX "funding_status_created_at_idx";

-- DropIndex
DROP INDEX "payment_status_created_at_idx";

-- CreateIndex
CREATE INDEX IF NOT EXISTS "funding_status_created_at_id_idx" ON "funding"("status", "created_at", "id");

-- CreateIndex
CREATE INDEX IF NOT EXISTS "funding_status_updated_at_idx" ON "funding"("status", "updated_at");

-- CreateIndex
CREATE INDEX IF NOT EXISTS "payment_status_created_at_id_idx" ON "payment"("status", "created_at", "id");
