-- Every transaction's entries sum to zero (posted and pending each), checked once per statement
-- over the entries it inserted, not once per entry at commit (docs/ledger.md, "What the database
-- enforces"). The deferred row trigger ran one SELECT per entry: the holds of a 100,000-item batch
-- are 200,000 entries, and their checks were most of the store's time. A statement's new entries
-- summed per transaction are the same check: entries are append-only, so a transaction's earlier
-- entries (checked by their own statement) already sum to zero, and its total is zero exactly when
-- the new ones sum to zero. Every writer inserts a transaction's entries in one statement
-- (ledger/ledger.ts); a statement that leaves one unbalanced fails, and with it the caller's
-- transaction, as a commit did before. The check now runs at the statement's end, so the
-- accounts a batch's holds lock are never held while it runs (SET CONSTRAINTS ... IMMEDIATE is
-- no longer needed: there is no constraint trigger to defer).
DROP TRIGGER "ledger_entry_balanced" ON "ledger_entry";
DROP FUNCTION "walletflow_ledger_transaction_balanced"();

CREATE FUNCTION "walletflow_ledger_entries_balanced"() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  unbalanced bigint;
BEGIN
  SELECT "transaction_id" INTO unbalanced FROM new_entries
    GROUP BY "transaction_id"
    HAVING COALESCE(SUM("amount") FILTER (WHERE NOT "pending"), 0) <> 0 OR COALESCE(SUM("amount") FILTER (WHERE "pending"), 0) <> 0
    ORDER BY "transaction_id" LIMIT 1;
  IF FOUND THEN
    RAISE EXCEPTION 'ledger transaction % does not sum to zero', unbalanced USING ERRCODE = 'check_violation';
  END IF;
  RETURN NULL;
END;
$$;
CREATE TRIGGER "ledger_entry_balanced" AFTER INSERT ON "ledger_entry"
  REFERENCING NEW TABLE AS new_entries FOR EACH STATEMENT EXECUTE FUNCTION "walletflow_ledger_entries_balanced"();
