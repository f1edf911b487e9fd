#!/bin/sh
# record-workload.sh DIR CMD [ARGS...] — inside the arm64 kvmhost guest: ONE run of CMD (kvmexits-arm64
# or exitscope bench; its stdout goes to DIR/workload.txt, its pid to DIR/workload.pid) recorded at once by
#   - the kernel's own text: a tracefs instance "oracle" with every kvm event, its `trace` file read
#     after the run (DIR/trace.txt; the oracle of tests/check_arm64.py),
#   - `trace-cmd record -e kvm` (Debian's arm64 trace-cmd, top-level buffer: DIR/trace.dat), and
#   - `exitscope record -e 'kvm:*'` when an arm64 exitscope is on PATH (its own instance:
#     DIR/exitscope-record.dat), and beside it `exitscope record` with its default events (another
#     instance: DIR/exitscope-default.dat).
# With that exitscope, `exitscope top --json` (DIR/top.jsonl, top.rc, top.err) and `exitscope serve`
# (scraped before and after the run: DIR/metrics-before.txt, metrics-after.txt; serve.rc, serve.err)
# watch the run live from instances of their own, and `exitscope top --mode stats --json` reads KVM's
# own counters through the VMM's stats fds (DIR/top-stats.jsonl, top-stats.rc, top-stats.err).
# Before all that, `exitscope top --mode bpf` must refuse (the cross build has no BPF program; the
# program counts x86's kvm_exit layout only): DIR/top-bpf.rc, top-bpf.err; and `--mode auto` say it
# fell back to tracefs: DIR/top-auto.*.
# The oracle instance is on only while the workload runs; the recorders start before and stop after,
# so every event of the workload's thread is in all of them. Also leaves: workload.txt (the VMM's
# counts and KVM's stats), ring-buffer stats per buffer, the kvm event formats. (trace-cmd report
# runs on the host: inside, under emulation, it took about a minute for this one run.)
set -eu
DIR=$1; shift
mkdir -p "$DIR/formats"
T=/sys/kernel/tracing
phase() { echo "record-workload: $1 at uptime $(cut -d' ' -f1 /proc/uptime)" >&2; }
alive() { [ -r "/proc/$1/stat" ] && [ "$(cut -d' ' -f3 "/proc/$1/stat")" != Z ]; }
for e in $T/events/kvm/*/; do n=${e%/}; n=${n##*/}; cat "$e/format" > "$DIR/formats/$n.format"; done
cat $T/trace_clock > "$DIR/trace_clock.txt"
I=$T/instances/oracle
mkdir $I
echo 0 > $I/tracing_on
echo 32768 > $I/buffer_size_kb
echo 1 > $I/events/kvm/enable
echo 0 > $T/tracing_on
trace-cmd record -e kvm -b 16384 -o "$DIR/trace.dat" > "$DIR/trace-cmd-record.log" 2>&1 &
TC=$!
ES=
LIVE=
if command -v exitscope > /dev/null; then
  rc=0; timeout 60 exitscope top --mode bpf -n 1 > /dev/null 2> "$DIR/top-bpf.err" || rc=$?
  echo $rc > "$DIR/top-bpf.rc"
  rc=0; timeout 120 exitscope top --mode auto --json -n 1 -d 0.2 > "$DIR/top-auto.jsonl" 2> "$DIR/top-auto.err" || rc=$?
  echo $rc > "$DIR/top-auto.rc"
  exitscope record -e 'kvm:*' -b 16384 -o "$DIR/exitscope-record.dat" 2> "$DIR/exitscope-record.err" &
  ES=$!
  exitscope record -b 16384 -o "$DIR/exitscope-default.dat" 2> "$DIR/exitscope-default.err" &
  ES="$ES $!"
  ip link set lo up 2> /dev/null || ifconfig lo 127.0.0.1 up
  exitscope top --json -d 0.5 > "$DIR/top.jsonl" 2> "$DIR/top.err" &
  LIVE=$!
  exitscope serve --listen 127.0.0.1:9464 --interval 0.2 2> "$DIR/serve.err" &
  LIVE="$LIVE $!"
  exitscope top --mode stats --json -d 0.1 > "$DIR/top-stats.jsonl" 2> "$DIR/top-stats.err" &
  LIVE="$LIVE $!"
fi
ours_up() {  # every exitscope instance tracing: two recorders, top, serve
  up=0
  for i in $T/instances/exitscope-*; do
    [ -d "$i" ] && [ "$(cat "$i/tracing_on")" = 1 ] && [ "$(cat "$i/events/kvm/kvm_exit/enable")" = 1 ] && up=$((up + 1))
  done
  [ $up -ge 4 ]
}
scrape() {  # serve's /metrics into $1 (it may still be binding its port)
  k=0
  until wget -q -O "$1" http://127.0.0.1:9464/metrics || [ $k -ge 50 ]; do sleep 0.2; k=$((k + 1)); done
}
all_alive() { for p in "$@"; do alive "$p" || return 1; done; }
any_alive() { for p in "$@"; do alive "$p" && return 0; done; return 1; }
n=0
while [ $n -lt 120 ]; do
  sleep 1; n=$((n + 1))
  alive $TC || { echo "record-workload: trace-cmd died during start-up" >&2; cat "$DIR/trace-cmd-record.log" >&2; exit 1; }
  [ -z "$ES" ] || all_alive $ES $LIVE || {
    echo "record-workload: exitscope record, top or serve died" >&2
    cat "$DIR"/exitscope-*.err "$DIR/top.err" "$DIR/serve.err" >&2; exit 1; }
  [ "$(cat $T/tracing_on)" = 1 ] && [ "$(cat $T/events/kvm/kvm_exit/enable)" = 1 ] || continue
  [ -z "$ES" ] || ours_up || continue
  break
done
[ $n -lt 120 ] || { echo "record-workload: recorders not up after ${n}s" >&2; exit 1; }
echo "record-workload: recorders up after ${n}s (exitscope record: ${ES:-not on PATH})" >&2
[ -z "$LIVE" ] || scrape "$DIR/metrics-before.txt"
echo 1 > $I/tracing_on
rc=0
t0=$(cut -d' ' -f1 /proc/uptime)
"$@" > "$DIR/workload.txt" 2> "$DIR/workload.err" &
W=$!
echo "$W" > "$DIR/workload.pid"
wait $W || rc=$?
t1=$(cut -d' ' -f1 /proc/uptime)
echo 0 > $I/tracing_on
echo "workload_s=$(echo "$t1 $t0" | awk '{ printf "%.2f", $1 - $2 }') rc=$rc" > "$DIR/workload.status"
# Long enough for top to print the interval holding the last exits (its -d is 0.5 s) and serve
# to read them (every 0.2 s).
sleep 1.5
[ -z "$LIVE" ] || scrape "$DIR/metrics-after.txt"
phase "stopping the recorders"
kill -INT $TC ${ES:+$ES} ${LIVE:+$LIVE}
n=0
while { alive $TC || { [ -n "$ES" ] && any_alive $ES $LIVE; }; } && [ $n -lt 120 ]; do sleep 1; n=$((n + 1)); done
wait $TC || true
if [ -n "$ES" ]; then
  set -- $ES $LIVE
  es_rc=0; wait "$1" || es_rc=$?; echo $es_rc > "$DIR/exitscope-record.rc"
  es_rc=0; wait "$2" || es_rc=$?; echo $es_rc > "$DIR/exitscope-default.rc"
  es_rc=0; wait "$3" || es_rc=$?; echo $es_rc > "$DIR/top.rc"
  es_rc=0; wait "$4" || es_rc=$?; echo $es_rc > "$DIR/serve.rc"
  es_rc=0; wait "$5" || es_rc=$?; echo $es_rc > "$DIR/top-stats.rc"
fi
phase "recorders stopped"
cat $I/trace > "$DIR/trace.txt"
phase "text written"
cat $I/per_cpu/cpu*/stats > "$DIR/oracle-ring-buffer-stats.txt"
cat $T/per_cpu/cpu*/stats > "$DIR/trace-cmd-ring-buffer-stats.txt"
echo 0 > $I/events/kvm/enable
rmdir $I
echo 1 > $T/tracing_on
cat "$DIR/workload.status" "$DIR/workload.err"
echo "record-workload: workload rc=$rc, $(grep -c ' kvm_exit: ' "$DIR/trace.txt") kvm_exit in the text" >&2
exit $rc
