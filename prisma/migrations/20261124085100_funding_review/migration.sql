-- AlterEnum
ALTER TYPE "FundingStatus" ADD VALUE 'NEEDS_REVIEW';

-- AlterTable
ALTER TABLE "funding" ADD COLUMN     "resolved_at" TIMESTAMPTZ(3),
ADD COLUMN     "resolved_by" VARCHAR(128),
ADD COLUMN     "resolved_note" VARCHAR(500),
ADD COLUMN     "resolved_outcome" VARCHAR(16),
ADD COLUMN     "review_evidence" JSONB,
ADD COLUMN     "review_reason" VARCHAR(500);
