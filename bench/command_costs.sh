#!/usr/bin/env bash
# Issue 18's "every command, every format at report speed": CPU and wall time of each command that
# reads a whole trace, as a multiple of `report`'s on the same file — dual-5000 scaled ×REPEAT (27:
# 10.1 M events) as trace.dat v7 zstd, uncompressed (v6) and perf.data, the files rss_scaling.sh and
# compare_peers.sh make. Best of RUNS (CPU = user + sys, GNU time), peak RSS the highest; `diff` reads
# the file twice, so its multiple is also given against two reports. Default threads.
#   bench/command_costs.sh                       # files in /tmp/exitscope-bench
#   FORMATS="v6" RUNS=5 bench/command_costs.sh
# Knobs: BUILD_DIR (build), BENCH_DIR, RUNS (3), REPEAT (27), FORMATS ("zstd v6 perf"), NICE (0), EXITSCOPE (the
# binary timed, default BUILD_DIR's).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD_DIR:-build}
RUNS=${RUNS:-3}
REPEAT=${REPEAT:-27}
FORMATS=${FORMATS:-"zstd v6 perf"}
DIR=${BENCH_DIR:-/tmp/exitscope-bench}
RUN=${EXITSCOPE_SHARED_DIR:-../shared}/traces/nested-svm-6.1/dual-5000
[ -x /usr/bin/time ] || { echo "needs GNU time (Debian package 'time'; scripts/install-deps.sh)"; exit 69; }
mkdir -p "$DIR"
cmake --build "$BUILD" -j 2 --target exitscope tracedat_scale >/dev/null
BIN=${EXITSCOPE:-$BUILD/exitscope}

source bench/bench_lib.sh

OUT=$DIR/command-out
# name|arguments before the file (@ = the file again, for diff)
COMMANDS=(
  "report|report"
  "report --by rip|report --by rip"
  "report --folded -|report --folded -"
  "report --csv|report --csv"
  "report --html|report --html $OUT.html"
  "report --openmetrics|report --openmetrics"
  "advise|advise"
  "timeline -o file|timeline -o $OUT.json"
  "timeline -o -|timeline -o -"
  "diff (file twice)|diff @"
  "dump|dump"
)
echo "dual-5000 ×$REPEAT; $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); best of $RUNS"
printf '%-6s %-22s %8s %8s %9s %9s %9s\n' format command "wall s" "cpu s" "peak RSS" "cpu ÷rep" "wall ÷rep"
for fmt in $FORMATS; do
  f=$(bench_input "$fmt" "$REPEAT")
  report_wall="" report_cpu=""
  for entry in "${COMMANDS[@]}"; do
    name=${entry%%|*} args=${entry#*|}
    if [[ $args == *"@"* ]]; then
      read -r -a words <<<"${args/@/$f}"
    else
      read -r -a words <<<"$args"
    fi
    read -r w c m < <(best_of "$RUNS" "$BIN" "${words[@]}" "$f")
    [ -n "$report_wall" ] || { report_wall=$w; report_cpu=$c; }
    awk -v f="$fmt" -v n="$name" -v w="$w" -v c="$c" -v m="$m" -v rw="$report_wall" -v rc="$report_cpu" 'BEGIN{
      printf "%-6s %-22s %8.2f %8.2f %6.0f MB %8.2fx %8.2fx\n", f, n, w, c, m / 1024, (rc > 0 ? c / rc : 0), (rw > 0 ? w / rw : 0) }'
  done
done
rm -f "$OUT.html" "$OUT.json"
