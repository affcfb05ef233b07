#!/usr/bin/env bash
# The first command of the README: set up, then run the whole stack on embedded defaults.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec node --import tsx cli/main.ts dev
