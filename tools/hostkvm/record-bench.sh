#!/usr/bin/env bash
# record-bench.sh OUT EXITSCOPE [ITERATIONS] — on THIS machine's own /dev/kvm (not the QEMU harness):
# `exitscope record` while one `exitscope bench --iterations N --json` runs, then `trace-cmd report`
# and `exitscope report` of the file, the tracefs state before and after, and a README fragment
# naming kernel, CPU, KVM module and command lines. Used to make samples/bench-pvm and by the ctest
# label hostkvm (tools/hostkvm/check_host.py reads OUT). The state files leave out other instances:
# tests running alongside may own some; ours must be gone afterwards (instance-left.txt says).
# Exit 77 (ctest's SKIP_RETURN_CODE, cmake/hostkvm.cmake) with "hostkvm: not run: <why>" on stdout
# when this machine cannot do it (no /dev/kvm, no tracefs, not root): the QEMU harness (label
# kvmhost) is what asserts the live done-means in CI; scripts/check_skips.py fails CI on the skip
# only where the machine could have run it.
set -euo pipefail
OUT=$1 BIN=$2 N=${3:-50}
T=/sys/kernel/tracing
skip() { echo "hostkvm: not run: $1"; mkdir -p "$OUT"; echo "$1" > "$OUT/skipped.txt"; exit 77; }
[ -c /dev/kvm ] || skip "no /dev/kvm on this machine"
[ -w /dev/kvm ] || skip "/dev/kvm is not writable by $(id -un)"
[ -d $T/instances ] || skip "tracefs is not mounted at $T"
[ -d $T/events/kvm ] || skip "no kvm trace events in $T/events"
[ "$(id -u)" = 0 ] || skip "live tracing needs root"
rm -rf "$OUT"; mkdir -p "$OUT"
snapshot() {
  echo "tracing_on $(cat $T/tracing_on)"
  echo "set_event: $(tr '\n' ' ' < $T/set_event)"
  for f in $T/events/kvm/*/enable; do echo "${f#$T/} $(cat "$f")"; done
}
snapshot > "$OUT/state-before.txt"
"$BIN" record -o "$OUT/trace.dat" 2> "$OUT/record.err" &
REC=$!
# Recording once our instance has its events on and tracing_on back at 1 (bounded wait).
for _ in $(seq 300); do
  ready=0
  for i in $T/instances/exitscope-$REC; do
    [ -d "$i" ] && [ "$(cat "$i/tracing_on")" = 1 ] && [ "$(cat "$i/events/kvm/kvm_exit/enable")" = 1 ] && ready=1
  done
  [ $ready = 1 ] && break
  kill -0 $REC 2> /dev/null || { cat "$OUT/record.err" >&2; exit 1; }
  sleep 0.1
done
[ $ready = 1 ] || { echo "hostkvm: recorder not up after 30 s" >&2; kill -INT $REC; exit 1; }
BENCH_CMD="exitscope bench --iterations $N --json"
"$BIN" bench --iterations "$N" --json > "$OUT/bench.json"
kill -INT $REC
rc=0; wait $REC || rc=$?
echo $rc > "$OUT/record.rc"
snapshot > "$OUT/state-after.txt"
if [ -e "$T/instances/exitscope-$REC" ]; then echo "exitscope-$REC" > "$OUT/instance-left.txt"; fi
trace-cmd report -i "$OUT/trace.dat" > "$OUT/trace-cmd-report.txt" 2> "$OUT/trace-cmd-report.err"
"$BIN" report "$OUT/trace.dat" > "$OUT/exitscope-report.txt"
{
  echo "kernel: $(uname -r) ($(uname -v))"
  echo "cpu: $(grep -m1 '^model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')"
  echo "hardware virtualization flags: $(grep -m1 '^flags' /proc/cpuinfo | grep -ow 'vmx\|svm' || echo none)"
  echo "kvm modules: $(ls /sys/module | grep '^kvm' | tr '\n' ' ')"
  echo "record: exitscope record -o trace.dat   (default events; SIGINT after the bench)"
  echo "bench: $BENCH_CMD > bench.json"
  echo "rendering: trace-cmd report -i trace.dat > trace-cmd-report.txt   ($(trace-cmd --version 2>/dev/null | grep -m1 version | xargs))"
  echo "exitscope: $("$BIN" --version)"
} > "$OUT/made-with.txt"
echo "hostkvm: recorded $(grep -o '[0-9]* events' "$OUT/record.err" | head -1) in $OUT"
