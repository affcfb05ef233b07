-- CreateEnum
CREATE TYPE "EmbeddedSessionStatus" AS ENUM ('PENDING', 'READY', 'FAILED');

-- CreateTable
CREATE TABLE "embedded_session" (
    "id" UUID NOT NULL,
    "session_id_hash" CHAR(64) NOT NULL,
    "request_reference_no" VARCHAR(50) NOT NULL,
    "access_token_encrypted" BYTEA,
    "refresh_token_encrypted" BYTEA,
    "access_token_expires_at" TIMESTAMPTZ(3) NOT NULL,
    "refresh_token_expires_at" TIMESTAMPTZ(3),
    "expires_at" TIMESTAMPTZ(3) NOT NULL,
    "consumed_at" TIMESTAMPTZ(3),
    "status" "EmbeddedSessionStatus" NOT NULL DEFAULT 'PENDING',
    "error_code" VARCHAR(64),
    "link_id" UUID,
    "first_name" VARCHAR(100),
    "kyc_status" VARCHAR(8),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "embedded_session_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "app_session" (
    "id" UUID NOT NULL,
    "cookie_hash" CHAR(64) NOT NULL,
    "embedded_session_id" UUID NOT NULL,
    "csrf_token" VARCHAR(64) NOT NULL,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "app_session_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "embedded_session_session_id_hash_key" ON "embedded_session"("session_id_hash");

-- CreateIndex
CREATE INDEX "embedded_session_expires_at_idx" ON "embedded_session"("expires_at");

-- CreateIndex
CREATE INDEX "embedded_session_link_id_idx" ON "embedded_session"("link_id");

-- CreateIndex
CREATE UNIQUE INDEX "app_session_cookie_hash_key" ON "app_session"("cookie_hash");

-- CreateIndex
CREATE INDEX "app_session_expires_at_idx" ON "app_session"("expires_at");

-- AddForeignKey
ALTER TABLE "app_session" ADD CONSTRAINT "app_session_embedded_session_id_fkey" FOREIGN KEY ("embedded_session_id") REFERENCES "embedded_session"("id") ON DELETE CASCADE ON UPDATE CASCADE;
