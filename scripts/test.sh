#!/usr/bin/env bash
# Sets up everything (scripts/setup.sh), then runs the Rust test suite, a smoke test of the
# wheel in a clean virtualenv (scripts/wheel_smoke.sh), the Python test suite, and the Spark
# tests again on pyspark 3.5 (scripts/test_pyspark35.sh).
# Extra arguments go to pytest, e.g. `bash scripts/test.sh -k interop -x` (and then the
# pyspark 3.5 run is left out); `-n 0` runs the tests in one process.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
bash scripts/setup.sh
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/lancepy-target}"
venv="${LANCEPY_VENV:-$root/.venv}"
if cargo fmt --version >/dev/null 2>&1; then
  echo "==> [$(date -u +%T)] cargo fmt --check (rustfmt.toml)"
  cargo fmt --check >/dev/null || { echo "Rust code is not formatted: run cargo fmt"; exit 1; }
fi
echo "==> [$(date -u +%T)] cargo test (core, without Python)"
if ! out=$(cargo test --profile quick --quiet 2>&1); then echo "$out" | tail -60; exit 1; fi
echo "$out" | grep -E "^test result" || true
echo "==> [$(date -u +%T)] wheel smoke test (clean virtualenv)"
bash scripts/wheel_smoke.sh
# The suite runs in worker processes (pytest-xdist), one test file per worker at a time, so a
# file's module-scoped fixtures (a SparkSession, an S3 server) are built once:
# LANCEPY_TEST_WORKERS (default: the CPUs, at most 4; 0 runs in this process).
workers="${LANCEPY_TEST_WORKERS:-$(n=$(nproc); echo $((n < 4 ? n : 4)))}"
echo "==> [$(date -u +%T)] pytest ($workers workers)"
"$venv/bin/python" -m pytest -q -n "$workers" --dist loadfile "$@"
if [ "$#" -eq 0 ]; then
  echo "==> [$(date -u +%T)] tests/test_spark.py on pyspark 3.5 (scripts/test_pyspark35.sh)"
  bash scripts/test_pyspark35.sh
fi
