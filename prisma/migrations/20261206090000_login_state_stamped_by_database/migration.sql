-- A standalone login's state is stamped by the database at its statement's start (it was stamped by Prisma's
-- @default(now()), filled from the API process's clock): its begin is compared with the link's UNLINKED event, which
-- the database stamps, so that a login begun before an unlink never undoes it whatever an API host's clock says
-- (links/link-record.ts, loginBegunAt). A column default only: no row is rewritten, and the table's lock is held for a
-- moment.

-- AlterTable
ALTER TABLE "login_state" ALTER COLUMN "created_at" SET DEFAULT statement_timestamp();
