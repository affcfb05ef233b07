-- AlterTable
ALTER TABLE "link_event" ADD COLUMN     "actor" VARCHAR(64);

-- CreateTable
CREATE TABLE "login_grant" (
    "token_hash" CHAR(64) NOT NULL,
    "partner_user_id" VARCHAR(128) NOT NULL,
    "mobile" VARCHAR(16),
    "source" VARCHAR(8) NOT NULL,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,
    "used_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "login_grant_pkey" PRIMARY KEY ("token_hash")
);

-- CreateIndex
CREATE INDEX "login_grant_expires_at_idx" ON "login_grant"("expires_at");
