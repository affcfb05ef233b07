-- The ops console (contract-decisions section 15): server-side sessions, OpenID Connect sign-ins under way, and where an audited act came from.
-- AlterTable
ALTER TABLE "ops_action" ADD COLUMN     "channel" VARCHAR(8) NOT NULL DEFAULT 'api';

-- CreateTable
CREATE TABLE "console_session" (
    "id" UUID NOT NULL,
    "cookie_hash" CHAR(64) NOT NULL,
    "person_id" VARCHAR(300) NOT NULL,
    "person_name" VARCHAR(128) NOT NULL,
    "via" VARCHAR(8) NOT NULL,
    "scopes" TEXT[],
    "csrf_token" VARCHAR(64) NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "last_seen_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "console_session_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "console_sign_in" (
    "state" VARCHAR(64) NOT NULL,
    "nonce" VARCHAR(64) NOT NULL,
    "return_to" VARCHAR(512) NOT NULL,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "console_sign_in_pkey" PRIMARY KEY ("state")
);

-- CreateIndex
CREATE UNIQUE INDEX "console_session_cookie_hash_key" ON "console_session"("cookie_hash");

-- CreateIndex
CREATE INDEX "console_session_person_id_idx" ON "console_session"("person_id");

-- CreateIndex
CREATE INDEX "console_session_expires_at_idx" ON "console_session"("expires_at");

-- CreateIndex
CREATE INDEX "console_sign_in_expires_at_idx" ON "console_sign_in"("expires_at");
