-- Entries move their accounts once per statement, not once per entry (docs/ledger.md, "Accounts
-- move once per statement"). A batch's holds are one INSERT of 200,000 entries on two accounts:
-- one UPDATE of the same row per entry made storing 40,000 items take 138 s (each update in a
-- transaction walks the versions the earlier ones left), while one UPDATE per account and
-- statement takes the same time for 1 entry or 200,000. The sums are the same, so every balance is
-- still the sum of its entries; the floor is checked on the statement's net change (a posting's
-- reversal and its debit land together), and accounts are updated in account order, so two
-- statements lock the same accounts in the same order.
DROP TRIGGER "ledger_entry_apply" ON "ledger_entry";
DROP FUNCTION "walletflow_ledger_apply_entry"();

CREATE FUNCTION "walletflow_ledger_apply_entries"() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  change record;
BEGIN
  FOR change IN
    SELECT "account", "currency",
           COALESCE(SUM("amount") FILTER (WHERE NOT "pending"), 0) AS posted,
           COALESCE(SUM("amount") FILTER (WHERE "pending"), 0) AS held
    FROM new_entries GROUP BY "account", "currency" ORDER BY "account", "currency"
  LOOP
    UPDATE "ledger_account" SET "balance" = "balance" + change.posted, "pending" = "pending" + change.held, "updated_at" = now()
      WHERE "account" = change."account" AND "currency" = change."currency";
  END LOOP;
  RETURN NULL;
END;
$$;
CREATE TRIGGER "ledger_entry_apply" AFTER INSERT ON "ledger_entry"
  REFERENCING NEW TABLE AS new_entries FOR EACH STATEMENT EXECUTE FUNCTION "walletflow_ledger_apply_entries"();
