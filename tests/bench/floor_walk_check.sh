#!/usr/bin/env bash
# bench_floor's walk modes must see every event of a real recording: the perf.data's samples and the
# trace.dat's events (converted to version 6, as bench/compare_peers.sh does), as many as the
# recording's counts.txt says its files hold. A walk that missed or invented records would make the
# floor it times a floor of something else.
# Usage: floor_walk_check.sh BENCH_FLOOR RECORDING_DIR
set -euo pipefail
floor=$1 dir=$2
counts=$dir/counts.txt
# "all events  trace.dat: N  perf.data (samples): N ..." (x86 recordings), or the kernel's
# "entries-in-buffer/entries-written: N/N" of the same run (arm64), when nothing was lost.
want_dat=$(sed -nE 's/^all events +trace.dat: ([0-9]+).*/\1/p' "$counts")
want_perf=$(sed -nE 's/.*perf.data \(samples\): ([0-9]+).*/\1/p' "$counts")
if [ -z "$want_dat" ]; then
  read -r a b < <(sed -nE 's/.*entries-in-buffer\/entries-written: ([0-9]+)\/([0-9]+).*/\1 \2/p' "$counts")
  [ -n "${a:-}" ] && [ "$a" = "$b" ] && want_dat=$a want_perf=$a
fi
[ -n "$want_dat" ] && [ -n "$want_perf" ] || { echo "no event count in $counts"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
trace-cmd convert -i "$dir/trace.dat" -o "$tmp/v6.dat" --file-version 6 >/dev/null 2>&1
fail=0
check() {  # mode file want
  local out got
  out=$("$floor" --runs 1 "$1" "$2")
  echo "$out"
  got=$(sed -nE 's/.*, ([0-9]+) events walked$/\1/p' <<<"$out")
  if [ "$got" != "$3" ]; then
    echo "FAIL: $1 walked ${got:-no} events, $counts says $3"
    fail=1
  fi
}
check walk "$dir/perf.data" "$want_perf"
check zstd-walk "$tmp/v6.dat" "$want_dat"
check zlib-walk "$tmp/v6.dat" "$want_dat"
# The merge hands on every event of every CPU once, as the walks do.
check merge "$tmp/v6.dat" "$want_dat"
check merge "$dir/perf.data" "$want_perf"
# One thread and many: the cuts between parts lose no record.
out=$("$floor" --runs 1 -j 1 walk "$dir/perf.data")
[[ "$out" == *", $want_perf events walked" ]] || { echo "FAIL: -j 1: $out"; fail=1; }
out=$("$floor" --runs 1 -j 7 walk "$dir/perf.data")
[[ "$out" == *", $want_perf events walked" ]] || { echo "FAIL: -j 7: $out"; fail=1; }
# What it does not walk is refused with a reason, not timed as if walked.
if "$floor" --runs 1 walk "$dir/trace.dat" 2>"$tmp/err"; then echo "FAIL: walked a trace.dat as perf.data"; fail=1; fi
grep -q "not a file-mode perf.data" "$tmp/err" || { echo "FAIL: no reason: $(cat "$tmp/err")"; fail=1; }
for mode in zstd-walk merge; do
  if "$floor" --runs 1 "$mode" "$dir/trace.dat" 2>"$tmp/err"; then echo "FAIL: $mode walked a v7 trace.dat"; fail=1; fi
  grep -q "not a version 6 trace.dat" "$tmp/err" || { echo "FAIL: $mode: no reason: $(cat "$tmp/err")"; fail=1; }
done
exit $fail
