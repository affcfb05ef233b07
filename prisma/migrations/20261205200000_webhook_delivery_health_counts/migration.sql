-- The console's home counts each endpoint's dead letters and deliveries being retried, up to a limit
-- (webhooks/webhook-store.ts health): an endpoint's FAILED deliveries, and its PENDING ones tried before, in id order.
-- With the other indexes the planner could choose, by its costs, a plan that read the table once for each endpoint
-- (a healthy endpoint's delivered history, a backlog not yet tried). In id order only these give the count's rows
-- without reading the others. Partial: a delivered delivery, or one not yet tried, adds no entry. On a large table,
-- build them with CREATE INDEX CONCURRENTLY by hand before this migration runs (it then finds them there).

-- CreateIndex
CREATE INDEX IF NOT EXISTS "webhook_delivery_dead_letters_by_endpoint_idx" ON "webhook_delivery"("endpoint_id", "id") WHERE "status" = 'FAILED';

-- CreateIndex
CREATE INDEX IF NOT EXISTS "webhook_delivery_retrying_by_endpoint_idx" ON "webhook_delivery"("endpoint_id", "id") WHERE "status" = 'PENDING' AND "attempts" > 0;
