-- CreateEnum
CREATE TYPE "PaymentStatus" AS ENUM ('PENDING', 'CREATING', 'EXECUTING', 'SUCCEEDED', 'FAILED', 'NEEDS_REVIEW');

-- CreateTable
CREATE TABLE "payment" (
    "id" UUID NOT NULL,
    "idempotency_key" VARCHAR(255) NOT NULL,
    "request_fingerprint" CHAR(64) NOT NULL,
    "workflow_id" VARCHAR(200) NOT NULL,
    "status" "PaymentStatus" NOT NULL DEFAULT 'PENDING',
    "link_id" UUID NOT NULL,
    "currency" CHAR(3) NOT NULL,
    "amount" DECIMAL(16,3) NOT NULL,
    "wallet_payment_id" VARCHAR(100),
    "fee_currency" CHAR(3),
    "fee" DECIMAL(16,3),
    "error_code" VARCHAR(64),
    "error_message" VARCHAR(500),
    "review_reason" VARCHAR(500),
    "review_evidence" JSONB,
    "resolved_outcome" VARCHAR(16),
    "resolved_by" VARCHAR(128),
    "resolved_note" VARCHAR(500),
    "resolved_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "payment_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "payment_event" (
    "id" BIGSERIAL NOT NULL,
    "payment_id" UUID NOT NULL,
    "status" "PaymentStatus" NOT NULL,
    "request_reference_no" VARCHAR(50),
    "detail" VARCHAR(500),
    "at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "payment_event_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "payment_idempotency_key_key" ON "payment"("idempotency_key");

-- CreateIndex
CREATE INDEX "payment_status_created_at_idx" ON "payment"("status", "created_at");

-- CreateIndex
CREATE INDEX "payment_created_at_id_idx" ON "payment"("created_at", "id");

-- CreateIndex
CREATE INDEX "payment_wallet_payment_id_idx" ON "payment"("wallet_payment_id");

-- CreateIndex
CREATE INDEX "payment_event_payment_id_id_idx" ON "payment_event"("payment_id", "id");

-- AddForeignKey
ALTER TABLE "payment_event" ADD CONSTRAINT "payment_event_payment_id_fkey" FOREIGN KEY ("payment_id") REFERENCES "payment"("id") ON DELETE CASCADE ON UPDATE CASCADE;
