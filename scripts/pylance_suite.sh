#!/usr/bin/env bash
# pylance's test suite against pylance and against lancepy (see scripts/pylance_suite.py):
#   bash scripts/pylance_suite.sh PATH/TO/pylance/python/python/tests [--files ...] [--json out.json]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
venv="${LANCEPY_VENV:-$root/.venv}"
PYTHONPATH="$root/python${PYTHONPATH:+:$PYTHONPATH}" exec "$venv/bin/python" "$root/scripts/pylance_suite.py" "$@"
