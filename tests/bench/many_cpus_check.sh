#!/usr/bin/env bash
# A host with hundreds of CPUs: dual-5000's pages repeated 4x and spread over 256 CPUs page by page
# (bench/tracedat_scale --cpus: each CPU keeps its pages in time order, so the merged records are the
# recording's). `report` must count the same exits as on the 1-CPU original (only the CPU count and
# the exits whose entry is now on another CPU differ), compressed and uncompressed, sliced and
# sequential, in 48 MB (issue 18: 64 MB): the CPUs' read buffers and the chunks waiting ahead share
# fixed budgets and no CPU's chunk count is read through the mapping (68-99 MB here before; 24-37
# MB after). Consecutive runs of
# pages, not page by page in turn: two records of one time on two pages keep their order (CPU 255
# handing over to CPU 0 would put them the other way round, in `trace-cmd report` as well).
# Page by page in turn (--interleave: every CPU busy at once, a loaded host) the uncompressed file's
# sliced report must be its own `-j 1` report, in the same 48 MB (the cuts bunched where every CPU
# was sampled at the same pages: a few slices held most events: 162 MB here, 548 MB at x27).
# Usage: many_cpus_check.sh EXITSCOPE TRACEDAT_SCALE RECORDING_DIR
set -euo pipefail
bin=$1 scale=$2 dir=$3
limit_kb=$((48 * 1024))
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$scale" --repeat 4 "$dir/trace.dat" "$tmp/x4.dat"
"$scale" --repeat 4 --cpus 256 "$dir/trace.dat" "$tmp/x4-256.dat"
"$scale" --repeat 4 --cpus 256 --interleave "$dir/trace.dat" "$tmp/x4-256i.dat"
for f in x4-256 x4-256i; do
  trace-cmd convert -i "$tmp/$f.dat" -o "$tmp/$f.v6.dat" --file-version 6 >/dev/null 2>&1 ||
    { echo "FAIL: trace-cmd convert (trace-cmd comes from scripts/install-deps.sh)"; exit 1; }
done
# A report without its file line, its format, its CPU count and the CPU-migration note.
comparable() {
  sed -E '1d; s/format trace.dat v[67][^·]*·/format ·/; s/ [0-9]+ CPUs? ·/ N CPUs ·/; /pair\.cpu_migration/d' "$1"
}
"$bin" report "$tmp/x4.dat" > "$tmp/raw.txt"
comparable "$tmp/raw.txt" > "$tmp/want.txt"
grep -q 'kvm_exit\|exits' "$tmp/want.txt" || { echo "FAIL: no report on the original"; exit 1; }
fail=0
# $tmp/got.txt (run NAME, its peak RSS in $tmp/rss) against $tmp/want.txt (AGAINST says whose).
judge() {
  local name=$1 against=$2 rss_kb
  rss_kb=$(tail -n 1 "$tmp/rss")  # GNU time puts a non-zero exit status on a line before it
  echo "$name: peak RSS ${rss_kb} KB"
  diff "$tmp/want.txt" "$tmp/got.txt" > "$tmp/diff.txt" || {
    echo "FAIL: $name: the report differs from $against"
    head -20 "$tmp/diff.txt"
    fail=1
  }
  [ "$rss_kb" -lt "$limit_kb" ] || { echo "FAIL: $name: peak RSS ${rss_kb} KB >= ${limit_kb} KB"; fail=1; }
}
for run in "zstd:x4-256.dat:" "zstd -j 1:x4-256.dat:-j 1" "uncompressed:x4-256.v6.dat:" \
  "uncompressed -j 1:x4-256.v6.dat:-j 1"; do
  IFS=: read -r name file args <<< "$run"
  # shellcheck disable=SC2086
  /usr/bin/time -f "%M" -o "$tmp/rss" "$bin" report $args "$tmp/$file" > "$tmp/raw.txt"
  grep -q '256 CPUs' "$tmp/raw.txt" || { echo "FAIL: $name: not read as 256 CPUs"; fail=1; }
  comparable "$tmp/raw.txt" > "$tmp/got.txt"
  judge "$name" "the original's"
done
# Exit status 65 is a partial result: the ties reordered at hand-overs leave two exits unpaired.
"$bin" report -j 1 "$tmp/x4-256i.v6.dat" > "$tmp/want.txt" || [ $? -eq 65 ]
/usr/bin/time -f "%M" -o "$tmp/rss" "$bin" report "$tmp/x4-256i.v6.dat" > "$tmp/got.txt" || [ $? -eq 65 ]
grep -q 'kvm_exit' "$tmp/want.txt" || { echo "FAIL: busy CPUs: no report"; fail=1; }
judge "uncompressed, busy CPUs" "-j 1's"
exit $fail
