-- The sweep's payments (payments/payment-record.ts listUnfinished): the payments not final and not in review, oldest
-- first from the sweep's cursor. Through the (status, created_at, id) index they came sorted by status first; the
-- planner, taking a status and a creation time for independent, could walk (created_at, id) instead and read the
-- whole payment history to find a few in flight, every sweep. Partial: it holds only the payments in flight, read with
-- the statuses as constants in the statement. On a large table, build it with CREATE INDEX CONCURRENTLY by hand before
-- this migration runs (it then finds it there).

-- CreateIndex
CREATE INDEX IF NOT EXISTS "payment_sweep_candidates_idx" ON "payment"("created_at", "id") WHERE "status" IN ('PENDING', 'CREATING', 'EXECUTING');
