-- AlterTable
ALTER TABLE "link_event" ALTER COLUMN "actor" SET DATA TYPE VARCHAR(128);
