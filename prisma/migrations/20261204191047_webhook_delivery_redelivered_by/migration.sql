-- AlterTable
ALTER TABLE "webhook_delivery" ADD COLUMN     "redelivered_at" TIMESTAMPTZ(3),
ADD COLUMN     "redelivered_by" VARCHAR(128);
