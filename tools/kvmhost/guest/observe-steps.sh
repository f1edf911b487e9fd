#!/bin/sh
# observe-steps.sh DIR — inside the kvmhost guest (issue 16): the three ways `top` watches exits at
# once during ONE `exitscope bench --test cpuid` run (bpf: in-kernel counting; tracefs: every
# event; stats: KVM's debugfs counters), then `bench --observe` over every observer. Leaves in DIR
# what tests/check_observe.py reads:
#   bench.json bench.pid top-bpf.jsonl top-tracefs.jsonl top-stats.jsonl top-*.rc top-*.err
#   top-bpf-nobpf.rc top-bpf-nobpf.err   (an explicit --mode bpf that cannot load: 69)
#   observe.txt observe.rc observe.err observe.json
#   serve-{bpf,stats,tracefs}-{before,after}.txt serve-*.rc serve-*.err   (serve --mode, scraped
#   before and after the same bench run), serve-bpf-nobpf.{rc,err}, serve-auto-nobpf.{rc,err}
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

ip link set lo up 2> /dev/null || ifconfig lo 127.0.0.1 up
# serve in each mode beside the tops, scraped (busybox wget) before and after the same bench run.
SERVE_BPF=127.0.0.1:9471 SERVE_STATS=127.0.0.1:9472 SERVE_TRACEFS=127.0.0.1:9473
echo "observe-steps: starting serve --mode bpf, stats, tracefs"
exitscope serve --mode bpf --interval 0.2 --listen $SERVE_BPF 2> "$DIR/serve-bpf.err" &
SBPF=$!
exitscope serve --mode stats --interval 0.1 --listen $SERVE_STATS 2> "$DIR/serve-stats.err" &
SSTATS=$!
exitscope serve --mode tracefs --interval 0.2 --listen $SERVE_TRACEFS 2> "$DIR/serve-tracefs.err" &
STRACEFS=$!
scrape() {  # MODE ADDR WHEN
  timeout 20 wget -q -O "$DIR/serve-$1-$3.txt" "http://$2/metrics"
}
n=0
until scrape bpf $SERVE_BPF before && scrape stats $SERVE_STATS before && scrape tracefs $SERVE_TRACEFS before &&
      grep -q '^exitscope_observer_info{mode="tracefs"}' "$DIR/serve-tracefs-before.txt" &&
      [ "$(tracing_instances)" -ge 1 ]; do
  n=$((n + 1))
  [ $n -lt 300 ] || { echo "observe-steps: serve not up after 60 s" >&2; break; }
  sleep 0.2
done
echo "observe-steps: serves up after $((n / 5)) s"

echo "observe-steps: starting top --mode bpf, tracefs, stats"
exitscope top --mode bpf --json -d 0.5 > "$DIR/top-bpf.jsonl" 2> "$DIR/top-bpf.err" &
BPF=$!
exitscope top --mode tracefs --json -d 0.5 > "$DIR/top-tracefs.jsonl" 2> "$DIR/top-tracefs.err" &
TRACEFS=$!
exitscope top --mode stats --json -d 0.1 > "$DIR/top-stats.jsonl" 2> "$DIR/top-stats.err" &
STATS=$!
# Up when bpf and stats printed an interval (they print from their first refresh) and the tracefs
# instances (serve's and top's) trace (bounded: 60 s).
n=0
while { [ "$(lines "$DIR/top-bpf.jsonl")" -lt 1 ] || [ "$(lines "$DIR/top-stats.jsonl")" -lt 1 ] ||
        [ "$(tracing_instances)" -lt 2 ]; } && [ $n -lt 600 ]; do
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
# Two collections (0.2 s apart) after the bench ended hold all its exits.
scrape bpf $SERVE_BPF after || true
scrape stats $SERVE_STATS after || true
scrape tracefs $SERVE_TRACEFS after || true
kill -INT $BPF $TRACEFS $STATS $SBPF $SSTATS $STRACEFS
# A top that does not stop on SIGINT within 30 s is a failure the checks see (rc 137), not a hang.
( sleep 30; kill -KILL $BPF $TRACEFS $STATS $SBPF $SSTATS $STRACEFS 2> /dev/null ) &
GUARD=$!
rc=0; wait $BPF || rc=$?; echo $rc > "$DIR/top-bpf.rc"
rc=0; wait $TRACEFS || rc=$?; echo $rc > "$DIR/top-tracefs.rc"
rc=0; wait $STATS || rc=$?; echo $rc > "$DIR/top-stats.rc"
for m in bpf stats tracefs; do
  eval "p=\$S$(echo $m | tr a-z A-Z)"
  rc=0; wait "$p" || rc=$?; echo $rc > "$DIR/serve-$m.rc"
done
kill $GUARD 2> /dev/null || true
echo "observe-steps: tops stopped: bpf $(cat "$DIR/top-bpf.rc") tracefs $(cat "$DIR/top-tracefs.rc") stats $(cat "$DIR/top-stats.rc")"

# An explicit --mode bpf that cannot work (no tracefs there) is an error, not a silent fallback.
rc=0; timeout 30 exitscope top --mode bpf --tracefs /proc -n 1 > /dev/null 2> "$DIR/top-bpf-nobpf.err" || rc=$?
echo $rc > "$DIR/top-bpf-nobpf.rc"
rc=0; timeout 30 exitscope serve --mode bpf --tracefs /proc --listen 127.0.0.1:9474 2> "$DIR/serve-bpf-nobpf.err" || rc=$?
echo $rc > "$DIR/serve-bpf-nobpf.rc"
# auto falls back to tracefs with the reason; tracefs is not there either, so that fails too (69).
rc=0; timeout 30 exitscope serve --mode auto --tracefs /proc --listen 127.0.0.1:9474 2> "$DIR/serve-auto-nobpf.err" || rc=$?
echo $rc > "$DIR/serve-auto-nobpf.rc"

echo "observe-steps: tops done"

# What each observer adds per exit, on this (emulated) host: the JSON repeated, the table once. perf
# is left out here: `perf record -a` beside the nested guest wedged this TCG guest's kernel (soft
# lockups, 2026-12-01) and its start and stop take ~20 s here.
# top and record are exitscope's own commands (item 4 of issue 16: our own cost), started as a user
# starts them.
# The console hears from this step while it runs (run.sh stops a guest silent for --stall s).
( while sleep 30; do echo "observe-steps: bench --observe still running"; done ) &
TICK=$!
rc=0
timeout 300 exitscope bench --test cpuid --iterations 1000 \
  --observe none,stats,bpf,tracefs-minimal,tracefs,top,record --repeat 3 --json > "$DIR/observe.json" \
  2> "$DIR/observe.err" || rc=$?
echo $rc > "$DIR/observe.rc"
echo "observe-steps: bench --observe json rc=$rc"
rc=0
timeout 120 exitscope bench --test cpuid --iterations 1000 --observe none,stats,bpf,tracefs-minimal,tracefs \
  --repeat 1 > "$DIR/observe.txt" 2>> "$DIR/observe.err" || rc=$?
echo $rc >> "$DIR/observe.rc"
kill $TICK 2> /dev/null || true
echo "observe-steps: done"
