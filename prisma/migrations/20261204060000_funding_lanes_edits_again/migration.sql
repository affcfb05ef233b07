-- What 20261202121733_funding_lanes gained after a database could have applied it (that file was
-- edited twice once it had been committed: the carried_by_chunk column, then its index): a database
-- migrated before the edits lacks them, and a lane chunk's claim then fails on the missing column.
-- Added here where missing; a no-op where the edited migration made them.
ALTER TABLE "funding" ADD COLUMN IF NOT EXISTS "carried_by_chunk" VARCHAR(64);

CREATE INDEX IF NOT EXISTS "funding_carried_by_chunk_idx" ON "funding"("carried_by_run_id", "carried_by_chunk")
  WHERE "carried_by_chunk" IS NOT NULL AND "status" IN ('CREATING', 'EXECUTING', 'RECONCILING');
