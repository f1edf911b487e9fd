# Sourced by bench/command_costs.sh and bench/rss_scaling.sh; they set BUILD (the build tree), DIR
# (where the files go) and RUN (the real dual-5000 recording) first.

# bench_input FORMAT REPEAT → the path of dual-5000 scaled ×REPEAT by bench/tracedat_scale, made on
# first use: zstd (trace.dat v7, trace-cmd 3.x's default), zlib (the same written as zlib by
# tracedat_scale --codec), v6 (uncompressed, `trace-cmd convert --file-version 6`), perf (perf.data, bench/perfdata_scale.py), or the run's `trace-cmd report`
# text, plain (text) or gzip -1 (textgz), by bench/text_scale.py. compare_peers.sh uses the names.
# CPUS=N: the trace.dat files spread over N CPUs (tracedat_scale --cpus), a host with many CPUs
# whose load moves from CPU to CPU; with DEALT=1 page by page in turn (--interleave), every CPU busy.
bench_input() {
  local cpus="" spread=()
  if [ -n "${CPUS:-}" ]; then spread=(--cpus "$CPUS"); cpus=-c$CPUS; fi
  if [ -n "${CPUS:-}" ] && [ -n "${DEALT:-}" ]; then spread+=(--interleave); cpus=$cpus-dealt; fi
  local dat=$DIR/dual-5000-x$2$cpus.dat
  [ -s "$dat" ] || "$BUILD/tracedat_scale" --repeat "$2" "${spread[@]}" "$RUN/trace.dat" "$dat"
  case $1 in
    zstd) echo "$dat" ;;
    zlib)
      local zl=$DIR/dual-5000-x$2$cpus-zlib.dat
      [ -s "$zl" ] || "$BUILD/tracedat_scale" --repeat "$2" "${spread[@]}" --codec zlib "$RUN/trace.dat" "$zl"
      echo "$zl" ;;
    v6)
      local raw=$DIR/dual-5000-x$2$cpus-v6.dat
      [ -s "$raw" ] || trace-cmd convert -i "$dat" -o "$raw" --file-version 6 >/dev/null 2>&1
      echo "$raw" ;;
    perf)
      local pf=$DIR/dual-5000-x$2.perf.data
      [ -s "$pf" ] || python3 bench/perfdata_scale.py "$RUN/perf.data" "$pf" "$2"
      echo "$pf" ;;
    text | textgz)
      local txt=$DIR/dual-5000-x$2.txt
      [ "$1" = text ] || txt=$txt.gz
      [ -s "$txt" ] || python3 bench/text_scale.py "$RUN/trace-cmd-report.txt.gz" "$txt" "$2"
      echo "$txt" ;;
  esac
}

# best_of N CMD… → "wall cpu rss_kb": the fastest wall and CPU of N runs (CPU = user + sys, GNU
# time), the highest RSS; output discarded; run at nice level NICE (0).
best_of() {
  local n=$1; shift
  local best="" line
  for _ in $(seq "$n"); do
    /usr/bin/time -f "%e %U %S %M" -o "$DIR/time.txt" nice -n "${NICE:-0}" "$@" >/dev/null 2>&1 || true
    line=$(awk '{printf "%s %.2f %s\n", $1, $2 + $3, $4}' "$DIR/time.txt")
    best=$(awk -v a="$line" -v b="$best" 'BEGIN{
      split(a, x); if (b == "") { print a; exit }
      split(b, y); printf "%s %s %s\n", (x[1] < y[1] ? x[1] : y[1]), (x[2] < y[2] ? x[2] : y[2]), (x[3] > y[3] ? x[3] : y[3]) }')
  done
  echo "$best"
}
