#!/usr/bin/env bash
# Makes the Temporal CLI (dev server) available and prints its path on the last line.
# Order: $TEMPORAL_CLI_PATH, `temporal` on PATH, the project's tool cache, else build it with Go
# (scripts/build-temporal.sh, from the module scripts/temporal-build: v1.5.1, the newest tag
# without `replace` directives, its modules from the Go module proxy). The cache lives outside the
# clone (~/.cache/walletflow, or $WALLETFLOW_TOOLS_DIR) so fresh clones reuse it.
#   --with-server   when the CLI is built, build the real server and its SQL tool with it if they
#                   are missing (one go build: scripts/setup.sh --temporal-server)
set -euo pipefail
tools_dir="${WALLETFLOW_TOOLS_DIR:-$HOME/.cache/walletflow}"
cached="$tools_dir/bin/temporal"

if [ -n "${TEMPORAL_CLI_PATH:-}" ]; then
  [ -x "$TEMPORAL_CLI_PATH" ] || { echo "TEMPORAL_CLI_PATH=$TEMPORAL_CLI_PATH is not an executable file" >&2; exit 1; }
  echo "$TEMPORAL_CLI_PATH"; exit 0
fi
if command -v temporal >/dev/null 2>&1; then command -v temporal; exit 0; fi
if [ -x "$cached" ]; then echo "$cached"; exit 0; fi

# With --with-server (scripts/setup.sh --temporal-server), the Temporal server and its SQL tool are
# built in the same go build when they are missing too, so the packages they share compile once.
build=(cli)
if [ "${1:-}" = "--with-server" ] && ! bash "$(dirname "$0")/install-temporal-server.sh" --cached >/dev/null 2>&1; then
  build+=(server)
fi
bash "$(dirname "$0")/build-temporal.sh" "${build[@]}"
echo "$cached"
