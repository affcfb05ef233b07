-- CreateEnum
CREATE TYPE "LinkKind" AS ENUM ('STANDALONE', 'EMBEDDED');

-- CreateEnum
CREATE TYPE "LinkStatus" AS ENUM ('ACTIVE', 'REAUTH_REQUIRED', 'UNLINKED');

-- CreateTable
CREATE TABLE "link" (
    "id" UUID NOT NULL,
    "partner_user_id" VARCHAR(128) NOT NULL,
    "profile_id" VARCHAR(64) NOT NULL,
    "masked_user_id" VARCHAR(64),
    "kind" "LinkKind" NOT NULL,
    "scopes" TEXT[],
    "status" "LinkStatus" NOT NULL DEFAULT 'ACTIVE',
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "link_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "token_set" (
    "link_id" UUID NOT NULL,
    "access_token_encrypted" BYTEA NOT NULL,
    "refresh_token_encrypted" BYTEA NOT NULL,
    "access_token_expires_at" TIMESTAMPTZ(3) NOT NULL,
    "refresh_token_expires_at" TIMESTAMPTZ(3),
    "version" INTEGER NOT NULL DEFAULT 1,
    "refreshed_at" TIMESTAMPTZ(3),
    "updated_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "token_set_pkey" PRIMARY KEY ("link_id")
);

-- CreateTable
CREATE TABLE "login_state" (
    "state_hash" CHAR(64) NOT NULL,
    "partner_user_id" VARCHAR(128) NOT NULL,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,
    "consumed_at" TIMESTAMPTZ(3),
    "outcome" VARCHAR(64),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "login_state_pkey" PRIMARY KEY ("state_hash")
);

-- CreateTable
CREATE TABLE "link_event" (
    "id" BIGSERIAL NOT NULL,
    "link_id" UUID,
    "partner_user_id" VARCHAR(128),
    "type" VARCHAR(48) NOT NULL,
    "detail" VARCHAR(500),
    "request_reference_no" VARCHAR(50),
    "at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "link_event_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "link_partner_user_id_idx" ON "link"("partner_user_id");

-- CreateIndex
CREATE UNIQUE INDEX "link_profile_id_kind_key" ON "link"("profile_id", "kind");

-- CreateIndex
CREATE INDEX "login_state_expires_at_idx" ON "login_state"("expires_at");

-- CreateIndex
CREATE INDEX "link_event_link_id_at_idx" ON "link_event"("link_id", "at");

-- AddForeignKey
ALTER TABLE "token_set" ADD CONSTRAINT "token_set_link_id_fkey" FOREIGN KEY ("link_id") REFERENCES "link"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "link_event" ADD CONSTRAINT "link_event_link_id_fkey" FOREIGN KEY ("link_id") REFERENCES "link"("id") ON DELETE SET NULL ON UPDATE CASCADE;
