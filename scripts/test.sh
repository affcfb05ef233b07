#!/usr/bin/env bash
# The second command of the README, and what CI runs: a clean install (with the project's own
# Node.js 24), the Temporal CLI, a real Temporal server (built with Go, for the deploy test) and
# Chromium, typecheck, lint, then every test (vitest) against real PostgreSQL and Temporal, all on
# the project's Node.js.
# Migrations are applied by the test setup to a fresh database. Ends with "N passed, N failed".
#   --under-load   runs the tests with a CPU-bound process beside them (one core busy from the
#                  first test to the last), as a loaded CI machine would: the suite must pass so,
#                  with no time-out raised for it.
set -euo pipefail
cd "$(dirname "$0")/.."
under_load=false
for arg in "$@"; do
  case "$arg" in
    --under-load) under_load=true ;;
    *) echo "usage: scripts/test.sh [--under-load]" >&2; exit 2 ;;
  esac
done
bash scripts/setup.sh --ci --browser --temporal-server
# From here on everything runs on the project's Node.js 24 (node_modules/.bin first on PATH).
. scripts/use-project-node.sh
echo "• typecheck"; tsc -p tsconfig.json
echo "• lint"; eslint .; prettier --check . --log-level warn
echo "• tests"
mkdir -p .walletflow
status=0
load_pid=""
if $under_load; then
  # One core spinning for as long as the tests run; stopped however the run ends.
  node -e 'for (;;) {}' &
  load_pid=$!
  trap 'kill "$load_pid" 2>/dev/null || true' EXIT
  echo "  (under load: a CPU-bound process, pid $load_pid, runs beside the tests)"
fi
# Each file's wall and CPU seconds (test/cpu-per-file.ts): `npm run test:durations` records them for the start order.
rm -f .walletflow/test-cpu.tsv
WALLETFLOW_TEST_CPU_FILE=.walletflow/test-cpu.tsv \
  vitest run --reporter=default --reporter=json --outputFile.json=.walletflow/test-results.json || status=$?
# The JSON report decides as well: a run with a failed test or file never passes, whatever exit
# code the runner ended with.
node -e '
  const fs = require("fs");
  const file = ".walletflow/test-results.json";
  if (!fs.existsSync(file)) { console.log("0 passed, 1 failed"); process.exit(1); }
  const r = JSON.parse(fs.readFileSync(file, "utf8"));
  const skipped = (r.numPendingTests ?? 0) + (r.numTodoTests ?? 0);
  console.log(`${r.numPassedTests} passed, ${r.numFailedTests} failed` + (skipped ? `, ${skipped} skipped` : ""));
  process.exit(r.numFailedTests > 0 || r.numFailedTestSuites > 0 || r.numTotalTests === 0 ? 1 : 0);
' || status=1
exit $status
