#!/usr/bin/env bash
# A plain text trace is read in 1 MiB chunks (pread), none of it mapped in: the peak RSS of `report`
# stays flat whatever the file's size. dual-5000's `trace-cmd report` text repeated 3×
# (bench/text_scale.py: 108 MB, 1.1 M lines) must report 3× its kvm_exit count (counts.txt) in
# well under the file's size; while the file was mapped and read in place, the peak RSS was its size.
# Usage: text_rss_check.sh EXITSCOPE RECORDING_DIR
set -euo pipefail
bin=$1 dir=$2
here=$(cd "$(dirname "$0")/../.." && pwd)
limit_kb=$((48 * 1024))
want=$(sed -nE 's/^kvm_exit +trace.dat.*: +([0-9]+)$/\1/p' "$dir/counts.txt")
[ -n "$want" ] || { echo "no kvm_exit count in $dir/counts.txt"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 "$here/bench/text_scale.py" "$dir/trace-cmd-report.txt.gz" "$tmp/x3.txt" 3
size_kb=$(( $(stat -c %s "$tmp/x3.txt") / 1024 ))
/usr/bin/time -f "%M" -o "$tmp/rss" "$bin" report --json "$tmp/x3.txt" > "$tmp/out.json"
rss_kb=$(cat "$tmp/rss")
got=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["totals"]["kvm_exit"])' "$tmp/out.json")
echo "x3 text: ${size_kb} KB, peak RSS ${rss_kb} KB, ${got} exits (want $((3 * want)))"
fail=0
[ "$got" = "$((3 * want))" ] || { echo "FAIL: exits"; fail=1; }
[ "$rss_kb" -lt "$limit_kb" ] || { echo "FAIL: peak RSS ${rss_kb} KB >= ${limit_kb} KB"; fail=1; }
exit $fail
