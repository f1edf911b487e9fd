#!/usr/bin/env bash
# boot-suite.sh OUT ITERATIONS [ARM64_EXITSCOPE] — CTest fixture (labels kvmhost-arm64 and, with an arm64
# exitscope, kvmhost-arm64-full): one boot of the arm64 KVM host runs tests/suite.sh; the checks
# (tests/check_arm64.py) read OUT afterwards. Without ARM64_EXITSCOPE only trace-cmd and the kernel's
# text record the workload (no cross build needed).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=$1 ITERATIONS=$2 BIN=${3:-}
rm -rf "$OUT"
mkdir -p "$OUT"
{ echo "ITERATIONS=$ITERATIONS"; cat "$HERE/suite.sh"; } > "$OUT.script.sh"
start=$(date +%s.%N)
"$HERE/../run.sh" --script "$OUT.script.sh" --out "$OUT" ${BIN:+--exitscope "$BIN"} \
  --cache "${KVMHOST_ARM64_CACHE:-$(dirname "$OUT")/cache}" \
  --file "$HERE/../guest/record-workload.sh" --timeout 480 --stall 150
# The peer's rendering, on the host (Debian's x86 trace-cmd: its kvm plugin misprints arm64 kvm_exit
# fields, the lines and their order are still the recording's).
trace-cmd report -i "$OUT/guest/rec/trace.dat" > "$OUT/guest/rec/trace-cmd-report.txt" \
  2> "$OUT/guest/rec/trace-cmd-report.err" || echo $? > "$OUT/guest/rec/trace-cmd-report.rc"
echo "fixture_s=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')" >> "$OUT/host-run.txt"
cat "$OUT/host-run.txt"
