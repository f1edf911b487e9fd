#!/bin/sh
# observe-steps.sh DIR — inside the kvmhost guest (issue 16): the three ways `top` watches exits at
# once during ONE `exitscope bench --test cpuid` run (bpf: in-kernel counting; tracefs: every
# event; stats: KVM's debugfs counters), then `bench --observe` over every observer. Leaves in DIR
# what tests/check_observe.py reads:
#   bench.json bench.pid top-bpf.jsonl top-tracefs.jsonl top-stats.jsonl top-*.rc top-*.err
#   top-bpf-nobpf.rc top-bpf-nobpf.err   (an explicit --mode bpf that cannot load: 69)
#   observe.txt observe.rc observe.err observe.json
set -eu
DIR=$1
# 10,000 CPUIDs (~1 s under TCG): KVM's debugfs counters of the bench VM go with the VM, so the
# stats top (-d 0.1) must read them several times while it runs; 2,000 ran between two reads once.
N=${OBSERVE_ITERATIONS:-10000}
mkdir -p "$DIR"
T=/sys/kernel/tracing
lines() { [ -f "$1" ] && wc -l < "$1" || echo 0; }
tracing_instances() {
  k=0
  for i in $T/instances/exitscope-*; do
    [ -d "$i" ] && [ "$(cat "$i/tracing_on")" = 1 ] && [ "$(cat "$i/events/kvm/kvm_exit/enable")" = 1 ] &&
      k=$((k + 1))
  done
  echo $k
}

echo "observe-steps: starting top --mode bpf, tracefs, stats"
exitscope top --mode bpf --json -d 0.5 > "$DIR/top-bpf.jsonl" 2> "$DIR/top-bpf.err" &
BPF=$!
exitscope top --mode tracefs --json -d 0.5 > "$DIR/top-tracefs.jsonl" 2> "$DIR/top-tracefs.err" &
TRACEFS=$!
exitscope top --mode stats --json -d 0.1 > "$DIR/top-stats.jsonl" 2> "$DIR/top-stats.err" &
STATS=$!
# Up when bpf and stats printed an interval (they print from their first refresh) and the tracefs
# instance traces (bounded: 60 s).
n=0
while { [ "$(lines "$DIR/top-bpf.jsonl")" -lt 1 ] || [ "$(lines "$DIR/top-stats.jsonl")" -lt 1 ] ||
        [ "$(tracing_instances)" -lt 1 ]; } && [ $n -lt 600 ]; do
  sleep 0.1; n=$((n + 1))
done
# Progress goes to the console (stdout): run.sh stops a guest that prints nothing for --stall seconds.
echo "observe-steps: observers up after $((n / 10)).$((n % 10)) s"
echo "observe-steps: bench --test cpuid --iterations $N"
timeout 120 exitscope bench --test cpuid --iterations "$N" --json > "$DIR/bench.json" &
BENCH=$!
echo $BENCH > "$DIR/bench.pid"
wait $BENCH
sleep 1.5
kill -INT $BPF $TRACEFS $STATS
# A top that does not stop on SIGINT within 30 s is a failure the checks see (rc 137), not a hang.
( sleep 30; kill -KILL $BPF $TRACEFS $STATS 2> /dev/null ) &
GUARD=$!
rc=0; wait $BPF || rc=$?; echo $rc > "$DIR/top-bpf.rc"
rc=0; wait $TRACEFS || rc=$?; echo $rc > "$DIR/top-tracefs.rc"
rc=0; wait $STATS || rc=$?; echo $rc > "$DIR/top-stats.rc"
kill $GUARD 2> /dev/null || true
echo "observe-steps: tops stopped: bpf $(cat "$DIR/top-bpf.rc") tracefs $(cat "$DIR/top-tracefs.rc") stats $(cat "$DIR/top-stats.rc")"

# An explicit --mode bpf that cannot work (no tracefs there) is an error, not a silent fallback.
rc=0; timeout 30 exitscope top --mode bpf --tracefs /proc -n 1 > /dev/null 2> "$DIR/top-bpf-nobpf.err" || rc=$?
echo $rc > "$DIR/top-bpf-nobpf.rc"

echo "observe-steps: tops done"

# What each observer adds per exit, on this (emulated) host: the JSON repeated, the table once. perf
# is left out here: `perf record -a` beside the nested guest wedged this TCG guest's kernel (soft
# lockups, 2026-12-01) and its start and stop take ~20 s here.
rc=0
timeout 150 exitscope bench --test cpuid --iterations 1000 --observe none,stats,bpf,tracefs-minimal,tracefs \
  --repeat 3 --json > "$DIR/observe.json" 2> "$DIR/observe.err" || rc=$?
echo $rc > "$DIR/observe.rc"
echo "observe-steps: bench --observe json rc=$rc"
rc=0
timeout 120 exitscope bench --test cpuid --iterations 1000 --observe none,stats,bpf,tracefs-minimal,tracefs \
  --repeat 1 > "$DIR/observe.txt" 2>> "$DIR/observe.err" || rc=$?
echo $rc >> "$DIR/observe.rc"
echo "observe-steps: done"
