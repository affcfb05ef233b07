-- Funding batches (contract-decisions section 14): the batch, and each item as a funding row that
-- names its batch and its reference there. New columns without defaults: no table rewrite.

-- CreateEnum
CREATE TYPE "FundingBatchState" AS ENUM ('AWAITING_APPROVAL', 'RUNNING', 'PAUSED', 'COMPLETED', 'CANCELLED', 'REJECTED');

-- AlterTable
ALTER TABLE "funding" ADD COLUMN     "batch_id" UUID,
ADD COLUMN     "batch_reference" VARCHAR(64);

-- CreateTable
CREATE TABLE "funding_batch" (
    "id" UUID NOT NULL,
    "idempotency_key" VARCHAR(255) NOT NULL,
    "request_fingerprint" CHAR(64) NOT NULL,
    "workflow_id" VARCHAR(200) NOT NULL,
    "name" VARCHAR(200) NOT NULL,
    "state" "FundingBatchState" NOT NULL,
    "source_partner_user_id" VARCHAR(128),
    "currency" CHAR(3) NOT NULL,
    "total_count" INTEGER NOT NULL,
    "total_amount" DECIMAL(20,3) NOT NULL,
    "created_by" VARCHAR(128) NOT NULL,
    "approved_by" VARCHAR(128),
    "rejected_by" VARCHAR(128),
    "paused_by" VARCHAR(128),
    "cancelled_by" VARCHAR(128),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "started_at" TIMESTAMPTZ(3),
    "completed_at" TIMESTAMPTZ(3),
    "updated_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "funding_batch_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "funding_batch_idempotency_key_key" ON "funding_batch"("idempotency_key");

-- CreateIndex
CREATE INDEX "funding_batch_state_created_at_id_idx" ON "funding_batch"("state", "created_at", "id");

-- CreateIndex
CREATE INDEX "funding_batch_created_at_id_idx" ON "funding_batch"("created_at", "id");

-- CreateIndex
CREATE INDEX "funding_batch_id_status_batch_reference_idx" ON "funding"("batch_id", "status", "batch_reference");

-- CreateIndex
CREATE UNIQUE INDEX "funding_batch_id_batch_reference_key" ON "funding"("batch_id", "batch_reference");

-- AddForeignKey
ALTER TABLE "funding" ADD CONSTRAINT "funding_batch_id_fkey" FOREIGN KEY ("batch_id") REFERENCES "funding_batch"("id") ON DELETE SET NULL ON UPDATE CASCADE;
