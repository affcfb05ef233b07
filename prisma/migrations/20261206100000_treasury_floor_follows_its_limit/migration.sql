-- The treasury's floor follows TREASURY_LIMIT (docs/ledger.md): `limit_floor` is the floor the limit asks for, and
-- `floor` the one the CHECK enforces now. A treasury past its limit (it drew before the limit was set, or lowered)
-- gets its floor where it stands, and every posting that brings money back raises the floor with it, in the same
-- statement, up to the limit's: returned money is never drawn again while the treasury is past its limit.
ALTER TABLE "ledger_account" ADD COLUMN "limit_floor" DECIMAL(20,3);

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
    UPDATE "ledger_account" SET "balance" = "balance" + change.posted, "pending" = "pending" + change.held,
      "floor" = CASE WHEN "limit_floor" IS NULL OR "floor" IS NULL THEN "floor"
                ELSE GREATEST("floor", LEAST("limit_floor", "balance" + change.posted + "pending" + change.held)) END,
      "updated_at" = now()
      WHERE "account" = change."account" AND "currency" = change."currency";
    IF NOT FOUND THEN
      RAISE EXCEPTION 'ledger entries on an account that does not exist: % %', change."account", change."currency" USING ERRCODE = 'foreign_key_violation';
    END IF;
  END LOOP;
  RETURN NULL;
END;
$$;
