-- CreateEnum
CREATE TYPE "FundingStatus" AS ENUM ('PENDING', 'CREATING', 'EXECUTING', 'RECONCILING', 'APPROVED', 'DECLINED', 'REJECTED', 'FAILED');

-- CreateEnum
CREATE TYPE "RecipientType" AS ENUM ('CODE', 'TOKEN');

-- CreateTable
CREATE TABLE "funding" (
    "id" UUID NOT NULL,
    "idempotency_key" VARCHAR(255) NOT NULL,
    "request_fingerprint" CHAR(64) NOT NULL,
    "workflow_id" VARCHAR(200) NOT NULL,
    "status" "FundingStatus" NOT NULL DEFAULT 'PENDING',
    "recipient_type" "RecipientType" NOT NULL,
    "link_id" UUID,
    "cash_in_code_encrypted" BYTEA,
    "cash_in_code_masked" VARCHAR(16),
    "currency" CHAR(3) NOT NULL,
    "amount" DECIMAL(16,3) NOT NULL,
    "transfer_id" VARCHAR(100),
    "abandoned_transfer_ids" TEXT[],
    "cancel_requested" BOOLEAN NOT NULL DEFAULT false,
    "error_code" VARCHAR(64),
    "error_message" VARCHAR(500),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "funding_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "funding_event" (
    "id" BIGSERIAL NOT NULL,
    "funding_id" UUID NOT NULL,
    "status" "FundingStatus" NOT NULL,
    "request_reference_no" VARCHAR(50),
    "detail" VARCHAR(500),
    "at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "funding_event_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "funding_idempotency_key_key" ON "funding"("idempotency_key");

-- CreateIndex
CREATE INDEX "funding_status_created_at_idx" ON "funding"("status", "created_at");

-- CreateIndex
CREATE INDEX "funding_created_at_id_idx" ON "funding"("created_at", "id");

-- CreateIndex
CREATE INDEX "funding_transfer_id_idx" ON "funding"("transfer_id");

-- CreateIndex
CREATE INDEX "funding_event_funding_id_id_idx" ON "funding_event"("funding_id", "id");

-- AddForeignKey
ALTER TABLE "funding_event" ADD CONSTRAINT "funding_event_funding_id_fkey" FOREIGN KEY ("funding_id") REFERENCES "funding"("id") ON DELETE CASCADE ON UPDATE CASCADE;
