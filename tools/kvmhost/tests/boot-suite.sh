#!/usr/bin/env bash
# boot-suite.sh OUT EXITSCOPE — CTest fixture (label kvmhost): one boot runs tests/suite.sh, then the
# recording is rendered with the peers on the host. The kvmhost.* check tests read OUT afterwards.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=$1 BIN=$2
rm -rf "$OUT"
"$HERE/../run.sh" --script "$HERE/suite.sh" --out "$OUT" --exitscope "$BIN" \
  --file "$HERE/../guest/record-dual.sh" --timeout 420 --stall 150
"$HERE/../render-recording.sh" "$OUT/guest/rec"
