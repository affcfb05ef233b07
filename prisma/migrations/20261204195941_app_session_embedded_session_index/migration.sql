-- A link's web sessions, by their embedded session: a revoke ends them (links/link-record.ts unlink), and the purge's
-- delete of an expired embedded session cascades to its web sessions. Without it each walked the whole table.
-- On a large table, build it with CREATE INDEX CONCURRENTLY by hand before this migration runs (it then finds it and
-- builds nothing).

-- CreateIndex
CREATE INDEX IF NOT EXISTS "app_session_embedded_session_id_idx" ON "app_session"("embedded_session_id");
