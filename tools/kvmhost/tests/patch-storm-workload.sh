#!/bin/sh
# patch-storm-workload.sh — inside the kvmhost guest, for tools/kvmhost/wedge-study.sh --workload:
# x86 live text patching while the code being patched runs. One vCPU flips every kvm tracepoint on
# and off (each flip is a static-key change: int3 written, sync IPIs, the rest written) while the
# other runs exitscope bench's nested VM, whose exits pass those very tracepoint sites. Both CI stalls
# with symbols (2026-12-01 in bench --observe, 2026-12-02 in the advise boot's trace-cmd record) had a
# vCPU looping in exc_int3 right after do_int3 returned: an int3 already patched away in memory but
# still executed. STORM_SECONDS (default 60) of guest time.
set -eu
T=/sys/kernel/tracing
[ -e "$T/events/kvm/enable" ] || T=/sys/kernel/debug/tracing
now() { cut -d. -f1 /proc/uptime; }
end=$(( $(now) + ${STORM_SECONDS:-60} ))
(
  while [ "$(now)" -lt "$end" ]; do
    exitscope bench --test hlt --test outl_to_user --test cpuid --iterations 2000 --json > /dev/null
  done
) &
BENCH=$!
flips=0
while [ "$(now)" -lt "$end" ]; do
  echo 1 > "$T/events/kvm/enable"
  echo 0 > "$T/events/kvm/enable"
  flips=$((flips + 1))
done
wait $BENCH
echo "patch-storm: $flips on/off flips of events/kvm in ${STORM_SECONDS:-60} s"
