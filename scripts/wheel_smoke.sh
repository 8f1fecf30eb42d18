#!/usr/bin/env bash
# Builds the wheel, installs it into a fresh virtualenv (no Rust toolchain used there, no
# source tree on the path) and checks it works as a new user would use it: read a dataset
# pylance wrote, write one, take rows. If auditwheel is installed, `auditwheel show` must find
# the wheel's platform tag honest (no newer glibc symbols than the tag allows, no external
# shared libraries to graft).
#   LANCEPY_WHEEL_PROFILE  cargo profile of the wheel (default: quick, to keep CI short;
#                          release wheels: see README "Install")
#   LANCEPY_WHEEL_ARGS     extra `maturin build` arguments, e.g.
#                          "--zig --compatibility manylinux_2_28"
#   LANCEPY_WHEEL          test this wheel instead of building one
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/lancepy-target}"
venv="${LANCEPY_VENV:-$root/.venv}"
profile="${LANCEPY_WHEEL_PROFILE:-quick}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

if [ -n "${LANCEPY_WHEEL:-}" ]; then
  wheel="$LANCEPY_WHEEL"
else
  echo "==> [$(date -u +%T)] building the wheel (profile $profile${LANCEPY_WHEEL_ARGS:+, $LANCEPY_WHEEL_ARGS})"
  # shellcheck disable=SC2086  # LANCEPY_WHEEL_ARGS is a list of arguments
  PATH="$venv/bin:$PATH" "$venv/bin/maturin" build --profile "$profile" ${LANCEPY_WHEEL_ARGS:-} --out "$work/wheels" \
    --quiet 2>&1 | grep -v "^\s*$" | tail -2
  wheel="$(ls "$work"/wheels/lancepy-*.whl)"
fi
echo "    $(basename "$wheel") ($(du -h "$wheel" | cut -f1))"

echo "==> [$(date -u +%T)] auditwheel show"
if "$venv/bin/python" -c "import auditwheel" 2>/dev/null; then
  "$venv/bin/python" -m auditwheel show --json "$wheel" > "$work/audit.json"
  "$venv/bin/python" - "$wheel" "$work/audit.json" <<'EOF'
import json, os, re, sys
name, report = os.path.basename(sys.argv[1]), json.load(open(sys.argv[2]))
LEGACY = {"manylinux1": (2, 5), "manylinux2010": (2, 12), "manylinux2014": (2, 17)}


def glibc(tag):
    """(major, minor) of a manylinux platform tag, None for other tags."""
    m = re.match(r"manylinux_(\d+)_(\d+)_", tag)
    if m:
        return int(m.group(1)), int(m.group(2))
    return LEGACY.get(tag.split("_")[0])


claimed = [g for g in map(glibc, name[: -len(".whl")].split("-")[-1].split(".")) if g]
needed = glibc(report["overall_tag"])
problems = [k for k in ("pyfpe", "ucs2", "unsupported_isa") if report.get(k)]
if report.get("external_libs"):
    problems.append(f"external shared libraries to graft: {sorted(report['external_libs'])}")
if claimed and (needed is None or needed > min(claimed)):
    problems.append(f"tagged for glibc {min(claimed)} but auditwheel finds {report['overall_tag']}")
if problems:
    sys.exit(f"    auditwheel: {name} is not clean: " + "; ".join(problems))
newest = {
    lib: max(vs, key=lambda v: [int(x) for x in re.findall(r"\d+", v)])
    for lib, vs in report.get("versioned_symbols", {}).items()
}
print(f"    auditwheel: consistent with {report['overall_tag']}"
      + ("" if claimed else " (the wheel has no manylinux tag)")
      + f"; no external libraries; newest symbol versions {newest}")
EOF
else
  echo "    skipped: auditwheel is not installed (pip install auditwheel)"
fi

echo "==> [$(date -u +%T)] a dataset written by pylance (reference)"
"$venv/bin/python" - "$work/theirs.lance" <<'EOF'
import sys, lance, pyarrow as pa
lance.write_dataset(pa.table({"id": list(range(100)), "s": [f"r{i}" for i in range(100)]}), sys.argv[1],
                    max_rows_per_file=40)
EOF

echo "==> [$(date -u +%T)] installing the wheel into a clean virtualenv"
python3 -m venv "$work/clean"
"$work/clean/bin/python" -m pip install -q --upgrade pip
"$work/clean/bin/python" -m pip install -q "$wheel"

echo "==> [$(date -u +%T)] smoke test in the clean virtualenv"
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
