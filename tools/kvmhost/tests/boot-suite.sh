#!/usr/bin/env bash
# boot-suite.sh OUT EXITSCOPE — CTest fixture (label kvmhost): one boot runs tests/suite.sh, then the
# recording is rendered with the peers on the host. The kvmhost.* check tests read OUT afterwards.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=$1 BIN=$2
rm -rf "$OUT"
"$HERE/../run.sh" --script "$HERE/suite.sh" --out "$OUT" --exitscope "$BIN" \
  --file "$HERE/../guest/record-dual.sh" --file "$HERE/../guest/live-steps.sh" \
  --file "$HERE/../guest/clocks-steps.sh" --file "$HERE/../guest/diff-steps.sh" \
  --file "$HERE/../guest/observe-steps.sh" --file "$HERE/../guest/prom-steps.sh" \
  --file "$(command -v prometheus)" --timeout 900 --stall 150 --retries 2
"$HERE/../render-recording.sh" "$OUT/guest/rec"
# The peer reads what `exitscope record` wrote (checked by kvmhost.live_trace_cmd_reads_record).
if [ -s "$OUT/guest/live/trace.dat" ]; then
  trace-cmd report -i "$OUT/guest/live/trace.dat" > "$OUT/guest/live/trace-cmd-report.txt" \
    2> "$OUT/guest/live/trace-cmd-report.err" || echo $? > "$OUT/guest/live/trace-cmd-report.rc"
fi
