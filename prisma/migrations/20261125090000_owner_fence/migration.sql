-- Issue 24, one writer at a time: a funding's and a payment's fencing token, and the token of the
-- run behind each timeline event. Adding a column with a constant default does not rewrite the
-- table (PostgreSQL 11+).

-- AlterTable
ALTER TABLE "funding" ADD COLUMN     "owner_fence" INTEGER NOT NULL DEFAULT 0;

-- AlterTable
ALTER TABLE "funding_event" ADD COLUMN     "fence" INTEGER;

-- AlterTable
ALTER TABLE "payment" ADD COLUMN     "owner_fence" INTEGER NOT NULL DEFAULT 0;

-- AlterTable
ALTER TABLE "payment_event" ADD COLUMN     "fence" INTEGER;
