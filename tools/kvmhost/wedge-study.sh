#!/usr/bin/env bash
# wedge-study.sh — how often the emulated KVM host wedges, per boot configuration (issue 19).
#
#   tools/kvmhost/wedge-study.sh --out DIR --boots N [--exitscope BIN] [--together]
#                                [--workload FILE] --config NAME='run.sh options' [--config ...]
#
# Boots each configuration N times (run.sh --retries 0: each boot is one sample) with
# tests/wedge-workload.sh, a short cut of the suite boot's load, or --workload FILE (for instance
# tests/patch-storm-workload.sh, live text patching while the patched code runs). The
# configurations take turns, so the machine's own load falls on all of them alike; --together boots
# one of each at the same time (as CI's ctest -j2 runs a boot beside other work). One line per boot in DIR/boots.tsv:
#   round config result(ok|wedged|stalled|failed) seconds where
# and the tally per configuration in DIR/summary.txt (also printed). A wedged or stalled boot's
# console and vCPU registers (with the functions they were in) stay in DIR/NAME-ROUND/.
# Example: --config mttcg='--accel tcg' --config single='--accel tcg,thread=single'
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
OUT= BOOTS= BIN=$HERE/../../build/exitscope TOGETHER=0 WORKLOAD=$HERE/tests/wedge-workload.sh NAMES=() OPTS=()
while [ $# -gt 0 ]; do
  case $1 in
    --out) OUT=$2; shift 2 ;;
    --boots) BOOTS=$2; shift 2 ;;
    --exitscope) BIN=$2; shift 2 ;;
    --together) TOGETHER=1; shift ;;
    --workload) WORKLOAD=$(cd "$(dirname "$2")" && pwd)/$(basename "$2"); shift 2 ;;
    --config) NAMES+=("${2%%=*}"); OPTS+=("${2#*=}"); shift 2 ;;
    -h|--help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "wedge-study: error: unknown argument $1" >&2; echo "hint: --help" >&2; exit 2 ;;
  esac
done
[ -n "$OUT" ] && [ -n "$BOOTS" ] && [ ${#NAMES[@]} -gt 0 ] ||
  { echo "wedge-study: error: --out, --boots and at least one --config are needed" >&2; echo "hint: --help" >&2; exit 2; }
mkdir -p "$OUT"
TSV=$OUT/boots.tsv
[ -s "$TSV" ] || printf 'round\tconfig\tresult\tseconds\twhere\n' > "$TSV"
one() {  # ROUND INDEX
  local name=${NAMES[$2]} dir=$OUT/${NAMES[$2]}-$1 t0 rc result where
  t0=$(date +%s)
  # shellcheck disable=SC2086  # the configuration's options are words on purpose
  KVMHOST_SKIP_DEPS=1 "$HERE/run.sh" --script "$WORKLOAD" --file "$HERE/guest/record-dual.sh" \
    --out "$dir" --exitscope "$BIN" --timeout 400 --stall 120 --retries 0 ${OPTS[$2]} > "$dir.stdout" 2> "$dir.stderr"
  rc=$?
  where=$(grep -m1 -o 'guest \(wedged\|stalled\).*' "$dir.stderr" | tr '\t' ' ' || true)
  if [ $rc = 0 ]; then  # the workload's own last words (patch-storm: how many flips) stay in the tally
    result=ok where=$(grep -m1 -o '\(patch-storm\|wedge-workload\): .*' "$dir/console.log" | tr '\t' ' ' || true)
    rm -rf "$dir" "$dir.stdout" "$dir.stderr"
  elif grep -q 'guest wedged' "$dir.stderr"; then result=wedged
  elif grep -q 'guest stalled' "$dir.stderr"; then result=stalled
  else result=failed; where=$(grep -m1 'kvmhost: error' "$dir.stderr" | tr '\t' ' ' || true)
  fi
  printf '%s\t%s\t%s\t%s\t%s\n' "$1" "$name" "$result" "$(( $(date +%s) - t0 ))" "$where" >> "$TSV"
  echo "wedge-study: round $1 $name: $result" >&2
}
for round in $(seq "$BOOTS"); do
  if [ $TOGETHER = 1 ]; then
    for i in "${!NAMES[@]}"; do one "$round" "$i" & done
    wait
  else
    for i in "${!NAMES[@]}"; do one "$round" "$i"; done
  fi
done
awk -F'\t' 'NR > 1 { n[$2]++; r[$2, $3]++ }
  END { for (c in n) printf "%s: %d boots, %d ok, %d wedged, %d stalled, %d failed\n", c, n[c],
        r[c, "ok"], r[c, "wedged"], r[c, "stalled"], r[c, "failed"] }' "$TSV" | sort | tee "$OUT/summary.txt"
