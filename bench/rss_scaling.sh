#!/usr/bin/env bash
# Issue 18's flat-memory check: peak RSS and time of `report`, `report --by rip`, `report --folded -`
# and `advise` on the real run dual-5000 scaled ×3, ×27 and ×81 (1.1 M, 10.1 M, 30.4 M events) by
# bench/tracedat_scale, as trace.dat v7 zstd (trace-cmd 3.x's default) and uncompressed (`trace-cmd
# convert --file-version 6`), and optionally as perf.data (bench/perfdata_scale.py; 2.9 GB at ×81)
# and as `trace-cmd report` text, plain or gzip (bench/text_scale.py: 3.0 GB plain at ×81).
# Default threads. Prints, per command and file, wall / CPU (best of RUNS) and peak RSS (GNU time),
# each command's wall as a multiple of `report`'s on the same file, then per command and format the
# RSS at the largest size over the smallest ("flat" up to ×1.25) and whether it is <= 64 MB at 10 M.
#   bench/rss_scaling.sh                        # files in /tmp/exitscope-bench (shared with compare_peers.sh)
#   FORMATS="zstd zlib v6 perf text textgz" RUNS=5 bench/rss_scaling.sh
# Knobs: BUILD_DIR (build), BENCH_DIR, RUNS (3), REPEATS ("3 27 81"), FORMATS ("zstd v6"), NICE (0),
# EXITSCOPE (the binary timed, default BUILD_DIR's: an older one for a before/after table), CPUS
# (the trace.dat files spread over this many CPUs, tracedat_scale --cpus: memory per CPU shows), DEALT
# (with CPUS: page by page in turn, every CPU busy at once).
# Exit status 1 when a goal (flat, <= 64 MB at the middle size) is missed.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD_DIR:-build}
RUNS=${RUNS:-3}
REPEATS=${REPEATS:-"3 27 81"}
FORMATS=${FORMATS:-"zstd v6"}
DIR=${BENCH_DIR:-/tmp/exitscope-bench}
RUN=${EXITSCOPE_SHARED_DIR:-../shared}/traces/nested-svm-6.1/dual-5000
EVENTS_PER_RUN=375873  # dual-5000/counts.txt
LIMIT_MB=64            # issue 18: peak RSS at 10 M events
FLAT=1.25              # largest size's RSS over the smallest's, at most
[ -x /usr/bin/time ] || { echo "needs GNU time (Debian package 'time'; scripts/install-deps.sh)"; exit 69; }
mkdir -p "$DIR"
cmake --build "$BUILD" -j 2 --target exitscope tracedat_scale >/dev/null
BIN=${EXITSCOPE:-$BUILD/exitscope}

source bench/bench_lib.sh

COMMANDS=("report" "report --by rip" "report --folded -" "advise")
echo "dual-5000 ×{$REPEATS}; $(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg); best of $RUNS"
printf '%-6s %-18s %5s %11s %8s %8s %9s %9s\n' format command "×" events "wall s" "cpu s" "peak RSS" "÷ report"
declare -A rss
status=0
for fmt in $FORMATS; do
  for r in $REPEATS; do
    f=$(bench_input "$fmt" "$r")
    report_wall=""
    for cmd in "${COMMANDS[@]}"; do
      # shellcheck disable=SC2086  # the command's words
      read -r w c m < <(best_of "$RUNS" "$BIN" $cmd "$f")
      [ -n "$report_wall" ] || report_wall=$w
      rss[$fmt/$cmd/$r]=$m
      awk -v f="$fmt" -v n="$cmd" -v r="$r" -v e=$((EVENTS_PER_RUN * r)) -v w="$w" -v c="$c" -v m="$m" \
          -v rw="$report_wall" 'BEGIN{
        printf "%-6s %-18s %5d %11d %8.2f %8.2f %6.0f MB %8.2fx\n", f, n, r, e, w, c, m / 1024, (rw > 0 ? w / rw : 0) }'
    done
  done
done
read -r -a sizes <<<"$REPEATS"
lo=${sizes[0]} mid=${sizes[$((${#sizes[@]} / 2))]} hi=${sizes[-1]}
echo "peak RSS ×$hi over ×$lo (flat: <= $FLAT) and at ×$mid (<= $LIMIT_MB MB):"
for fmt in $FORMATS; do
  for cmd in "${COMMANDS[@]}"; do
    awk -v f="$fmt" -v n="$cmd" -v a="${rss[$fmt/$cmd/$lo]}" -v b="${rss[$fmt/$cmd/$hi]}" -v m="${rss[$fmt/$cmd/$mid]}" \
        -v flat="$FLAT" -v lim="$LIMIT_MB" 'BEGIN{
      ok = (b / a <= flat && m / 1024 <= lim)
      printf "  %-6s %-18s %5.2fx  %4.0f MB  %s\n", f, n, b / a, m / 1024, ok ? "ok" : "MISSED"; exit !ok }' || status=1
  done
done
exit $status
