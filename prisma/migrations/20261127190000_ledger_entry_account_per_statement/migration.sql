-- An entry's account is checked once per statement and account, by the statement trigger that moves
-- the account, not by a foreign key once per entry (docs/ledger.md, "What the database enforces").
-- A foreign key check locks the referenced row FOR KEY SHARE, following its chain of versions to
-- the newest: the TREASURY and IN_FLIGHT rows get a new version at every posting, and while a
-- batch's statement of 200,000 hold entries runs those versions cannot be pruned, so each of its
-- checks walked all the versions made since it started. Measured: the holds of 100,000 items in
-- 8 s alone, 120 s beside 3,000 single postings (the same statement without the key: 16 s either
-- way on that busy machine). The trigger's UPDATE of the account finds the row or raises, which is
-- the same guarantee (accounts are never deleted, and now their key never changes).
ALTER TABLE "ledger_entry" DROP CONSTRAINT "ledger_entry_account_currency_fkey";

CREATE OR REPLACE FUNCTION "walletflow_ledger_apply_entries"() RETURNS trigger LANGUAGE plpgsql AS $$
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
    IF NOT FOUND THEN
      RAISE EXCEPTION 'ledger entries on an account that does not exist: % %', change."account", change."currency" USING ERRCODE = 'foreign_key_violation';
    END IF;
  END LOOP;
  RETURN NULL;
END;
$$;

-- An account's key never changes: entries name it (without a foreign key now).
CREATE OR REPLACE FUNCTION "walletflow_ledger_guard_account"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW."account" <> OLD."account" OR NEW."currency" <> OLD."currency" THEN
    RAISE EXCEPTION 'a ledger account''s key never changes' USING ERRCODE = 'restrict_violation';
  END IF;
  IF (NEW."balance" <> OLD."balance" OR NEW."pending" <> OLD."pending") AND pg_trigger_depth() < 2 THEN
    RAISE EXCEPTION 'ledger_account balances change only through ledger entries' USING ERRCODE = 'restrict_violation';
  END IF;
  RETURN NEW;
END;
$$;
