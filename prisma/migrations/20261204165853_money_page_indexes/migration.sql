-- The wallet app's money page (api/embedded/money-page.ts): a linked user's latest fundings paid to
-- their wallet and their latest payments, newest first, each from an index in time order. Without
-- them the page and its polls walked every funding and payment back by time for a user with few.
-- On a large table, build them with CREATE INDEX CONCURRENTLY by hand before this migration runs
-- (it then finds them and builds nothing).

-- CreateIndex
CREATE INDEX IF NOT EXISTS "funding_link_id_created_at_idx" ON "funding"("link_id", "created_at");

-- CreateIndex
CREATE INDEX IF NOT EXISTS "payment_link_id_created_at_idx" ON "payment"("link_id", "created_at");
