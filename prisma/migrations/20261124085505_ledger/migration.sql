-- CreateEnum
CREATE TYPE "PaymentPurpose" AS ENUM ('PURCHASE', 'DEPOSIT');

-- CreateEnum
CREATE TYPE "LedgerAccountKind" AS ENUM ('TREASURY', 'USER', 'IN_FLIGHT', 'WALLET_CLEARING', 'MERCHANT_REVENUE', 'CAPITAL');

-- CreateEnum
CREATE TYPE "LedgerTransactionKind" AS ENUM ('HOLD', 'POST', 'RELEASE', 'ADJUSTMENT', 'PAYMENT');

-- AlterTable
ALTER TABLE "funding" ADD COLUMN     "source_partner_user_id" VARCHAR(128);

-- AlterTable
ALTER TABLE "payment" ADD COLUMN     "purpose" "PaymentPurpose" NOT NULL DEFAULT 'PURCHASE';

-- CreateTable
CREATE TABLE "ledger_account" (
    "account" VARCHAR(160) NOT NULL,
    "currency" CHAR(3) NOT NULL,
    "kind" "LedgerAccountKind" NOT NULL,
    "partner_user_id" VARCHAR(128),
    "balance" DECIMAL(20,3) NOT NULL DEFAULT 0,
    "pending" DECIMAL(20,3) NOT NULL DEFAULT 0,
    "floor" DECIMAL(20,3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "ledger_account_pkey" PRIMARY KEY ("account","currency")
);

-- CreateTable
CREATE TABLE "ledger_transaction" (
    "id" BIGSERIAL NOT NULL,
    "reference" VARCHAR(300) NOT NULL,
    "kind" "LedgerTransactionKind" NOT NULL,
    "currency" CHAR(3) NOT NULL,
    "settles_id" BIGINT,
    "funding_id" UUID,
    "payment_id" UUID,
    "reason" VARCHAR(500),
    "fingerprint" CHAR(64),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "ledger_transaction_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "ledger_entry" (
    "id" BIGSERIAL NOT NULL,
    "transaction_id" BIGINT NOT NULL,
    "account" VARCHAR(160) NOT NULL,
    "currency" CHAR(3) NOT NULL,
    "amount" DECIMAL(20,3) NOT NULL,
    "pending" BOOLEAN NOT NULL DEFAULT false,
    "at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "ledger_entry_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "ledger_transaction_reference_key" ON "ledger_transaction"("reference");

-- CreateIndex
CREATE UNIQUE INDEX "ledger_transaction_settles_id_key" ON "ledger_transaction"("settles_id");

-- CreateIndex
CREATE INDEX "ledger_transaction_funding_id_idx" ON "ledger_transaction"("funding_id");

-- CreateIndex
CREATE INDEX "ledger_transaction_payment_id_idx" ON "ledger_transaction"("payment_id");

-- CreateIndex
CREATE INDEX "ledger_transaction_created_at_idx" ON "ledger_transaction"("created_at");

-- CreateIndex
CREATE INDEX "ledger_entry_account_currency_id_idx" ON "ledger_entry"("account", "currency", "id");

-- CreateIndex
CREATE INDEX "ledger_entry_transaction_id_idx" ON "ledger_entry"("transaction_id");

-- CreateIndex
CREATE INDEX "funding_source_partner_user_id_created_at_idx" ON "funding"("source_partner_user_id", "created_at");

-- AddForeignKey
ALTER TABLE "ledger_transaction" ADD CONSTRAINT "ledger_transaction_settles_id_fkey" FOREIGN KEY ("settles_id") REFERENCES "ledger_transaction"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "ledger_entry" ADD CONSTRAINT "ledger_entry_transaction_id_fkey" FOREIGN KEY ("transaction_id") REFERENCES "ledger_transaction"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "ledger_entry" ADD CONSTRAINT "ledger_entry_account_currency_fkey" FOREIGN KEY ("account", "currency") REFERENCES "ledger_account"("account", "currency") ON DELETE RESTRICT ON UPDATE CASCADE;

-- ---- The ledger's rules, kept by the database (docs/ledger.md) --------------------------------

-- Available (balance + pending, pending being the negative holds) never below the account's
-- floor: checked on every change of the row, so concurrent holds serialise on the row lock and
-- the one that would overdraw fails. No floor (NULL): IN_FLIGHT, WALLET_CLEARING, MERCHANT_REVENUE,
-- CAPITAL, and the treasury while TREASURY_LIMIT is unset.
ALTER TABLE "ledger_account" ADD CONSTRAINT "ledger_account_floor" CHECK ("floor" IS NULL OR "balance" + "pending" >= "floor");
ALTER TABLE "ledger_entry" ADD CONSTRAINT "ledger_entry_amount_not_zero" CHECK ("amount" <> 0);

-- Entries and transactions are append-only (walletflow_refuse_row_change: see wallet_call).
CREATE TRIGGER "ledger_entry_append_only" BEFORE UPDATE OR DELETE ON "ledger_entry"
  FOR EACH ROW EXECUTE FUNCTION "walletflow_refuse_row_change"();
CREATE TRIGGER "ledger_transaction_append_only" BEFORE UPDATE OR DELETE ON "ledger_transaction"
  FOR EACH ROW EXECUTE FUNCTION "walletflow_refuse_row_change"();

-- Each new entry moves its account's balance (posted) or pending (holds): the only writer of
-- those two columns, so an account's balance is the sum of its entries by construction.
CREATE FUNCTION "walletflow_ledger_apply_entry"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW."pending" THEN
    UPDATE "ledger_account" SET "pending" = "pending" + NEW."amount", "updated_at" = now()
      WHERE "account" = NEW."account" AND "currency" = NEW."currency";
  ELSE
    UPDATE "ledger_account" SET "balance" = "balance" + NEW."amount", "updated_at" = now()
      WHERE "account" = NEW."account" AND "currency" = NEW."currency";
  END IF;
  RETURN NULL;
END;
$$;
CREATE TRIGGER "ledger_entry_apply" AFTER INSERT ON "ledger_entry"
  FOR EACH ROW EXECUTE FUNCTION "walletflow_ledger_apply_entry"();

-- balance and pending change only through the trigger above (one trigger level down), never by
-- a direct UPDATE; the floor may be changed (TREASURY_LIMIT), within the CHECK.
CREATE FUNCTION "walletflow_ledger_guard_account"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF (NEW."balance" <> OLD."balance" OR NEW."pending" <> OLD."pending") AND pg_trigger_depth() < 2 THEN
    RAISE EXCEPTION 'ledger_account balances change only through ledger entries' USING ERRCODE = 'restrict_violation';
  END IF;
  RETURN NEW;
END;
$$;
CREATE TRIGGER "ledger_account_guard" BEFORE UPDATE ON "ledger_account"
  FOR EACH ROW EXECUTE FUNCTION "walletflow_ledger_guard_account"();
CREATE TRIGGER "ledger_account_no_delete" BEFORE DELETE ON "ledger_account"
  FOR EACH ROW EXECUTE FUNCTION "walletflow_refuse_row_change"();

-- Every transaction's entries sum to zero, posted and pending each: checked at commit (deferred),
-- once all of its entries are in.
CREATE FUNCTION "walletflow_ledger_transaction_balanced"() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  posted numeric;
  held numeric;
BEGIN
  SELECT COALESCE(SUM("amount") FILTER (WHERE NOT "pending"), 0), COALESCE(SUM("amount") FILTER (WHERE "pending"), 0)
    INTO posted, held FROM "ledger_entry" WHERE "transaction_id" = NEW."transaction_id";
  IF posted <> 0 OR held <> 0 THEN
    RAISE EXCEPTION 'ledger transaction % does not sum to zero', NEW."transaction_id" USING ERRCODE = 'check_violation';
  END IF;
  RETURN NULL;
END;
$$;
CREATE CONSTRAINT TRIGGER "ledger_entry_balanced" AFTER INSERT ON "ledger_entry"
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION "walletflow_ledger_transaction_balanced"();
