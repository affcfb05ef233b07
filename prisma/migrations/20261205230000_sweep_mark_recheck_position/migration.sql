-- Where the sweep's re-check of FAILED fundings with a transfer stopped within its round (activities/sweep.ts): the
-- last funding it has gone past, by (updated_at, id), and the oldest one it could not ask the wallet about in the
-- round. The next sweep reads on from the position, so an incident's thousands of FAILED fundings are asked over
-- several sweeps instead of each attempt beginning again (and, past its five minutes, never ending). NULL: no round
-- under way. Nullable columns with no default: no table rewrite, and the previous release never reads or writes this
-- table.
ALTER TABLE "sweep_mark" ADD COLUMN "after_at" TIMESTAMPTZ(3), ADD COLUMN "after_key" UUID, ADD COLUMN "unasked_since" TIMESTAMPTZ(3);
