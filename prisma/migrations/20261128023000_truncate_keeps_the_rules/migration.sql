-- TRUNCATE keeps the rules the row triggers keep (it fires no row or INSERT/UPDATE/DELETE trigger):
-- the ledger's tables are append-only, and a TRUNCATE of ledger_transaction is no longer refused by
-- the foreign key its entries had (migration …_ledger_references_per_statement), so each of them
-- refuses it; a TRUNCATE of the funding table (with CASCADE: its events reference it) empties the
-- batches' tallies with it, so that they never count items that are gone.
CREATE FUNCTION "walletflow_refuse_truncate"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION '% is append-only: it is never truncated', TG_TABLE_NAME USING ERRCODE = 'restrict_violation';
END;
$$;
CREATE TRIGGER "ledger_transaction_no_truncate" BEFORE TRUNCATE ON "ledger_transaction" FOR EACH STATEMENT EXECUTE FUNCTION "walletflow_refuse_truncate"();
CREATE TRIGGER "ledger_entry_no_truncate" BEFORE TRUNCATE ON "ledger_entry" FOR EACH STATEMENT EXECUTE FUNCTION "walletflow_refuse_truncate"();
CREATE TRIGGER "ledger_account_no_truncate" BEFORE TRUNCATE ON "ledger_account" FOR EACH STATEMENT EXECUTE FUNCTION "walletflow_refuse_truncate"();

CREATE FUNCTION "walletflow_funding_batch_tally_truncated"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM "funding_batch_tally";
  RETURN NULL;
END;
$$;
CREATE TRIGGER "funding_batch_tally_truncate" AFTER TRUNCATE ON "funding" FOR EACH STATEMENT EXECUTE FUNCTION "walletflow_funding_batch_tally_truncated"();
