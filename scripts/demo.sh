#!/usr/bin/env bash
# Sets up everything (scripts/setup.sh), then runs the demo.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
bash scripts/setup.sh
venv="${LANCEPY_VENV:-$root/.venv}"
# The pipeline users run (Spark ingests through the lance data source, lancepy's Loader trains
# from random rows, pylance opens the result), then a dataset's life (appends, deletes, time
# travel, schema evolution, compaction) and the file layer.
"$venv/bin/python" examples/pipeline.py
"$venv/bin/python" examples/demo.py "$@"
