-- How far the sweep's passes over recently finished fundings have gone (fundings/sweep-marks.ts): each pass reads the
-- fundings finished since its mark (less a margin for late commits), not the whole day or the whole history, every
-- five minutes. A new table: the previous release neither reads nor writes it.

-- CreateTable
CREATE TABLE "sweep_mark" (
    "pass" VARCHAR(64) NOT NULL,
    "through" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "sweep_mark_pkey" PRIMARY KEY ("pass")
);
