-- The sweep's candidates (fundings/funding-record.ts listUnfinished): the fundings not final,
-- except a batch's items waiting their turn (PENDING with a batch), which their batch's runner
-- starts. Oldest first from the sweep's cursor. Without it, every page of the sweep walked the
-- (status, created_at, id) index through all of a running batch's waiting items (100,000 of them:
-- 0.3 s a page on a quiet machine), whatever else it found. Partial: not declared in schema.prisma
-- (it cannot say WHERE); the funding model's comment names it. It holds only the fundings in
-- flight, so a funding stored and moved to its final state adds and removes one small entry.
-- CreateIndex (partial)
CREATE INDEX "funding_sweep_candidates_idx" ON "funding"("created_at", "id")
  WHERE "status" IN ('PENDING', 'CREATING', 'EXECUTING', 'RECONCILING', 'NEEDS_REVIEW') AND ("status" <> 'PENDING' OR "batch_id" IS NULL);
