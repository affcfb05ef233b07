-- AlterTable
ALTER TABLE "funding_batch" ADD COLUMN     "resumed_by" VARCHAR(128);
