-- CreateTable
CREATE TABLE "funding_batch_tally" (
    "batch_id" UUID NOT NULL,
    "status" VARCHAR(16) NOT NULL,
    "count" BIGINT NOT NULL,
    "amount" DECIMAL(20,3) NOT NULL,

    CONSTRAINT "funding_batch_tally_pkey" PRIMARY KEY ("batch_id","status")
);


-- Kept by the funding table's triggers, never by the application: each statement that inserts,
-- updates or deletes fundings of a batch adds what it changed, per batch and state, in that same
-- statement (so in its transaction: a rolled-back write leaves the tally as it was). A change that
-- leaves an item's tally state as it was (a heartbeat, a claim) adds nothing and locks no row.
-- The rows are written in (batch, state) order, so two writers of one batch lock them in the same
-- order. A cancelled item (FAILED with error code CANCELLED) counts as CANCELLED, not FAILED.
CREATE FUNCTION "walletflow_funding_tally_state"(status "FundingStatus", error_code text) RETURNS text
  LANGUAGE sql IMMUTABLE AS $$ SELECT CASE WHEN status = 'FAILED' AND error_code = 'CANCELLED' THEN 'CANCELLED' ELSE status::text END $$;

CREATE FUNCTION "walletflow_funding_batch_tally"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO "funding_batch_tally" ("batch_id", "status", "count", "amount")
      SELECT "batch_id", "walletflow_funding_tally_state"("status", "error_code") AS state, COUNT(*), SUM("amount")
      FROM new_rows WHERE "batch_id" IS NOT NULL GROUP BY 1, 2 ORDER BY 1, 2
      ON CONFLICT ("batch_id", "status") DO UPDATE SET "count" = "funding_batch_tally"."count" + EXCLUDED."count", "amount" = "funding_batch_tally"."amount" + EXCLUDED."amount";
  ELSIF TG_OP = 'UPDATE' THEN
    INSERT INTO "funding_batch_tally" ("batch_id", "status", "count", "amount")
      SELECT "batch_id", state, SUM(n), SUM(a) FROM (
        SELECT "batch_id", "walletflow_funding_tally_state"("status", "error_code") AS state, 1 AS n, "amount" AS a FROM new_rows WHERE "batch_id" IS NOT NULL
        UNION ALL
        SELECT "batch_id", "walletflow_funding_tally_state"("status", "error_code"), -1, -"amount" FROM old_rows WHERE "batch_id" IS NOT NULL
      ) change
      GROUP BY 1, 2 HAVING SUM(n) <> 0 OR SUM(a) <> 0 ORDER BY 1, 2
      ON CONFLICT ("batch_id", "status") DO UPDATE SET "count" = "funding_batch_tally"."count" + EXCLUDED."count", "amount" = "funding_batch_tally"."amount" + EXCLUDED."amount";
  ELSE
    INSERT INTO "funding_batch_tally" ("batch_id", "status", "count", "amount")
      SELECT "batch_id", "walletflow_funding_tally_state"("status", "error_code") AS state, -COUNT(*), -SUM("amount")
      FROM old_rows WHERE "batch_id" IS NOT NULL GROUP BY 1, 2 ORDER BY 1, 2
      ON CONFLICT ("batch_id", "status") DO UPDATE SET "count" = "funding_batch_tally"."count" + EXCLUDED."count", "amount" = "funding_batch_tally"."amount" + EXCLUDED."amount";
  END IF;
  RETURN NULL;
END;
$$;

CREATE TRIGGER "funding_batch_tally_insert" AFTER INSERT ON "funding"
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION "walletflow_funding_batch_tally"();
CREATE TRIGGER "funding_batch_tally_update" AFTER UPDATE ON "funding"
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION "walletflow_funding_batch_tally"();
CREATE TRIGGER "funding_batch_tally_delete" AFTER DELETE ON "funding"
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION "walletflow_funding_batch_tally"();

-- The batches stored before this migration, counted once.
INSERT INTO "funding_batch_tally" ("batch_id", "status", "count", "amount")
  SELECT "batch_id", "walletflow_funding_tally_state"("status", "error_code"), COUNT(*), SUM("amount")
  FROM "funding" WHERE "batch_id" IS NOT NULL GROUP BY 1, 2;

-- The day's fundings that are not a batch's items (the console's home adds those from their
-- batches' tallies): a batch's items are not in this index, so a 100,000-item batch stored today
-- costs the home page a few tally rows, not 100,000 index entries.
CREATE INDEX "funding_direct_created_at_idx" ON "funding" ("created_at") INCLUDE ("status", "currency", "amount") WHERE "batch_id" IS NULL;
