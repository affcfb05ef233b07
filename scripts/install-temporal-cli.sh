#!/usr/bin/env bash
# Makes the Temporal CLI (dev server) available and prints its path on the last line.
# Order: $TEMPORAL_CLI_PATH, `temporal` on PATH, the project's tool cache, else build it with Go
# from the Go module proxy (v1.5.1: the newest tag without `replace` directives). The cache lives
# outside the clone (~/.cache/walletflow, or $WALLETFLOW_TOOLS_DIR) so fresh clones reuse it.
set -euo pipefail
version=v1.5.1
tools_dir="${WALLETFLOW_TOOLS_DIR:-$HOME/.cache/walletflow}"
cached="$tools_dir/bin/temporal"

if [ -n "${TEMPORAL_CLI_PATH:-}" ]; then
  [ -x "$TEMPORAL_CLI_PATH" ] || { echo "TEMPORAL_CLI_PATH=$TEMPORAL_CLI_PATH is not an executable file" >&2; exit 1; }
  echo "$TEMPORAL_CLI_PATH"; exit 0
fi
if command -v temporal >/dev/null 2>&1; then command -v temporal; exit 0; fi
if [ -x "$cached" ]; then echo "$cached"; exit 0; fi

if ! command -v go >/dev/null 2>&1; then
  cat >&2 <<MSG
The Temporal CLI was not found and Go is not installed to build it.
Either install Go (https://go.dev/dl/) and run this again, set TEMPORAL_CLI_PATH to a temporal
binary, or point TEMPORAL_ADDRESS at a running Temporal server.
MSG
  exit 1
fi

echo "Building the Temporal CLI $version with Go into $tools_dir/bin (first time only; this takes several minutes)..." >&2
mkdir -p "$tools_dir/bin"
log="$tools_dir/temporal-build.log"
start=$(date +%s)
GOBIN="$tools_dir/bin" GOFLAGS="${GOFLAGS:--buildvcs=false}" go install -x "github.com/temporalio/cli/cmd/temporal@$version" >"$log" 2>&1 &
pid=$!
while kill -0 "$pid" 2>/dev/null; do
  sleep 15
  packages=$(grep -c '^mkdir -p \$WORK/b' "$log" 2>/dev/null || true)
  echo "  ... $(( $(date +%s) - start ))s, ${packages:-0} packages compiled" >&2
done
if ! wait "$pid"; then
  echo "Building the Temporal CLI failed; the last lines of $log:" >&2
  tail -20 "$log" >&2
  exit 1
fi
echo "Temporal CLI built in $(( $(date +%s) - start ))s" >&2
echo "$cached"
