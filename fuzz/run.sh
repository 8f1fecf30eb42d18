#!/usr/bin/env bash
# Runs every fuzz target for its share of a time budget, one libFuzzer process at a time
# (niced), and appends executions, coverage and findings to benches/FUZZ.md.
#
# usage: bash fuzz/run.sh BUDGET_SECONDS
#
# Needs cargo-fuzz (`cargo install cargo-fuzz`) and a nightly toolchain or RUSTC_BOOTSTRAP=1.
# Seeds come from fuzz/make_seeds.py (run when fuzz/seeds/ is missing); new inputs go to
# fuzz/corpus/<target>/, findings to fuzz/artifacts/<target>/ (none of them committed).
# Limits: a single allocation over 1 GiB aborts (fuzz/src/lib.rs, the same as
# -malloc_limit_mb=1024, which needs a sanitizer's hooks), RSS over 2 GiB is an oom, an
# input taking over 10 s a timeout.
set -u
BUDGET=${1:?usage: bash fuzz/run.sh BUDGET_SECONDS}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
FUZZ=$ROOT/fuzz
REPORT=$ROOT/benches/FUZZ.md
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$HOME/.cache/lancepy-fuzz}
# One decoding thread: one job must not take both cores.
export RAYON_NUM_THREADS=${RAYON_NUM_THREADS:-1}
MAX_LEN=${MAX_LEN:-65536}
# target:weight (shares of the budget)
TARGETS=${TARGETS:-"file_reader:30 file_ops:25 manifest:10 row_ids:10 deletion_arrow:10 deletion_bitmap:7 transaction:8"}

TOOLCHAIN=()
if ! rustc --version | grep -q nightly; then
  if rustup toolchain list 2>/dev/null | grep -q '^nightly'; then TOOLCHAIN=(+nightly); else export RUSTC_BOOTSTRAP=1; fi
fi
cd "$FUZZ"
[ -d seeds ] || "$ROOT/.venv/bin/python" make_seeds.py || exit 1
nice -n 10 cargo "${TOOLCHAIN[@]}" fuzz build --sanitizer none --debug-assertions -O || exit 1
BIN=$CARGO_TARGET_DIR/x86_64-unknown-linux-gnu/release

total_w=0
for tw in $TARGETS; do total_w=$((total_w + ${tw#*:})); done
commit=$(git -C "$ROOT" rev-parse --short HEAD)
[ -f "$REPORT" ] || printf '# Fuzzing runs\n\nAppended by `bash fuzz/run.sh BUDGET_SECONDS` (libFuzzer, one process at a time).\n' > "$REPORT"
{
  printf '\n## %s, commit %s, budget %s s\n\n' "$(date -u '+%Y-%m-%d %H:%M UTC')" "$commit" "$BUDGET"
  printf '| target | seconds | executions | exec/s | coverage (edges) | features | corpus | findings |\n'
  printf '|---|---:|---:|---:|---:|---:|---:|---|\n'
} >> "$REPORT"

grand_execs=0
grand_findings=0
for tw in $TARGETS; do
  t=${tw%%:*}
  secs=$((BUDGET * ${tw#*:} / total_w))
  [ "$secs" -ge 1 ] || secs=1
  mkdir -p "corpus/$t" "artifacts/$t" "seeds/$t"
  before=$(ls "artifacts/$t" | sort)
  execs=0 cov=0 ft=0 corp=0 tries=0
  start=$(date +%s)
  while :; do
    left=$((secs - ($(date +%s) - start)))
    [ "$left" -ge 2 ] && [ "$tries" -lt 4 ] || break
    tries=$((tries + 1))
    log=$(mktemp)
    nice -n 10 "$BIN/$t" "corpus/$t" "seeds/$t" -max_total_time="$left" -max_len="$MAX_LEN" \
      -rss_limit_mb=2048 -malloc_limit_mb=1024 -timeout=10 -print_final_stats=1 \
      -artifact_prefix="artifacts/$t/" > "$log" 2>&1
    rc=$?
    n=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$log" | tail -1 | awk '{print $2}')
    [ -n "$n" ] || n=$(grep -oE '^#[0-9]+' "$log" | tail -1 | tr -d '#')
    execs=$((execs + ${n:-0}))
    last=$(grep -E '^#[0-9]+.*cov: ' "$log" | tail -1)
    c=$(sed -E 's/.*cov: ([0-9]+).*/\1/' <<< "$last"); f=$(sed -E 's/.*ft: ([0-9]+).*/\1/' <<< "$last")
    [ -n "$c" ] && [ "$c" -gt "$cov" ] && cov=$c
    [ -n "$f" ] && [ "$f" -gt "$ft" ] && ft=$f
    if [ "$rc" -ne 0 ]; then
      echo "== $t exited with $rc; log tail:" >&2
      tail -25 "$log" >&2
    fi
    rm -f "$log"
    [ "$rc" -eq 0 ] && break
  done
  used=$(($(date +%s) - start))
  [ "$used" -ge 1 ] || used=1
  corp=$(ls "corpus/$t" | wc -l)
  new=$(comm -13 <(echo "$before") <(ls "artifacts/$t" | sort) | grep -v '^$' || true)
  nf=$(grep -c . <<< "$new" || true)
  grand_execs=$((grand_execs + execs))
  grand_findings=$((grand_findings + nf))
  findings=$( [ "$nf" -eq 0 ] && echo none || echo "$new" | sed "s|^|artifacts/$t/|" | paste -sd' ' )
  rate=$((execs / used))
  printf '| %s | %s | %s | %s | %s | %s | %s | %s |\n' "$t" "$used" "$execs" "$rate" "$cov" "$ft" "$corp" "$findings" >> "$REPORT"
  echo "$t: $execs executions in $used s, cov $cov, ft $ft, corpus $corp, findings: $findings"
done
printf '\nTotal: %s executions, %s findings.\n' "$grand_execs" "$grand_findings" >> "$REPORT"
echo "Total: $grand_execs executions, $grand_findings findings (see $REPORT)"
[ "$grand_findings" -eq 0 ]
