-- AlterTable
ALTER TABLE "console_sign_in" ADD COLUMN     "fresh_login_since" TIMESTAMPTZ(3);

-- CreateTable
CREATE TABLE "console_sign_out" (
    "person_id" VARCHAR(300) NOT NULL,
    "signed_out_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "console_sign_out_pkey" PRIMARY KEY ("person_id")
);
