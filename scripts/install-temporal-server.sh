#!/usr/bin/env bash
# Makes a real Temporal server and its SQL schema tool available for `walletflow bench --temporal
# server` and the deploy tests, and prints three paths on the last three lines: the server, the SQL
# tool, and the PostgreSQL schema folder (v12: `temporal/versioned`, `visibility/versioned`).
# Built with Go by scripts/build-temporal.sh (go.temporal.io/server: cmd/server and cmd/tools/sql,
# from the module scripts/temporal-build, which pins the server v1.29.1 beside the Temporal CLI
# v1.5.1 that embeds it) into the project's tool cache (~/.cache/walletflow/bin, or
# $WALLETFLOW_TOOLS_DIR/bin) as `temporal-server` and `temporal-sql-tool`; a second run reuses them
# while `temporal-server.version` beside them names the pinned version. scripts/setup.sh
# --temporal-server builds them in the same go build as the CLI when both are missing. The schema
# files ship in the server's module (schema/postgresql/v12); they are copied next to the binaries
# so a cleaned Go module cache does not take them away.
#   --cached   only says whether they are there (exit 0, the three paths) or not (exit 1): no build
set -euo pipefail
scripts="$(cd "$(dirname "$0")" && pwd)"
version=$(sed -n 's/^[[:space:]]*go\.temporal\.io\/server \(v[^ ]*\).*/\1/p' "$scripts/temporal-build/go.mod")
tools_dir="${WALLETFLOW_TOOLS_DIR:-$HOME/.cache/walletflow}"
server="$tools_dir/bin/temporal-server"
sql_tool="$tools_dir/bin/temporal-sql-tool"
stamp="$tools_dir/bin/temporal-server.version"
schema="$tools_dir/temporal-server-schema/$version/postgresql/v12"

copy_schema() {
  [ -d "$schema/temporal/versioned" ] && return 0
  local module_dir
  module_dir=$(cd "$scripts/temporal-build" && GOWORK=off go mod download -json "go.temporal.io/server" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",*$/\1/p')
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
[ "${1:-}" = "--cached" ] && exit 1

bash "$scripts/build-temporal.sh" server
copy_schema
echo "$server"
echo "$sql_tool"
echo "$schema"
