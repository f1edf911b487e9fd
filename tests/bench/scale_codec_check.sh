#!/usr/bin/env bash
# tracedat_scale's --codec: the zlib trace.dat bench/compare_peers.sh times is the zstd one's events
# in the other codec. A real recording (zstd) written as zlib at 2x, and that back as zstd, must give
# exitscope's report of the zstd 2x byte for byte (bar the file's name and the codec on the format
# line), and Debian's trace-cmd must read the file written back (its layout is still trace-cmd's).
# The zlib chunks are inflated by libdeflate in exitscope and by nothing else here, so this is also
# the 2x-length check of that path; the real zlib recordings (hip24-vmx) have goldens of their own.
# Usage: scale_codec_check.sh TRACEDAT_SCALE EXITSCOPE TRACE.DAT
set -euo pipefail
scale=$1 exitscope=$2 trace=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$scale" --repeat 2 "$trace" "$tmp/zstd.dat"
"$scale" --repeat 2 --codec zlib "$trace" "$tmp/zlib.dat"
"$scale" --codec zstd "$tmp/zlib.dat" "$tmp/back.dat"
report() {  # the report with the input's name and codec taken out
  "$exitscope" report "$1" 2>&1 | sed -E "s|$1|FILE|; s/trace.dat v7 \((zstd|zlib)\)/trace.dat v7 (CODEC)/"
}
fail=0
grep -q "trace.dat v7 (zlib)" <("$exitscope" report "$tmp/zlib.dat" 2>&1) || { echo "FAIL: not read as zlib"; fail=1; }
want=$(report "$tmp/zstd.dat")
grep -q "timed exits" <<<"$want" || { echo "FAIL: no report of the zstd 2x: $want"; exit 1; }
for f in zlib back; do
  if [ "$(report "$tmp/$f.dat")" != "$want" ]; then
    echo "FAIL: $f.dat's report differs from the zstd 2x's:"
    diff <(echo "$want") <(report "$tmp/$f.dat") | head -20
    fail=1
  fi
done
events() { trace-cmd report "$1" 2>/dev/null | grep -c 'kvm_exit:' || true; }
n_zstd=$(events "$tmp/zstd.dat") n_back=$(events "$tmp/back.dat")
echo "trace-cmd kvm_exit lines: zstd 2x $n_zstd, zlib written back as zstd $n_back"
if [ "$n_zstd" = 0 ] || [ "$n_zstd" != "$n_back" ]; then
  echo "FAIL: trace-cmd reads $n_back kvm_exit from the file written back, $n_zstd from the zstd 2x"
  fail=1
fi
[ "$fail" = 0 ] && echo "ok: zstd 2x, zlib 2x and zlib written back as zstd give one report"
exit "$fail"
