-- The zero-sum check of a statement's new entries runs before the trigger that moves the accounts'
-- balances, so the account rows (the treasury, IN_FLIGHT: every hold's) are locked only from the
-- balance move to the commit, not while the check reads a large statement's entries (a
-- 100,000-item batch's 200,000 holds). Triggers of one event fire in the order of their names:
-- "ledger_entry_1_balanced" sorts before "ledger_entry_apply".
ALTER TRIGGER "ledger_entry_balanced" ON "ledger_entry" RENAME TO "ledger_entry_1_balanced";
