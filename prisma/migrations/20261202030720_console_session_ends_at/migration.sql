-- DropIndex
DROP INDEX "console_session_expires_at_idx";

-- AlterTable
ALTER TABLE "console_session" ADD COLUMN     "ends_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP;

-- CreateIndex
CREATE INDEX "console_session_ends_at_idx" ON "console_session"("ends_at");
