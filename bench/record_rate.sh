#!/usr/bin/env bash
# record_rate.sh [EXITSCOPE] [SECONDS] — the event rate `exitscope record` keeps, and the CPU it
# uses, with real kvm events on this machine: `exitscope bench --test cpuid` keeps one vCPU busy for
# SECONDS (default 3) — one, then two at once (both CPUs busy) — while record writes to a tmpfs-or-/tmp file. Event sets of growing rate (one
# kvm event per CPUID, then every default event, then kvm:*) show where loss starts; per row: events
# recorded, events/s over the bench's wall time, events lost (kernel counts), record's CPU time.
# Needs root, tracefs and /dev/kvm; prints "record_rate: not run: why" otherwise. Not a ctest.
set -euo pipefail
BIN=${1:-$(dirname "$0")/../build/exitscope}
SECONDS_GOAL=${2:-3}
T=/sys/kernel/tracing
skip() { echo "record_rate: not run: $1"; exit 0; }
[ -c /dev/kvm ] && [ -w /dev/kvm ] || skip "no writable /dev/kvm"
[ -d $T/instances ] || skip "no tracefs at $T"
[ "$(id -u)" = 0 ] || skip "needs root"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
MIN_MS=$((SECONDS_GOAL * 1000))

# The cpuid test: which kvm event marks one iteration depends on the KVM (kvm_exit on VMX/SVM).
run() {  # label, then record's event options
  local label=$1; shift
  "$BIN" record -o "$WORK/r.dat" "$@" 2> "$WORK/rec.err" &
  local rec=$!
  for _ in $(seq 300); do
    [ -e "$T/instances/exitscope-$rec/tracing_on" ] && [ "$(cat "$T/instances/exitscope-$rec/tracing_on")" = 1 ] &&
      [ "$(cat "$T/instances/exitscope-$rec/events/kvm/kvm_cpuid/enable" 2>/dev/null || echo 1)" = 1 ] && break
    sleep 0.1
  done
  local t0 t1
  t0=$(date +%s.%N)
  local pids=() i
  for i in $(seq "${VCPUS:-1}"); do
    "$BIN" bench --test cpuid --min-time-ms "$MIN_MS" --json > "$WORK/bench$i.json" &
    pids+=($!)
  done
  wait "${pids[@]}"
  t1=$(date +%s.%N)
  kill -INT $rec
  wait $rec || true
  python3 - "$label" "$t0" "$t1" "$WORK/rec.err" "$WORK"/bench*.json <<'EOF'
import json, re, sys
label, t0, t1, err_path, *bench_paths = sys.argv[1:]
err = open(err_path).read()
m = re.search(r"wrote .*?: (\d+) events, (\d+) pages .*? in ([\d.]+) s; CPU used ([\d.]+) s user \+ ([\d.]+) s sys", err)
if not m:
    print(f"{label:<28} record failed: {err.strip()!r}")
    sys.exit(0)
events, wall, user, sys_ = int(m.group(1)), float(m.group(3)), float(m.group(4)), float(m.group(5))
lost = sum(int(x) + int(y) for x, y in re.findall(r"lost events: (\d+) overwritten, (\d+) dropped", err))
bench_s = float(t1) - float(t0)
# The bench doubles the iterations from 1 until the time goal: all its runs together made 2n-1.
iters = sum(2 * json.load(open(p))["tests"][0]["iterations"] - 1 for p in bench_paths)
print(f"{label:<28} {events:>10} {events / bench_s:>12,.0f} {lost:>8} {iters / bench_s:>12,.0f}"
      f" {user + sys_:>7.2f} {100 * (user + sys_) / wall:>6.1f}%")
EOF
}

echo "record_rate on $(uname -r), $(nproc) CPUs, $(grep -m1 '^model name' /proc/cpuinfo | cut -d: -f2- | xargs)," \
     "KVM $(ls /sys/module | grep -E '^kvm_(intel|amd|pvm)$' | xargs), bench cpuid for ~${SECONDS_GOAL} s guest time"
printf '%-28s %10s %12s %8s %12s %7s %7s\n' "events recorded" "events" "events/s" "lost" "cpuid/s" "cpu_s" "cpu%"
run "kvm_cpuid only" -e kvm_cpuid
run "default (exit-related)"
run "kvm:*" -e 'kvm:*'
# Both CPUs busy with vCPUs: record has to take its time from them.
VCPUS=2 run "default, 2 busy vCPUs"
VCPUS=2 run "kvm:*, 2 busy vCPUs" -e 'kvm:*'
echo "events/s and cpuid/s over the bench's wall time; lost = overwritten + dropped (kernel stats);"
echo "cpu% = record's user+sys over its own wall time (one CPU = 100%)"
