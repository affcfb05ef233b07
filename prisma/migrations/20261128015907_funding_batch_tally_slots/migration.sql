-- A long write of a batch's items (its store, its cancel: one transaction of many statements)
-- adds its change to rows of its own (slot = its transaction's id) instead of the batch's shared
-- rows (slot 0), when it says so (SET LOCAL walletflow.batch_tally_slot = 'transaction'). Before,
-- a cancel's first statement locked the batch's shared PENDING row until its commit, tens of
-- seconds later; a chunk that claimed items further on locked them and then waited for that
-- row, and the cancel, reaching those items, waited for the chunk: a deadlock, and one of the two
-- was aborted. A transaction's own rows are written by it alone, so it waits for no one and no
-- one waits for it; short writes (a claim, a move, a chunk's final words) keep adding to the
-- shared rows, each holding them only to its commit. A state's count is the sum over its slots:
-- a batch has its shared rows, its store's and at most one cancel's.
-- AlterTable
ALTER TABLE "funding_batch_tally" DROP CONSTRAINT "funding_batch_tally_pkey",
ADD COLUMN     "slot" BIGINT NOT NULL DEFAULT 0,
ADD CONSTRAINT "funding_batch_tally_pkey" PRIMARY KEY ("batch_id", "status", "slot");


CREATE OR REPLACE FUNCTION "walletflow_funding_batch_tally"() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  own bigint := CASE WHEN current_setting('walletflow.batch_tally_slot', true) = 'transaction' THEN txid_current() ELSE 0 END;
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO "funding_batch_tally" ("batch_id", "status", "slot", "count", "amount")
      SELECT "batch_id", "walletflow_funding_tally_state"("status", "error_code") AS state, own, COUNT(*), SUM("amount")
      FROM new_rows WHERE "batch_id" IS NOT NULL GROUP BY 1, 2 ORDER BY 1, 2
      ON CONFLICT ("batch_id", "status", "slot") DO UPDATE SET "count" = "funding_batch_tally"."count" + EXCLUDED."count", "amount" = "funding_batch_tally"."amount" + EXCLUDED."amount";
  ELSIF TG_OP = 'UPDATE' THEN
    INSERT INTO "funding_batch_tally" ("batch_id", "status", "slot", "count", "amount")
      SELECT "batch_id", state, own, SUM(n), SUM(a) FROM (
        SELECT "batch_id", "walletflow_funding_tally_state"("status", "error_code") AS state, 1 AS n, "amount" AS a FROM new_rows WHERE "batch_id" IS NOT NULL
        UNION ALL
        SELECT "batch_id", "walletflow_funding_tally_state"("status", "error_code"), -1, -"amount" FROM old_rows WHERE "batch_id" IS NOT NULL
      ) change
      GROUP BY 1, 2 HAVING SUM(n) <> 0 OR SUM(a) <> 0 ORDER BY 1, 2
      ON CONFLICT ("batch_id", "status", "slot") DO UPDATE SET "count" = "funding_batch_tally"."count" + EXCLUDED."count", "amount" = "funding_batch_tally"."amount" + EXCLUDED."amount";
  ELSE
    INSERT INTO "funding_batch_tally" ("batch_id", "status", "slot", "count", "amount")
      SELECT "batch_id", "walletflow_funding_tally_state"("status", "error_code") AS state, own, -COUNT(*), -SUM("amount")
      FROM old_rows WHERE "batch_id" IS NOT NULL GROUP BY 1, 2 ORDER BY 1, 2
      ON CONFLICT ("batch_id", "status", "slot") DO UPDATE SET "count" = "funding_batch_tally"."count" + EXCLUDED."count", "amount" = "funding_batch_tally"."amount" + EXCLUDED."amount";
  END IF;
  RETURN NULL;
END;
$$;
