-- A write refused for a missing or wrong key (401) is audited too: it has no key name.
-- AlterTable
ALTER TABLE "ops_action" ALTER COLUMN "key_name" DROP NOT NULL;
