-- A day's settlement as a durable run (contract-decisions section 10, docs/ledger.md): the run
-- and its lines, written by ledger/settlement-runs.ts as the settleDay workflow checks the day.
-- At most one run of a day is RUNNING (a partial unique index: schema.prisma cannot say WHERE).
-- The day is read a page at a time by keyset from three small partial indexes, one entry per
-- approved funding, succeeded payment and successful payment execute: the events that made a
-- funding APPROVED or a payment SUCCEEDED, by time; the wallet call audit's successful payment
-- executes, by the wallet payment id in their path (whatever prefix OP_URL has). Each is a new
-- index on a table that may be large: built in this migration's transaction, it holds the table
-- for seconds per million rows (docs/running-at-scale.md).
-- CreateEnum
CREATE TYPE "SettlementRunState" AS ENUM ('RUNNING', 'SUCCEEDED', 'FAILED');

-- CreateEnum
CREATE TYPE "SettlementLineKind" AS ENUM ('funding', 'payment');

-- CreateEnum
CREATE TYPE "SettlementResult" AS ENUM ('matched', 'missing', 'mismatched');

-- CreateTable
CREATE TABLE "settlement_run" (
    "id" UUID NOT NULL,
    "date" CHAR(10) NOT NULL,
    "number" INTEGER NOT NULL,
    "time_zone" VARCHAR(64) NOT NULL,
    "state" "SettlementRunState" NOT NULL DEFAULT 'RUNNING',
    "whole_day" BOOLEAN NOT NULL,
    "requested_by" VARCHAR(128) NOT NULL,
    "total" INTEGER NOT NULL DEFAULT 0,
    "checked" INTEGER NOT NULL DEFAULT 0,
    "summary" JSONB,
    "failure" VARCHAR(200),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "finished_at" TIMESTAMPTZ(3),

    CONSTRAINT "settlement_run_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "settlement_line" (
    "run_id" UUID NOT NULL,
    "kind" "SettlementLineKind" NOT NULL,
    "item_id" UUID NOT NULL,
    "wallet_id" VARCHAR(100),
    "result" "SettlementResult" NOT NULL,
    "currency" CHAR(3) NOT NULL,
    "amount" DECIMAL(16,3) NOT NULL,
    "wallet_status" VARCHAR(32),
    "wallet_amount" DECIMAL(16,3),
    "ledger_amount" DECIMAL(20,3),
    "detail" VARCHAR(500),

    CONSTRAINT "settlement_line_pkey" PRIMARY KEY ("run_id","kind","item_id")
);

-- CreateIndex
CREATE UNIQUE INDEX "settlement_run_date_number_key" ON "settlement_run"("date", "number");

-- CreateIndex (partial unique): one RUNNING run per day.
CREATE UNIQUE INDEX "settlement_run_running_date_key" ON "settlement_run"("date") WHERE "state" = 'RUNNING';

-- CreateIndex (partial): the events that made a funding APPROVED, by time (a day's fundings, by keyset).
CREATE INDEX "funding_event_approved_at_id_idx" ON "funding_event"("at", "id") WHERE "status" = 'APPROVED';

-- CreateIndex (partial): the events that made a payment SUCCEEDED, by time.
CREATE INDEX "payment_event_succeeded_at_id_idx" ON "payment_event"("at", "id") WHERE "status" = 'SUCCEEDED';

-- CreateIndex (partial, expression): the successful payment executes, by the wallet payment id in their path.
CREATE INDEX "wallet_call_payment_executed_idx" ON "wallet_call"((substring("path" from '/merchant/payments/([^/]+)/execute$'))) WHERE "operation" = 'op.payments.execute' AND "outcome" = 'ok';
