#!/usr/bin/env bash
# Makes a real Temporal server and its SQL schema tool available for `walletflow bench --temporal
# server`, and prints three paths on the last three lines: the server, the SQL tool, and the
# PostgreSQL schema folder (v12: `temporal/versioned`, `visibility/versioned`).
# Built with Go from the Go module proxy (go.temporal.io/server: cmd/server and cmd/tools/sql) into
# the project's tool cache (~/.cache/walletflow/bin, or $WALLETFLOW_TOOLS_DIR/bin) as
# `temporal-server` and `temporal-sql-tool`; a second run reuses them. v1.29.1 is the server the
# Temporal CLI v1.5.1 embeds (scripts/install-temporal-cli.sh), so its modules and much of Go's
# build cache are already there after the CLI build. The schema files ship in the same module
# (schema/postgresql/v12); they are copied next to the binaries so a cleaned Go module cache does
# not take them away.
set -euo pipefail
version="${TEMPORAL_SERVER_VERSION:-v1.29.1}"
tools_dir="${WALLETFLOW_TOOLS_DIR:-$HOME/.cache/walletflow}"
server="$tools_dir/bin/temporal-server"
sql_tool="$tools_dir/bin/temporal-sql-tool"
stamp="$tools_dir/bin/temporal-server.version"
schema="$tools_dir/temporal-server-schema/$version/postgresql/v12"

copy_schema() {
  [ -d "$schema/temporal/versioned" ] && return 0
  local module_dir
  module_dir=$(go mod download -json "go.temporal.io/server@$version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",*$/\1/p')
  [ -d "$module_dir/schema/postgresql/v12" ] || { echo "the server module's schema was not found (go mod download go.temporal.io/server@$version)" >&2; return 1; }
  mkdir -p "$(dirname "$schema")"
  cp -r "$module_dir/schema/postgresql/v12" "$schema"
  chmod -R u+w "$schema"
}

if [ -x "$server" ] && [ -x "$sql_tool" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$version" ]; then
  if [ -d "$schema/temporal/versioned" ] || { command -v go >/dev/null 2>&1 && copy_schema; }; then
    echo "$server"; echo "$sql_tool"; echo "$schema"; exit 0
  fi
fi

if ! command -v go >/dev/null 2>&1; then
  cat >&2 <<MSG
Go is not installed, so the Temporal server cannot be built here.
Install Go (https://go.dev/dl/) and run this again, or run the bench on the dev server (the default).
MSG
  exit 1
fi

echo "Building the Temporal server $version and its SQL tool with Go into $tools_dir/bin (first time only; several minutes on 2 cores)..." >&2
staging="$tools_dir/build-temporal-server"
rm -rf "$staging"
mkdir -p "$staging" "$tools_dir/bin"
log="$tools_dir/temporal-server-build.log"
start=$(date +%s)
# Both packages of one module at one version: `go install pkg@version` resolves the module's own
# go.mod (no replace directives in the server module), like a release build.
GOBIN="$staging" GOFLAGS="${GOFLAGS:--buildvcs=false}" go install -x \
  "go.temporal.io/server/cmd/server@$version" \
  "go.temporal.io/server/cmd/tools/sql@$version" >"$log" 2>&1 &
pid=$!
while kill -0 "$pid" 2>/dev/null; do
  sleep 15
  packages=$(grep -c '^mkdir -p \$WORK/b' "$log" 2>/dev/null || true)
  echo "  ... $(( $(date +%s) - start ))s, ${packages:-0} packages compiled" >&2
done
if ! wait "$pid"; then
  echo "Building the Temporal server failed; the last lines of $log:" >&2
  tail -20 "$log" >&2
  exit 1
fi
mv "$staging/server" "$server"
mv "$staging/sql" "$sql_tool"
rm -rf "$staging"
echo "$version" >"$stamp"
copy_schema
echo "Temporal server and SQL tool built in $(( $(date +%s) - start ))s" >&2
echo "$server"
echo "$sql_tool"
echo "$schema"
