#!/usr/bin/env bash
# Sets up everything (scripts/setup.sh), then runs the demo.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
bash scripts/setup.sh
venv="${LANCEPY_VENV:-$root/.venv}"
"$venv/bin/python" examples/demo.py "$@"
