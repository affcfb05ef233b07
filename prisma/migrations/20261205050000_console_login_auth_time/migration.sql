-- The provider's auth_time of an OpenID Connect session's login, and of the latest login a sign-out ended: a login
-- no later than the one signed out is not taken as fresh, whatever the clocks say (api/console/sign-in.ts).
ALTER TABLE "console_session" ADD COLUMN "login_auth_time" BIGINT;
ALTER TABLE "console_sign_out" ADD COLUMN "login_auth_time" BIGINT;
