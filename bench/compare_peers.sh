#!/usr/bin/env bash
# Side by side on the same real run scaled up: `exitscope report` vs `trace-cmd report > /dev/null`
# (same trace.dat) vs `perf kvm stat report --event=vmexit` (the perf.data recorded at the same time).
# exitscope runs on the trace.dat as trace-cmd 3.x writes it by default (v7, zstd) and on the same
# trace uncompressed (`trace-cmd convert --file-version 6`, what trace-cmd 2.x and `record
# --file-version 6` write), with its default threads (one per core) and with -j 1, and on the same
# events as a zlib trace.dat (tracedat_scale --codec zlib: Debian's trace-cmd writes none).
# The real run is ../shared/traces/nested-svm-6.1/dual-5000 (375,873 events in each file); it is
# repeated REPEAT times (default 27 → 10.1 M events) with shifted timestamps by bench/tracedat_scale
# and bench/perfdata_scale.py. Prints wall/CPU time, events/s, peak RSS (GNU time) and the ratios,
# then exitscope's peak RSS at 1×, REPEAT/3× and REPEAT× (flat memory). Beside them the floor
# (bench_floor, bench/floor.cc): the time to merely touch the perf.data's and the uncompressed
# trace's bytes, or to decompress the trace's bytes (zstd; zlib with libdeflate, as exitscope
# inflates), on all cores, and the same with
# every event walked (its time, thread and type looked at: the least any reader of events does) —
# every figure is also stated as a multiple of them — and the lean report floor: that walk's CPU
# time plus the merge of all CPUs' events into one time order (bench_floor merge; on the perf.data
# each round sorted and merged with what the one before left, as perf orders its samples), shared
# perfectly over the cores: the least a report that pairs exits can take, for zstd and perf.data.
#   bench/compare_peers.sh                  # REPEAT=27, files in /tmp/exitscope-bench
#   REPEAT=54 RUNS=5 bench/compare_peers.sh
# Knobs: BUILD_DIR (build), BENCH_DIR (/tmp/exitscope-bench), RUNS (best of, 3), SLOW_RUNS (trace-cmd, 1).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD_DIR:-build}
REPEAT=${REPEAT:-27}
RUNS=${RUNS:-3}
SLOW_RUNS=${SLOW_RUNS:-1}
DIR=${BENCH_DIR:-/tmp/exitscope-bench}
RUN=${EXITSCOPE_SHARED_DIR:-../shared}/traces/nested-svm-6.1/dual-5000
EVENTS_PER_RUN=375873   # dual-5000/counts.txt: every event, in trace.dat and in perf.data
[ -x /usr/bin/time ] || { echo "needs GNU time (Debian package 'time'; scripts/install-deps.sh)"; exit 69; }
mkdir -p "$DIR"
cmake --build "$BUILD" -j 2 --target exitscope tracedat_scale bench_floor >/dev/null

scaled() {  # $1 = repeat → path of the scaled trace.dat
  local f=$DIR/dual-5000-x$1.dat
  [ -s "$f" ] || "$BUILD/tracedat_scale" --repeat "$1" "$RUN/trace.dat" "$f"
  echo "$f"
}
DAT=$(scaled "$REPEAT")
PERF=$DIR/dual-5000-x$REPEAT.perf.data
[ -s "$PERF" ] || python3 bench/perfdata_scale.py "$RUN/perf.data" "$PERF" "$REPEAT"
EVENTS=$((EVENTS_PER_RUN * REPEAT))
RAW=$DIR/dual-5000-x$REPEAT-v6.dat
[ -s "$RAW" ] || trace-cmd convert -i "$DAT" -o "$RAW" --file-version 6 >/dev/null 2>&1
ZLIB=$DIR/dual-5000-x$REPEAT-zlib.dat
[ -s "$ZLIB" ] || "$BUILD/tracedat_scale" --repeat "$REPEAT" --codec zlib "$RUN/trace.dat" "$ZLIB"

# best_of N CMD… → "wall cpu rss_kb" of the fastest of N runs (output discarded).
best_of() {
  local n=$1; shift
  local best="" line
  for _ in $(seq "$n"); do
    /usr/bin/time -f "%e %U %S %M" -o "$DIR/time.txt" "$@" >/dev/null 2>&1 || true
    line=$(awk '{printf "%s %.2f %s\n", $1, $2 + $3, $4}' "$DIR/time.txt")
    if [ -z "$best" ] || awk -v a="${line%% *}" -v b="${best%% *}" 'BEGIN{exit !(a < b)}'; then best=$line; fi
  done
  echo "$best"
}

read -r es_wall es_cpu es_rss < <(best_of "$RUNS" "$BUILD/exitscope" report "$DAT")
read -r zl_wall zl_cpu zl_rss < <(best_of "$RUNS" "$BUILD/exitscope" report "$ZLIB")
read -r raw_wall raw_cpu raw_rss < <(best_of "$RUNS" "$BUILD/exitscope" report "$RAW")
read -r raw1_wall raw1_cpu raw1_rss < <(best_of "$RUNS" "$BUILD/exitscope" report -j 1 "$RAW")
read -r pd_wall pd_cpu pd_rss < <(best_of "$RUNS" "$BUILD/exitscope" report "$PERF")
read -r pd1_wall pd1_cpu pd1_rss < <(best_of "$RUNS" "$BUILD/exitscope" report -j 1 "$PERF")
read -r pk_wall pk_cpu pk_rss < <(best_of "$RUNS" perf kvm -i "$PERF" stat report --event=vmexit)
floor() { "$BUILD/bench_floor" --runs "$RUNS" "$@" | sed -E 's/.*, ([0-9.]+) s .*/\1/'; }
fl_touch_perf=$(floor touch "$PERF")
fl_read_perf=$(floor read "$PERF")  # pread into a buffer: how the perf.data reader looks at its bytes
# How fast each core is now: on this VM one vCPU is at times ~1.4x slower than the other for
# minutes, and every figure with it; runs in different states do not compare.
cores=$("$BUILD/bench_floor" --runs "$RUNS" cores "$RAW")
fl_touch_raw=$(floor touch "$RAW")
fl_zstd=$(floor zstd "$RAW")
fl_zlib=$(floor zlib "$RAW")
# The same in trace-cmd's chunks (10 pages of 4 KB), each a frame of its own (zlib pays for that).
fl_zstd_tc=$(floor --chunk 40960 zstd "$RAW")
fl_zlib_tc=$(floor --chunk 40960 zlib "$RAW")
# The least any reader of the events does after that: every event's time, thread and type looked
# at and one table updated per event (bench/floor.cc, walk modes).
perf_walk=$("$BUILD/bench_floor" --runs "$RUNS" walk "$PERF")
fl_walk_perf=$(sed -E 's/.*, ([0-9.]+) s .*/\1/' <<<"$perf_walk")
fl_walk_perf_cpu=$(sed -E 's/.*cpu ([0-9.]+) s.*/\1/' <<<"$perf_walk")
zstd_walk=$("$BUILD/bench_floor" --runs "$RUNS" zstd-walk "$RAW")
fl_walk_zstd=$(sed -E 's/.*, ([0-9.]+) s .*/\1/' <<<"$zstd_walk")
fl_walk_zstd_cpu=$(sed -E 's/.*cpu ([0-9.]+) s.*/\1/' <<<"$zstd_walk")
# The time order of all CPUs' events, which pairing needs beyond the walk (one thread).
fl_merge=$(floor merge "$RAW")
# perf.data: each round sorted and merged with what the one before left (as perf orders samples).
fl_merge_perf=$(floor merge "$PERF")
fl_walk_zlib=$(floor zlib-walk "$RAW")
read -r tc_wall tc_cpu tc_rss < <(best_of "$SLOW_RUNS" trace-cmd report "$DAT")

echo "input: dual-5000 x$REPEAT = $EVENTS events ($(du -hL "$DAT" | cut -f1) trace.dat zstd, $(du -hL "$ZLIB" | cut -f1) zlib, $(du -hL "$RAW" | cut -f1) uncompressed, $(du -hL "$PERF" | cut -f1) perf.data); $(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg)"
printf '%-40s %8s %8s %10s %9s %10s %10s\n' tool "wall s" "cpu s" "events/s" "peak RSS" "vs perf" "vs tc"
row() {
  awk -v n="$1" -v w="$2" -v c="$3" -v r="$4" -v pk="$pk_wall" -v tc="$tc_wall" -v ev="$EVENTS" 'BEGIN{
    printf "%-40s %8.2f %8.2f %9.1fM %7.0fMB %9.1fx %9.1fx\n", n, w, c, ev / w / 1e6, r / 1024, pk / w, tc / w }'
}
row "exitscope report (zstd)" "$es_wall" "$es_cpu" "$es_rss"
row "exitscope report (zlib)" "$zl_wall" "$zl_cpu" "$zl_rss"
row "exitscope report (uncompressed)" "$raw_wall" "$raw_cpu" "$raw_rss"
row "exitscope report -j 1 (uncompressed)" "$raw1_wall" "$raw1_cpu" "$raw1_rss"
row "exitscope report (perf.data)" "$pd_wall" "$pd_cpu" "$pd_rss"
row "exitscope report -j 1 (perf.data)" "$pd1_wall" "$pd1_cpu" "$pd1_rss"
row "perf kvm stat report --event=vmexit" "$pk_wall" "$pk_cpu" "$pk_rss"
row "trace-cmd report > /dev/null (zstd)" "$tc_wall" "$tc_cpu" "$tc_rss"
echo "(vs perf / vs tc: how many times faster than perf kvm stat report / trace-cmd report, in wall time)"
echo "floor, all $(nproc) cores (bench_floor): touch perf.data $fl_touch_perf s (pread $fl_read_perf s), touch uncompressed trace.dat $fl_touch_raw s, zstd decompress of its bytes $fl_zstd s, zlib $fl_zlib s (1 MB chunks); in trace-cmd's 40 KB chunks zstd $fl_zstd_tc s, zlib $fl_zlib_tc s"
echo "walk floor (the same, every event's time, thread and type looked at): perf.data $fl_walk_perf s, zstd $fl_walk_zstd s, zlib $fl_walk_zlib s"
echo "each core alone (bench_floor $cores)"
awk -v c="$fl_walk_zstd_cpu" -v m="$fl_merge" -v n="$(nproc)" -v zs="$fl_zstd" -v es="$es_wall" 'BEGIN{
  f = (c + m) / n
  printf "lean report floor, zstd: (zstd walk cpu %.3f s + time merge %.3f s) / %d cores = %.3f s (%.2fx the decompression); exitscope %.1fx it\n", c, m, n, f, f / zs, es / f }'
awk -v c="$fl_walk_perf_cpu" -v m="$fl_merge_perf" -v n="$(nproc)" -v pd="$pd_wall" -v pk="$pk_wall" 'BEGIN{
  f = (c + m) / n
  printf "lean report floor, perf.data: (walk cpu %.3f s + round sort and merge %.3f s) / %d cores = %.3f s; 8x perf kvm stat = %.3f s (%.1fx the lean floor); exitscope %.1fx the lean floor\n", c, m, n, f, pk / 8, (pk / 8) / f, pd / f }'
awk -v pd="$pd_wall" -v pk="$pk_wall" -v es="$es_wall" -v raw="$raw_wall" -v tp="$fl_touch_perf" -v tr="$fl_touch_raw" \
    -v zs="$fl_zstd" -v zt="$fl_zstd_tc" -v rp="$fl_read_perf" -v wp="$fl_walk_perf" -v wz="$fl_walk_zstd" \
    -v zl="$zl_wall" -v ls="$fl_zlib" -v lt="$fl_zlib_tc" 'BEGIN{
  printf "as multiples of the floor: exitscope perf.data %.1fx (perf kvm stat %.1fx) the touch of its bytes, %.1fx their pread; ", pd / tp, pk / tp, pd / rp
  printf "zstd trace.dat %.1fx the zstd decompression (%.1fx in 40 KB chunks); zlib trace.dat %.1fx the zlib decompression (%.1fx in 40 KB chunks); uncompressed %.1fx the touch\n", es / zs, es / zt, zl / ls, zl / lt, raw / tr
  printf "as multiples of the walk floor: exitscope perf.data %.1fx (perf kvm stat %.1fx), zstd trace.dat %.1fx; the zstd walk is %.2fx the decompression alone\n", pd / wp, pk / wp, es / wz, wz / zs }'

# Same answer? Timed exits (exitscope) vs Total Samples (perf kvm stat).
es_exits=$("$BUILD/exitscope" report "$DAT" | awk '/timed exits/{gsub(",","",$NF); print $NF}')
zl_exits=$("$BUILD/exitscope" report "$ZLIB" | awk '/timed exits/{gsub(",","",$NF); print $NF}')
raw_exits=$("$BUILD/exitscope" report "$RAW" | awk '/timed exits/{gsub(",","",$NF); print $NF}')
pd_exits=$("$BUILD/exitscope" report "$PERF" | awk '/timed exits/{gsub(",","",$NF); print $NF}')
pk_exits=$(perf kvm -i "$PERF" stat report --event=vmexit 2>&1 | awk -F'[:,]' '/Total Samples/{print $2}')
echo "timed exits: exitscope $es_exits (zstd), $zl_exits (zlib), $raw_exits (uncompressed), $pd_exits (perf.data), perf kvm stat $pk_exits"

echo "exitscope peak RSS as the trace grows (zstd; uncompressed; perf.data — default threads):"
for r in 1 $((REPEAT / 3)) "$REPEAT"; do
  f=$(scaled "$r") raw=$DIR/dual-5000-x$r-v6.dat pf=$DIR/dual-5000-x$r.perf.data
  [ -s "$raw" ] || trace-cmd convert -i "$f" -o "$raw" --file-version 6 >/dev/null 2>&1
  [ -s "$pf" ] || python3 bench/perfdata_scale.py "$RUN/perf.data" "$pf" "$r"
  read -r w c rss < <(best_of 1 "$BUILD/exitscope" report "$f")
  read -r rw rc rrss < <(best_of 1 "$BUILD/exitscope" report "$raw")
  read -r pw pc prss < <(best_of 1 "$BUILD/exitscope" report "$pf")
  awk -v r="$r" -v e=$((EVENTS_PER_RUN * r)) -v rss="$rss" -v w="$w" -v rrss="$rrss" -v rw="$rw" -v prss="$prss" \
      -v pw="$pw" 'BEGIN{
    printf "  x%-3d %10d events  %6.0f MB %6.2f s;  %6.0f MB %6.2f s;  %6.0f MB %6.2f s\n", r, e, rss / 1024, w,
           rrss / 1024, rw, prss / 1024, pw }'
done
