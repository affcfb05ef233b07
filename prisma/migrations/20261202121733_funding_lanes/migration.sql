-- AlterTable
ALTER TABLE "funding" ADD COLUMN     "carried_by" VARCHAR(200),
ADD COLUMN     "carried_by_chunk" VARCHAR(64),
ADD COLUMN     "carried_by_run_id" VARCHAR(64),
ADD COLUMN     "lane" SMALLINT;

-- A lane's waiting fundings in arrival order (fundings/funding-record.ts nextPendingLaneFundings):
-- PENDING ones with a lane only, so a funding adds one small entry while it waits and none after.
-- Partial: not declared in schema.prisma (it cannot say WHERE); the funding model's comment names it.
-- CreateIndex (partial)
CREATE INDEX "funding_lane_pending_idx" ON "funding"("lane", "created_at", "id")
  WHERE "status" = 'PENDING' AND "lane" IS NOT NULL;

-- What a lane chunk claimed and has not finished (fundings/funding-record.ts leftByChunk, read by
-- its retried attempt): only fundings a chunk claimed, while they are under way.
-- CreateIndex (partial)
CREATE INDEX "funding_carried_by_chunk_idx" ON "funding"("carried_by_run_id", "carried_by_chunk")
  WHERE "carried_by_chunk" IS NOT NULL AND "status" IN ('CREATING', 'EXECUTING', 'RECONCILING');
