#!/usr/bin/env bash
# record-fixture.sh --out DIR [--iterations N] [--test NAME]... [--exitscope BIN]
#
# Records a fixture on a real KVM host (tools/kvmhost/run.sh: Debian's kernel, kvm_amd on QEMU TCG's
# emulated SVM CPU): ONE run of `exitscope bench --iterations N --json` captured at the same time by
# `trace-cmd record -e kvm` and `perf record -e 'kvm:*' -a` (guest/record-dual.sh). DIR gets
# trace.dat, perf.data, their renderings by the peers (trace-cmd report, perf script,
# perf kvm stat report --event=vmexit), the bench's own JSON (bench.json: per test its iterations and
# the guest RIP of its exiting instruction) and a README.md saying how it was made.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
OUT= ITERS=100 BIN=${EXITSCOPE:-$HERE/../../build/exitscope}
TESTS=()
while [ $# -gt 0 ]; do
  case "$1" in
    --out) OUT=$2; shift 2 ;;
    --iterations) ITERS=$2; shift 2 ;;
    --test) TESTS+=(--test "$2"); shift 2 ;;
    --exitscope) BIN=$2; shift 2 ;;
    *) sed -n '2,10p' "$0" >&2; exit 2 ;;
  esac
done
[ -n "$OUT" ] || { sed -n '2,10p' "$0" >&2; exit 2; }
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
BENCH_CMD="exitscope bench --iterations $ITERS${TESTS[*]+ ${TESTS[*]}} --json"
cat > "$WORK/record.sh" <<SCRIPT
cp /sys/kernel/tracing/events/kvm/kvm_exit/format kvm_exit.format
sh /kvmhost/record-dual.sh /out/rec $BENCH_CMD
SCRIPT
"$HERE/run.sh" --script "$WORK/record.sh" --out "$WORK/run" --exitscope "$BIN" \
  --file "$HERE/guest/record-dual.sh" --timeout 420 --stall 150
REC=$WORK/run/guest/rec
"$HERE/render-recording.sh" "$REC"
mkdir -p "$OUT"
cp "$REC"/{trace.dat,perf.data,trace-cmd-report.txt,perf-script.txt,perf-kvm-stat-report.txt} "$OUT/"
cp "$REC/workload.out" "$OUT/bench.json"
cp "$WORK/run/guest/uname.txt" "$OUT/uname.txt"
# The text renderings compress ~10x; the binary recordings are already small (zstd, few iterations).
gzip -9nf "$OUT/trace-cmd-report.txt" "$OUT/perf-script.txt"
# perf.data is written by root with mode 0600; keep it readable by other users of the checkout.
chmod 0644 "$OUT"/*

kvm_exits=$(zgrep -c ' kvm_exit: ' "$OUT/trace-cmd-report.txt.gz" || true)
perf_exits=$(zgrep -c 'kvm:kvm_exit:' "$OUT/perf-script.txt.gz" || true)
cat > "$OUT/README.md" <<README
# exitscope bench on a real AMD-SVM KVM host, recorded by trace-cmd and perf at once

Made by \`tools/kvmhost/record-fixture.sh --iterations $ITERS\` on $(date -u +%Y-%m-%d). Exit *times* are
those of an emulated CPU (QEMU TCG): only the structure, the ordering and the counts are real.

- Inner kernel: \`$(cat "$OUT/uname.txt")\`
- QEMU: \`$(qemu-system-x86_64 --version | head -1)\`, \`-accel $(sed -n 's/.* accel=\([^ ]*\).*/\1/p' "$WORK/run/host-run.txt") -cpu qemu64,+svm,+npt -m 2048 -smp 2\`,
  busybox initramfs built by \`tools/kvmhost/run.sh\`; kvm_amd with its defaults
  ($(tr '\n' ' ' < "$WORK/run/guest/kvm_amd-params.txt")). TCG offers no next-RIP save or decode
  assists: intercepted instructions go through KVM's emulator (kvm_emulate_insn) and kvm_cr never fires.
- Guest tools: Debian's trace-cmd ($(trace-cmd -h 2>&1 | sed -n 's/^trace-cmd version \([^ ]*\).*/\1/p' | head -1)) and perf ($(perf --version | cut -d' ' -f3)), copied into the initramfs.
- Workload: \`$BENCH_CMD\` (one run; \`bench.json\` is its output: per test the iteration count and
  \`exit_rip\`, the guest RIP of the test's exiting instruction).
- Recorders, started together and both running before the workload (\`tools/kvmhost/guest/record-dual.sh\`):
  \`trace-cmd record -e kvm -b 16384 -o trace.dat\` and \`perf record -e 'kvm:*' -a -m 8M -o perf.data\`,
  stopped with SIGINT after the workload. Both files hold the same KVM events.
- Renderings on the host: \`trace-cmd report -i trace.dat\` (trace-cmd-report.txt.gz),
  \`perf script -i perf.data\` (perf-script.txt.gz),
  \`perf kvm -i perf.data stat report --event=vmexit\` (stdout+stderr; perf's libtraceevent warning
  about kvm_inj_exception is harmless).

Counts: kvm_exit in trace-cmd report $kvm_exits, in perf script $perf_exits (the same run).

\`perf kvm stat report --event=vmexit\` of perf.data:
\`\`\`
$(grep -A14 'VM-EXIT' "$OUT/perf-kvm-stat-report.txt")
\`\`\`
README
ls -la "$OUT"
