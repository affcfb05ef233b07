-- A funding's and a payment's events are stamped by the database at their statement's start (they were stamped by
-- Prisma's @default(now()), filled from the writing process's clock): a report of the day so far ends where no
-- transaction still open can commit an event before it (activities/settlement.ts, daySoFarEnd). A column default only:
-- no row is rewritten, and the table's lock is held for a moment.

-- AlterTable
ALTER TABLE "funding_event" ALTER COLUMN "at" SET DEFAULT statement_timestamp();

-- AlterTable
ALTER TABLE "payment_event" ALTER COLUMN "at" SET DEFAULT statement_timestamp();
