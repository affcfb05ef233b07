-- Issue 26 #3: every ops write leaves the key's name behind: an audit row per write request,
-- the actor of a ledger transaction (adjustments), and who deleted a webhook endpoint.

-- AlterTable
ALTER TABLE "ledger_transaction" ADD COLUMN     "actor" VARCHAR(128);

-- AlterTable
ALTER TABLE "webhook_endpoint" ADD COLUMN     "deleted_by" VARCHAR(128);

-- CreateTable
CREATE TABLE "ops_action" (
    "id" BIGSERIAL NOT NULL,
    "at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "key_name" VARCHAR(128) NOT NULL,
    "actor" VARCHAR(100),
    "method" VARCHAR(8) NOT NULL,
    "path" VARCHAR(512) NOT NULL,
    "status" INTEGER NOT NULL,
    "request_id" VARCHAR(64),

    CONSTRAINT "ops_action_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "ops_action_key_name_at_idx" ON "ops_action"("key_name", "at");

-- CreateIndex
CREATE INDEX "ops_action_at_idx" ON "ops_action"("at");
