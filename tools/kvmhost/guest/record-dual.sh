#!/bin/sh
# record-dual.sh DIR CMD [ARGS...] — inside the kvmhost guest: record ONE run of CMD with
# `trace-cmd record -e kvm` and `perf record -e 'kvm:*' -a` at the same time, so that DIR/trace.dat
# and DIR/perf.data hold the very same KVM events. CMD's stdout goes to DIR/workload.out.
# Both recorders must be up before CMD starts: trace-cmd turns tracing_on back to 1 once its
# per-CPU readers run, and perf has written its header once perf.data stops growing.
set -eu
DIR=$1; shift
mkdir -p "$DIR"
T=/sys/kernel/tracing
alive() { [ -r "/proc/$1/stat" ] && [ "$(cut -d' ' -f3 "/proc/$1/stat")" != Z ]; }
echo 0 > $T/tracing_on
trace-cmd record -e kvm -b 16384 -o "$DIR/trace.dat" > "$DIR/trace-cmd-record.log" 2>&1 &
TC=$!
perf record -e 'kvm:*' -a -m 8M -o "$DIR/perf.data" > "$DIR/perf-record.log" 2>&1 &
PF=$!
n=0 last=-1 stable=0
while [ $n -lt 120 ]; do
  sleep 1; n=$((n + 1))
  alive $TC && alive $PF || { echo "record-dual: a recorder died during start-up" >&2; exit 1; }
  sz=$(stat -c %s "$DIR/perf.data" 2>/dev/null || echo 0)
  if [ "$sz" -gt 0 ] && [ "$sz" = "$last" ]; then stable=$((stable + 1)); else stable=0; fi
  last=$sz
  [ "$(cat $T/tracing_on)" = 1 ] && [ "$(cat $T/events/kvm/kvm_exit/enable)" = 1 ] && [ $stable -ge 2 ] && break
done
[ $n -lt 120 ] || { echo "record-dual: recorders not up after ${n}s" >&2; exit 1; }
echo "record-dual: recorders up after ${n}s; running: $*" >&2
rc=0
"$@" > "$DIR/workload.out" || rc=$?
sleep 1
kill -INT $PF $TC
n=0
while { alive $PF || alive $TC; } && [ $n -lt 120 ]; do sleep 1; n=$((n + 1)); done
wait $PF || true
wait $TC || true
cat $T/per_cpu/cpu*/stats > "$DIR/ring-buffer-stats.txt" 2>&1 || true
echo "$*" > "$DIR/workload.cmd"
echo "record-dual: workload rc=$rc, recorders stopped ${n}s after SIGINT" >&2
exit $rc
