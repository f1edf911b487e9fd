#!/bin/sh
# live-steps.sh DIR — inside the kvmhost guest: `exitscope record` and `exitscope top --json` on a live
# KVM host while ONE `exitscope bench --iterations 25` run goes on, then the clean-up paths (SIGINT,
# SIGKILL + rerun). Leaves in DIR what tests/check_suite.py's live_* checks read:
#   trace.dat bench.json bench.pid record.rc record.err top.jsonl top.rc top.err
#   state-before.txt state-after-sigint.txt state-after-sigkill.txt state-after-rerun.txt
#   killed.pid rerun.rc rerun.err serve.rc serve.err metrics-before.txt metrics-after.txt
# The top-level tracing state is set to something no default has (tracing_on 0, kvm_pio enabled) so
# that "left as before" cannot pass by accident; it is put back to the defaults at the end.
set -eu
DIR=$1
mkdir -p "$DIR"
T=/sys/kernel/tracing
# The tracing state a user of the top-level buffer (kvm_stat, trace-cmd, perf) relies on, plus our
# instances: every file that a leaky recorder could leave changed.
snapshot() {
  echo "tracing_on $(cat $T/tracing_on)"
  echo "set_event: $(tr '\n' ' ' < $T/set_event)"
  for f in $T/events/kvm/*/enable; do echo "${f#$T/} $(cat "$f")"; done
  echo "instances: $(ls $T/instances | tr '\n' ' ')"
}
# Instances of ours that trace: a new instance starts with tracing_on 1 but no event, and the
# recorders turn tracing on only after enabling the events and writing the file header (seconds
# under TCG), so both together mean "recording from now on".
ours() {
  k=0
  for i in $T/instances/exitscope-*; do
    [ -d "$i" ] && [ "$(cat "$i/tracing_on")" = 1 ] && [ "$(cat "$i/events/kvm/kvm_exit/enable")" = 1 ] &&
      k=$((k + 1))
  done
  echo $k
}
# Waits (bounded) until N instances of ours trace.
wait_instances() {
  n=0
  while [ "$(ours)" -lt "$1" ] && [ $n -lt 600 ]; do sleep 0.1; n=$((n + 1)); done
  [ "$(ours)" -ge "$1" ] || { echo "live-steps: only $(ours) of $1 recorders up after 60 s" >&2; exit 1; }
  echo "live-steps: $1 recorder(s) up after $((n / 10)).$((n % 10)) s" >&2
}
alive() { [ -r "/proc/$1/stat" ] && [ "$(cut -d' ' -f3 "/proc/$1/stat")" != Z ]; }

echo 0 > $T/tracing_on
echo kvm:kvm_pio > $T/set_event
snapshot > "$DIR/state-before.txt"

# 1. record + top + serve during one bench run, stopped by SIGINT; serve scraped before and after.
ip link set lo up 2> /dev/null || ifconfig lo 127.0.0.1 up
exitscope record -o "$DIR/trace.dat" 2> "$DIR/record.err" &
REC=$!
exitscope top --json -d 0.5 > "$DIR/top.jsonl" 2> "$DIR/top.err" &
TOP=$!
exitscope serve --listen 127.0.0.1:9464 --interval 0.2 2> "$DIR/serve.err" &
SERVE=$!
wait_instances 3
scrape() {
  n=0
  until wget -q -O "$1" http://127.0.0.1:9464/metrics || [ $n -ge 50 ]; do sleep 0.1; n=$((n + 1)); done
}
scrape "$DIR/metrics-before.txt"
exitscope bench --iterations 25 --json > "$DIR/bench.json" &
BENCH=$!
echo $BENCH > "$DIR/bench.pid"
wait $BENCH
# Let top print the interval holding the bench's last exits (its -d is 0.5 s), serve read them.
sleep 1.5
scrape "$DIR/metrics-after.txt"
kill -INT $REC $TOP $SERVE
rc=0; wait $REC || rc=$?; echo $rc > "$DIR/record.rc"
rc=0; wait $TOP || rc=$?; echo $rc > "$DIR/top.rc"
rc=0; wait $SERVE || rc=$?; echo $rc > "$DIR/serve.rc"
snapshot > "$DIR/state-after-sigint.txt"

# 2. SIGKILL leaves the instance behind (nothing can clean up); the next run must remove it.
exitscope record -o "$DIR/killed.dat" 2> /dev/null &
K=$!
echo $K > "$DIR/killed.pid"
wait_instances 1
kill -KILL $K
wait $K 2> /dev/null || true
while alive $K; do sleep 0.1; done
snapshot > "$DIR/state-after-sigkill.txt"
rc=0; exitscope record -o "$DIR/rerun.dat" --duration 1 2> "$DIR/rerun.err" || rc=$?
echo $rc > "$DIR/rerun.rc"
snapshot > "$DIR/state-after-rerun.txt"
rm -f "$DIR/killed.dat" "$DIR/rerun.dat"

echo > $T/set_event
echo 1 > $T/tracing_on
echo "live-steps: done" >&2
