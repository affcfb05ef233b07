#!/usr/bin/env bash
# Builds Temporal's binaries with Go into the project's tool cache (~/.cache/walletflow/bin, or
# $WALLETFLOW_TOOLS_DIR/bin), in ONE `go build` from the module scripts/temporal-build (go.mod and
# go.sum pin the Temporal CLI v1.5.1 and the server v1.29.1), so the packages they share compile
# once. Arguments say what to build:
#   cli      the Temporal CLI (`temporal`, the dev server)
#   server   the Temporal server and its SQL tool (`temporal-server`, `temporal-sql-tool`;
#            `temporal-server.version` beside them names the server's version)
# Called by scripts/install-temporal-cli.sh and scripts/install-temporal-server.sh, which decide
# what is missing. Progress on stderr every 15 s: packages compiled out of the build's packages
# and an estimate of the time left. The log is $tools_dir/temporal-build.log.
set -euo pipefail
cd "$(dirname "$0")/temporal-build"
tools_dir="${WALLETFLOW_TOOLS_DIR:-$HOME/.cache/walletflow}"
server_version=$(sed -n 's/^[[:space:]]*go\.temporal\.io\/server \(v[^ ]*\).*/\1/p' go.mod)
cli_version=$(sed -n 's/^[[:space:]]*github\.com\/temporalio\/cli \(v[^ ]*\).*/\1/p' go.mod)

packages=()
names=()
for binary in "$@"; do
  case "$binary" in
    cli) packages+=(github.com/temporalio/cli/cmd/temporal); names+=("the Temporal CLI $cli_version") ;;
    server) packages+=(go.temporal.io/server/cmd/server go.temporal.io/server/cmd/tools/sql); names+=("the Temporal server $server_version and its SQL tool") ;;
    *) echo "usage: scripts/build-temporal.sh cli|server..." >&2; exit 2 ;;
  esac
done
[ ${#packages[@]} -gt 0 ] || { echo "usage: scripts/build-temporal.sh cli|server..." >&2; exit 2; }

if ! command -v go >/dev/null 2>&1; then
  cat >&2 <<MSG
Go is not installed, so Temporal's binaries cannot be built here.
Install Go (https://go.dev/dl/) and run this again; or set TEMPORAL_CLI_PATH to a temporal binary,
or point TEMPORAL_ADDRESS at a running Temporal server.
MSG
  exit 1
fi

what="${names[0]}"
if [ ${#names[@]} -gt 1 ]; then what="${names[0]}, ${names[1]}"; fi
echo "Building $what with Go into $tools_dir/bin, in one go build (first time only; several minutes on 2 cores)..." >&2
staging="$tools_dir/build-temporal.$$"
mkdir -p "$staging" "$tools_dir/bin"
trap 'rm -rf "$staging"' EXIT
log="$tools_dir/temporal-build.log"
start=$(date +%s)
export GOWORK=off GOFLAGS="${GOFLAGS:--buildvcs=false}"
# The build's packages (the standard library's among them: a cold Go cache compiles those too),
# for the estimate; listing them downloads the modules the build needs.
if ! total=$(go list -deps "${packages[@]}" 2>"$log" | wc -l) || [ "$total" -eq 0 ]; then
  echo "Listing the packages to build failed; the last lines of $log:" >&2
  tail -20 "$log" >&2
  exit 1
fi
echo "  ${total} packages (modules fetched in $(( $(date +%s) - start ))s)" >&2
go build -x -o "$staging/" "${packages[@]}" >>"$log" 2>&1 &
pid=$!
while kill -0 "$pid" 2>/dev/null; do
  sleep 15
  compiled=$(grep -c '^mkdir -p \$WORK/b[0-9]*/$' "$log" 2>/dev/null || true)
  compiled=${compiled:-0}
  elapsed=$(( $(date +%s) - start ))
  # A binary's link starts once its packages are compiled: the last minute or so of the build.
  if [ "$compiled" -ge "$total" ] || grep -q '^mkdir -p \$WORK/b[0-9]*/exe/' "$log"; then
    estimate="linking"
  elif [ "$compiled" -ge 50 ]; then
    # The rate so far, over what is left; a warm Go cache compiles fewer, so it ends sooner.
    estimate="about $(( elapsed * (total - compiled) / compiled / 60 + 1 )) min left"
  else
    estimate="estimating"
  fi
  echo "  ... ${elapsed}s, ${compiled} of ${total} packages compiled, ${estimate}" >&2
done
if ! wait "$pid"; then
  echo "Building Temporal's binaries failed; the last lines of $log:" >&2
  tail -20 "$log" >&2
  exit 1
fi
for binary in "$@"; do
  case "$binary" in
    cli) mv "$staging/temporal" "$tools_dir/bin/temporal" ;;
    server)
      mv "$staging/server" "$tools_dir/bin/temporal-server"
      mv "$staging/sql" "$tools_dir/bin/temporal-sql-tool"
      echo "$server_version" >"$tools_dir/bin/temporal-server.version"
      ;;
  esac
done
echo "Built $what in $(( $(date +%s) - start ))s" >&2
