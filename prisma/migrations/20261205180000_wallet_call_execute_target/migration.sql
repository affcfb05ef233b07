-- A review lists every execute of its record's transfer or wallet payment the wallet call audit has, one its timeline
-- never heard of too (reviews/execute-evidence.ts executesOfTarget): the executes by the id their path names. Partial:
-- only executes' paths match the expression, so other calls add no entry. On a large table, build it with CREATE INDEX
-- CONCURRENTLY by hand before this migration runs (it then finds it there).

-- CreateIndex
CREATE INDEX IF NOT EXISTS "wallet_call_execute_target_idx" ON "wallet_call"((substring(path from '/(?:transfers|merchant/payments)/([^/]+)/execute$'))) WHERE substring(path from '/(?:transfers|merchant/payments)/([^/]+)/execute$') IS NOT NULL;
