#!/usr/bin/env bash
# The first command of the README: set up, then run the whole stack on embedded defaults, on the
# project's own Node.js 24 (the sources through tsx; the API and worker children inherit it).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
. scripts/use-project-node.sh
exec node --import tsx cli/main.ts dev
