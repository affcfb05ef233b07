-- The sweep judges a funding by how long its owner has shown nothing, not by its age
-- (docs/architecture.md, who owns a funding): each claim and a batch chunk's beat set this.
-- AlterTable
ALTER TABLE "funding" ADD COLUMN     "owner_seen_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP;

-- A funding not final when this runs was last seen at its last write.
UPDATE "funding" SET "owner_seen_at" = "updated_at" WHERE "status" IN ('PENDING', 'CREATING', 'EXECUTING', 'RECONCILING', 'NEEDS_REVIEW');
