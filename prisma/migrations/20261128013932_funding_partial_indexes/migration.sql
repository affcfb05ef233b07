-- Fewer and smaller index entries for every funding stored and moved, a batch's 100,000 items
-- first. A batch's tally is a table now (funding_batch_tally), so nothing reads a count of the
-- batch index: it keeps (batch, status, reference) without the error code and amount riding along;
-- the list of every funding newest first keeps its (created_at, id) order without the state,
-- currency and amount (a day's totals read funding_direct_created_at_idx and the tallies). The
-- indexes by transfer id and by source hold only the rows that have one (a new funding has no
-- transfer yet, a treasury batch's items no source): their readers ask for a value, never for
-- NULL, so the partial indexes serve them all. Not declared in schema.prisma (it cannot say
-- WHERE); its comment names them.
-- DropIndex
DROP INDEX "funding_batch_id_status_batch_reference_error_code_amount_idx";

-- DropIndex
DROP INDEX "funding_created_at_id_status_currency_amount_idx";

-- DropIndex
DROP INDEX "funding_source_partner_user_id_created_at_idx";

-- DropIndex
DROP INDEX "funding_transfer_id_idx";

-- CreateIndex
CREATE INDEX "funding_batch_id_status_batch_reference_idx" ON "funding"("batch_id", "status", "batch_reference");

-- CreateIndex
CREATE INDEX "funding_created_at_id_idx" ON "funding"("created_at", "id");

-- CreateIndex (partial)
CREATE INDEX "funding_transfer_id_idx" ON "funding"("transfer_id") WHERE "transfer_id" IS NOT NULL;

-- CreateIndex (partial)
CREATE INDEX "funding_source_partner_user_id_created_at_idx" ON "funding"("source_partner_user_id", "created_at") WHERE "source_partner_user_id" IS NOT NULL;
