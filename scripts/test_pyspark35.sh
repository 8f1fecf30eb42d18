#!/usr/bin/env bash
# Runs tests/test_spark.py against pyspark 3.5 (the oldest line lancepy.spark supports) in a
# virtualenv of its own: pyspark 3.5 needs numpy < 2, hence pyarrow 17, so it cannot share the
# main test environment (pyspark 4). lancepy itself comes from this checkout's editable build
# (run scripts/setup.sh first). Extra arguments go to pytest.
#   LANCEPY_VENV35   where the virtualenv lives (default: $HOME/.cache/lancepy-venv-pyspark35)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
venv="${LANCEPY_VENV35:-$HOME/.cache/lancepy-venv-pyspark35}"
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
"$venv/bin/python" -m pip install -q "pyspark[sql]>=3.5,<3.6" "pyarrow>=14,<18" "numpy<2" sqlglot pytest hypothesis \
  "pylance==14.0.2"
site="$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
echo "$root/python" > "$site/lancepy_checkout.pth"
ls "$root"/python/lancepy/_lancepy*.so >/dev/null 2>&1 || { echo "build lancepy first: bash scripts/setup.sh"; exit 1; }
"$venv/bin/python" -c 'import pyspark, pyarrow; print(f"==> pyspark {pyspark.__version__}, pyarrow {pyarrow.__version__}")'
export SPARK_LOCAL_IP=127.0.0.1
# tests/test_spark_datasource.py skips itself on pyspark < 4.1 (its import must still work).
"$venv/bin/python" -m pytest -q -p no:cacheprovider tests/test_spark.py tests/test_spark_datasource.py "$@"
