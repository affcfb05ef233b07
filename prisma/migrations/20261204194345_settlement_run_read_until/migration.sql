-- AlterTable
ALTER TABLE "settlement_run" ADD COLUMN     "read_until" TIMESTAMPTZ(3);
