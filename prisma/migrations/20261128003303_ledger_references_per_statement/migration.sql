-- An entry's transaction and a settlement's hold are checked once per statement, like the
-- entries' zero-sum and their accounts, instead of by foreign keys checked once per row: each of
-- those checks looked up the referenced row and locked it (FOR KEY SHARE), so a 100,000-item
-- batch's holds made 200,000 checks and locks of the transactions its own statement had just
-- inserted (2 to 3 of its 13 s in psql), and its cancel's 100,000 releases as many of the holds.
-- Transactions and entries are append-only (neither is ever updated or deleted), so a reference
-- that exists when its statement ends exists for good: the check at insert is all a foreign key
-- did for them. Every writer inserts a transaction's entries in the statement that inserts the
-- transaction or after it.
ALTER TABLE "ledger_entry" DROP CONSTRAINT "ledger_entry_transaction_id_fkey";
ALTER TABLE "ledger_transaction" DROP CONSTRAINT "ledger_transaction_settles_id_fkey";

CREATE OR REPLACE FUNCTION "walletflow_ledger_entries_balanced"() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  offending bigint;
BEGIN
  SELECT "transaction_id" INTO offending FROM new_entries
    GROUP BY "transaction_id"
    HAVING COALESCE(SUM("amount") FILTER (WHERE NOT "pending"), 0) <> 0 OR COALESCE(SUM("amount") FILTER (WHERE "pending"), 0) <> 0
    ORDER BY "transaction_id" LIMIT 1;
  IF FOUND THEN
    RAISE EXCEPTION 'ledger transaction % does not sum to zero', offending USING ERRCODE = 'check_violation';
  END IF;
  SELECT e."transaction_id" INTO offending FROM (SELECT DISTINCT "transaction_id" FROM new_entries) e
    WHERE NOT EXISTS (SELECT 1 FROM "ledger_transaction" t WHERE t."id" = e."transaction_id") LIMIT 1;
  IF FOUND THEN
    RAISE EXCEPTION 'ledger entries name transaction %, which does not exist', offending USING ERRCODE = 'foreign_key_violation';
  END IF;
  RETURN NULL;
END;
$$;

CREATE FUNCTION "walletflow_ledger_settles_exist"() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  missing bigint;
BEGIN
  SELECT n."settles_id" INTO missing FROM new_transactions n
    WHERE n."settles_id" IS NOT NULL AND NOT EXISTS (SELECT 1 FROM "ledger_transaction" t WHERE t."id" = n."settles_id") LIMIT 1;
  IF FOUND THEN
    RAISE EXCEPTION 'ledger transaction settles transaction %, which does not exist', missing USING ERRCODE = 'foreign_key_violation';
  END IF;
  RETURN NULL;
END;
$$;
CREATE TRIGGER "ledger_transaction_settles_exist" AFTER INSERT ON "ledger_transaction"
  REFERENCING NEW TABLE AS new_transactions FOR EACH STATEMENT EXECUTE FUNCTION "walletflow_ledger_settles_exist"();
