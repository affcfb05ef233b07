-- AlterTable
ALTER TABLE "console_session" ADD COLUMN     "groups" TEXT[] DEFAULT ARRAY[]::TEXT[],
ADD COLUMN     "issuer" VARCHAR(512),
ADD COLUMN     "key_fingerprint" CHAR(64);
