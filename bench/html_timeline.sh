#!/usr/bin/env bash
# Issue 14's benchmark: `report --html`, `advise --html` and `timeline` on the real run dual-5000
# scaled ×REPEAT (default 27 → 10.1 M events, bench/tracedat_scale as in bench/compare_peers.sh),
# beside plain `report` for scale. Prints wall / CPU time, peak RSS (GNU time) and the output's size
# (best of RUNS), the timeline both capped (default --max-exits) and whole (--max-exits 0).
#   bench/html_timeline.sh               # REPEAT=27 RUNS=3, files in /tmp/exitscope-bench
# Knobs: BUILD_DIR (build), BENCH_DIR (/tmp/exitscope-bench), REPEAT, RUNS.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD_DIR:-build}
REPEAT=${REPEAT:-27}
RUNS=${RUNS:-3}
DIR=${BENCH_DIR:-/tmp/exitscope-bench}
RUN=${EXITSCOPE_SHARED_DIR:-../shared}/traces/nested-svm-6.1/dual-5000
[ -x /usr/bin/time ] || { echo "needs GNU time (Debian package 'time'; scripts/install-deps.sh)"; exit 69; }
mkdir -p "$DIR"
cmake --build "$BUILD" -j 2 --target exitscope tracedat_scale >/dev/null
DAT=$DIR/dual-5000-x$REPEAT.dat
[ -s "$DAT" ] || "$BUILD/tracedat_scale" --repeat "$REPEAT" "$RUN/trace.dat" "$DAT"

# best_of N OUTFILE CMD… → "wall cpu rss_kb bytes" of the fastest of N runs.
best_of() {
  local n=$1 out=$2; shift 2
  local best="" line
  for _ in $(seq "$n"); do
    /usr/bin/time -f "%e %U %S %M" -o "$DIR/time.txt" "$@" >/dev/null 2>"$DIR/stderr.txt" || true
    local bytes=0
    [ "$out" = - ] || bytes=$(stat -c %s "$out")
    line=$(awk -v b="$bytes" '{printf "%s %.2f %s %s\n", $1, $2 + $3, $4, b}' "$DIR/time.txt")
    if [ -z "$best" ] || awk -v a="${line%% *}" -v b="${best%% *}" 'BEGIN{exit !(a < b)}'; then best=$line; fi
  done
  echo "$best"
}
row() { awk -v n="$1" -v w="$2" -v c="$3" -v r="$4" -v b="$5" \
  'BEGIN{printf "%-44s %7.2f %7.2f %8.0f MB %10.2f MB\n", n, w, c, r / 1024, b / 1048576}'; }

echo "input: dual-5000 x$REPEAT ($(du -h "$DAT" | cut -f1) trace.dat zstd); $(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg)"
printf '%-44s %7s %7s %11s %13s\n' command "wall s" "cpu s" "peak RSS" "output"
row "report (text, for scale)" $(best_of "$RUNS" - "$BUILD/exitscope" report "$DAT")
row "report --html" $(best_of "$RUNS" "$DIR/x.html" "$BUILD/exitscope" report --html "$DIR/x.html" "$DAT")
row "advise --html" $(best_of 1 "$DIR/a.html" "$BUILD/exitscope" advise --html "$DIR/a.html" "$DAT")
row "timeline (default cap)" $(best_of "$RUNS" "$DIR/t.json" "$BUILD/exitscope" timeline -o "$DIR/t.json" "$DAT")
grep -o 'timeline: .*' "$DIR/stderr.txt" | cut -c1-160 || true
row "timeline --max-exits 0 (every exit)" $(best_of 1 "$DIR/t0.json" "$BUILD/exitscope" timeline --max-exits 0 -o "$DIR/t0.json" "$DAT")
rm -f "$DIR/t.json" "$DIR/t0.json"
