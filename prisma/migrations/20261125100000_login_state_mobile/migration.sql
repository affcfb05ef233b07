-- Issue 26 #1: the mobile number a login grant pinned travels with the login's state, so the
-- callback checks the account that logged in has it (the authorize URL alone only pre-fills it).

-- AlterTable
ALTER TABLE "login_state" ADD COLUMN     "mobile" VARCHAR(16);
