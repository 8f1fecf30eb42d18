#!/usr/bin/env bash
# Builds the wheel, installs it into a fresh virtualenv (no Rust toolchain used there, no
# source tree on the path) and checks it works as a new user would use it: read a dataset
# pylance wrote, write one, take rows.
#   LANCEPY_WHEEL_PROFILE  cargo profile of the wheel (default: quick, to keep CI short;
#                          release wheels: see README "Install")
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/lancepy-target}"
venv="${LANCEPY_VENV:-$root/.venv}"
profile="${LANCEPY_WHEEL_PROFILE:-quick}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

echo "==> building the wheel (profile $profile)"
"$venv/bin/maturin" build --profile "$profile" --out "$work/wheels" --quiet 2>&1 | grep -v "^\s*$" | tail -2
wheel="$(ls "$work"/wheels/lancepy-*.whl)"
echo "    $(basename "$wheel") ($(du -h "$wheel" | cut -f1))"

echo "==> a dataset written by pylance (reference)"
"$venv/bin/python" - "$work/theirs.lance" <<'EOF'
import sys, lance, pyarrow as pa
lance.write_dataset(pa.table({"id": list(range(100)), "s": [f"r{i}" for i in range(100)]}), sys.argv[1],
                    max_rows_per_file=40)
EOF

echo "==> installing the wheel into a clean virtualenv"
python3 -m venv "$work/clean"
"$work/clean/bin/python" -m pip install -q --upgrade pip
"$work/clean/bin/python" -m pip install -q "$wheel"

echo "==> smoke test in the clean virtualenv"
(cd "$work" && "$work/clean/bin/python" - "$work" <<'EOF'
import os, sys
import pyarrow as pa
import lancepy
work = sys.argv[1]
assert os.path.dirname(lancepy.__file__).startswith(os.path.join(work, "clean")), lancepy.__file__
theirs = lancepy.dataset(os.path.join(work, "theirs.lance"))
assert theirs.count_rows() == 100 and theirs.take([99, 0]).column("id").to_pylist() == [99, 0]
ours = lancepy.write_dataset(pa.table({"id": list(range(10)), "v": [i * 0.5 for i in range(10)]}),
                             os.path.join(work, "ours.lance"))
ours = lancepy.write_dataset(pa.table({"id": [10], "v": [5.0]}), ours.uri, mode="append")
assert ours.version == 2 and ours.take([10, 3]).column("id").to_pylist() == [10, 3]
print("    wheel OK: lancepy", lancepy.__version__, "read pylance's dataset, wrote and took rows")
EOF
)
