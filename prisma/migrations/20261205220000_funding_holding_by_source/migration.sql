-- The fundings still holding money on a source, newest first (fundings/funding-lookup.ts fundingsHoldingOn: the
-- console's account page, at each view of the treasury or a partner user): the fundings not final by source, in
-- (created_at, id) order. Read by status, the planner took a status and a source for independent, and with statistics
-- taken while a large treasury batch waited it walked (created_at, id) backwards through every funding to find a few.
-- Partial: it holds only the fundings not final (a batch's waiting items too: they hold money), a treasury's under a
-- NULL source. On a large table, build it with CREATE INDEX CONCURRENTLY by hand before this migration runs (it then
-- finds it there).

-- CreateIndex
CREATE INDEX IF NOT EXISTS "funding_holding_by_source_idx" ON "funding"("source_partner_user_id", "created_at", "id") WHERE "status" IN ('PENDING', 'CREATING', 'EXECUTING', 'RECONCILING', 'NEEDS_REVIEW');
