-- The deliverer claims each endpoint's due deliveries apart (webhooks/webhook-store.ts claimDue: a few of one endpoint's
-- at most, so an endpoint that is down or slow never fills a claim): an endpoint's pending deliveries by when they are
-- due. Partial: a delivered or dead-lettered delivery adds no entry. On a large table, build it with CREATE INDEX
-- CONCURRENTLY by hand before this migration runs (it then finds it there).

-- CreateIndex
CREATE INDEX IF NOT EXISTS "webhook_delivery_pending_by_endpoint_idx" ON "webhook_delivery"("endpoint_id", "next_attempt_at", "id") WHERE "status" = 'PENDING';
