-- Where the sweep's pass over every hold stopped within its round: the last ledger transaction id it has read through
-- (activities/sweep.ts). The next sweep reads on from it, so a ledger of years is read over several sweeps instead of
-- each attempt beginning again at the first hold. NULL: no round under way. A nullable column with no default: no
-- table rewrite, and the previous release never reads or writes this table.
ALTER TABLE "sweep_mark" ADD COLUMN "after_id" BIGINT;
