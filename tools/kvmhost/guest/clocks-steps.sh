#!/bin/sh
# clocks-steps.sh DIR — inside the kvmhost guest: one bench workload recorded in several clocks, for
# tests/check_clocks.py (issue 12: TSC cycles are labelled as cycles, and --tsc-khz converts them).
#   A. ONE run recorded at once by `trace-cmd record -C x86-tsc` (top buffer: TSC cycles, no TSC2NSEC
#      option) and by `exitscope record` (its own instance, default clock local: ns):
#      tsc.dat + local.dat hold the very same exits in two clocks.
#   B. a second run under trace-cmd's default clock (default.dat), as a user would compare them.
#   C. a third under `-C tsc2nsec` (tsc2nsec.dat: trace-cmd's own TSC->ns conversion, from perf).
# The guest kernel's TSC rate, as its boot log states it, goes to tsc-khz.txt (the value a user
# passes to --tsc-khz); dmesg-tsc.txt keeps the lines it came from.
set -eu
DIR=$1
mkdir -p "$DIR"
T=/sys/kernel/tracing
W="exitscope bench --test cpuid --test vmcall --test hlt --iterations 400 --json"
alive() { [ -r "/proc/$1/stat" ] && [ "$(cut -d' ' -f3 "/proc/$1/stat")" != Z ]; }

dmesg | grep -i 'tsc' > "$DIR/dmesg-tsc.txt" || true
# arch/x86/kernel/tsc.c: "Refined TSC clocksource calibration: %lu.%03lu MHz" (the final tsc_khz)
# replaces the boot-time "Detected %lu.%03lu MHz processor".
mhz=$(sed -n 's/.*Refined TSC clocksource calibration: \([0-9.]*\) MHz.*/\1/p' "$DIR/dmesg-tsc.txt" | tail -n 1)
[ -n "$mhz" ] || mhz=$(sed -n 's/.*tsc: Detected \([0-9.]*\) MHz.*/\1/p' "$DIR/dmesg-tsc.txt" | tail -n 1)
echo "$mhz" | awk '{ printf "%d\n", $1 * 1000 + 0.5 }' > "$DIR/tsc-khz.txt"
cat /sys/devices/system/clocksource/clocksource0/current_clocksource > "$DIR/clocksource.txt" 2>/dev/null || true

# A. Both recorders must trace before the workload starts: trace-cmd turns tracing_on back to 1 once
# its readers run; our instance traces once its kvm_exit is enabled and its tracing_on is 1.
echo 0 > $T/tracing_on
trace-cmd record -e kvm -C x86-tsc -b 16384 -o "$DIR/tsc.dat" > "$DIR/tsc-record.log" 2>&1 &
TC=$!
exitscope record -o "$DIR/local.dat" -b 16384 2> "$DIR/local-record.err" &
REC=$!
ours_up() {
  for i in $T/instances/exitscope-*; do
    [ -d "$i" ] && [ "$(cat "$i/tracing_on")" = 1 ] && [ "$(cat "$i/events/kvm/kvm_exit/enable")" = 1 ] && return 0
  done
  return 1
}
n=0
until [ "$(cat $T/tracing_on)" = 1 ] && [ "$(cat $T/events/kvm/kvm_exit/enable)" = 1 ] && ours_up; do
  alive $TC && alive $REC || { echo "clocks-steps: a recorder died during start-up" >&2; exit 1; }
  [ $n -lt 1200 ] || { echo "clocks-steps: recorders not up after 120 s" >&2; exit 1; }
  sleep 0.1; n=$((n + 1))
done
echo "clocks-steps: A: recorders up after $((n / 10)).$((n % 10)) s (clock $(cat $T/trace_clock))" >&2
$W > "$DIR/bench-a.json"
sleep 1
kill -INT $TC $REC
rc=0; wait $REC || rc=$?; echo $rc > "$DIR/local-record.rc"
rc=0; wait $TC || rc=$?; echo $rc > "$DIR/tsc-record.rc"

# B and C: one run each; trace-cmd starts the workload itself once it traces.
rc=0; trace-cmd record -e kvm -b 16384 -o "$DIR/default.dat" sh -c "$W > '$DIR/bench-b.json'" \
  > "$DIR/default-record.log" 2>&1 || rc=$?
echo $rc > "$DIR/default-record.rc"
rc=0; trace-cmd record -e kvm -C tsc2nsec -b 16384 -o "$DIR/tsc2nsec.dat" sh -c "$W > '$DIR/bench-c.json'" \
  > "$DIR/tsc2nsec-record.log" 2>&1 || rc=$?
echo $rc > "$DIR/tsc2nsec-record.rc"
# trace-cmd leaves the clock it set; put the default back for the steps after this one.
echo local > $T/trace_clock
echo "clocks-steps: done (tsc_khz $(cat "$DIR/tsc-khz.txt"))" >&2
