#!/usr/bin/env bash
# expect-failure.sh OUT EXITSCOPE — the harness must fail loudly when the guest script fails: status 1,
# an error naming the script's exit status, and the guest console (with the script's own output).
set -uo pipefail
OUT=$1 BIN=$2
mkdir -p "$(dirname "$OUT")"
SCRIPT=$(mktemp)
trap 'rm -f "$SCRIPT"' EXIT
printf 'echo "about to fail on purpose"\nexit 3\n' > "$SCRIPT"
"$(dirname "$0")/../run.sh" --script "$SCRIPT" --out "$OUT" --exitscope "$BIN" --timeout 180 --stall 90 \
  > "$OUT.stdout" 2> "$OUT.stderr"
rc=$?
fail() { echo "FAIL: $1"; echo "--- run.sh stderr:"; cat "$OUT.stderr"; exit 1; }
[ "$rc" = 1 ] || fail "run.sh exited $rc, want 1"
grep -q '^kvmhost: error: guest: script exited with rc=3$' "$OUT.stderr" || fail "no error line naming rc=3"
grep -q '  | about to fail on purpose' "$OUT.stderr" || fail "console log not shown"
grep -q 'KVMHOST: kvm_amd loaded' "$OUT.stderr" || fail "console does not show kvm_amd loading"
echo "ok: run.sh reported the failing script (rc=$rc)"

# A wedged guest kernel (the soft-lockup watchdog reporting a CPU stuck for a minute) is stopped at
# once and booted again, --retries times, then reported; each wedged boot's console and vCPU
# registers are kept. The
# script fakes the watchdog's console line, then waits far longer than the test allows.
printf 'echo "watchdog: BUG: soft lockup - CPU#0 stuck for 75s! [exitscope:188]"\nsleep 400\n' > "$SCRIPT"
start=$(date +%s)
"$(dirname "$0")/../run.sh" --script "$SCRIPT" --out "$OUT-wedged" --exitscope "$BIN" --timeout 420 \
  --stall 300 --retries 1 > "$OUT.stdout" 2> "$OUT.stderr"
rc=$? took=$(( $(date +%s) - start ))
[ "$rc" = 1 ] || fail "wedged guest: run.sh exited $rc, want 1"
# One line per stopped boot, where it was and what follows (tools/kvmhost-common/watchdog.sh).
grep -Eq '^kvmhost: guest wedged at [0-9]+s into boot 1 \(soft lockup - CPU#0 stuck for 75s! \[exitscope:188\]; CPU#0 [^,]+, CPU#1 [^)]+\), retrying \(1/1\)' \
  "$OUT.stderr" || fail "wedged guest: no line saying the wedge and the retry"
grep -Eq '^kvmhost: guest wedged at [0-9]+s into boot 2 .*, no retries left' "$OUT.stderr" ||
  fail "wedged guest: no line saying the second wedge"
grep -q '^kvmhost: error: guest kernel wedged in every one of 2 boots' "$OUT.stderr" ||
  fail "wedged guest: no error line naming the wedge"
[ -s "$OUT-wedged/console.1.log" ] || fail "wedged guest: the first boot's console was not kept"
grep -q '^RIP=' "$OUT-wedged/vcpus.1.txt" || fail "wedged guest: no vCPU registers from QEMU's monitor"
# The faked wedge leaves the vCPUs idle or in the sleeping script: at least one in a kernel function.
grep -Eq '^round [0-9] CPU#[0-9] 0xffffffff[0-9a-f]+ [A-Za-z_][A-Za-z0-9_.]*\+0x[0-9a-f]+' "$OUT-wedged/vcpus.1.txt" ||
  fail "wedged guest: no vCPU resolved to a kernel function (the guest's kallsyms)"
grep -q 'boots=2 wedged_boots=2' "$OUT-wedged/host-run.txt" || fail "wedged guest: host-run.txt wrong"
[ "$took" -lt 240 ] || fail "wedged guest: took ${took}s, the wedge was not caught early"
echo "ok: run.sh stopped a wedged guest and booted again (${took}s)"
