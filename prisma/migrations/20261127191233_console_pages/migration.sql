-- Issue 32, the ops console's pages: each of their reads is an index lookup or a bounded index
-- range (docs/console.md). The search finds batch items by their reference (in any batch) and
-- fundings by a cash-in code's masked form, newest first; the webhooks page lists dead letters
-- (FAILED) across endpoints and per endpoint; the audit page pages ops_action by (at, id)
-- (replacing the index on at alone). On a large table, build the new indexes with CREATE INDEX
-- CONCURRENTLY by hand before this migration runs (it then only drops the old one).

-- DropIndex
DROP INDEX "ops_action_at_idx";

-- CreateIndex
CREATE INDEX IF NOT EXISTS "funding_batch_reference_created_at_id_idx" ON "funding"("batch_reference", "created_at", "id");

-- CreateIndex
CREATE INDEX IF NOT EXISTS "funding_cash_in_code_masked_created_at_id_idx" ON "funding"("cash_in_code_masked", "created_at", "id");

-- CreateIndex
CREATE INDEX IF NOT EXISTS "ops_action_at_id_idx" ON "ops_action"("at", "id");

-- CreateIndex
CREATE INDEX IF NOT EXISTS "webhook_delivery_status_created_at_id_idx" ON "webhook_delivery"("status", "created_at", "id");

-- CreateIndex
CREATE INDEX IF NOT EXISTS "webhook_delivery_endpoint_id_status_created_at_id_idx" ON "webhook_delivery"("endpoint_id", "status", "created_at", "id");
