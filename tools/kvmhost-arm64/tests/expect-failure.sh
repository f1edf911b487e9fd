#!/usr/bin/env bash
# expect-failure.sh OUT — the arm64 harness must fail loudly when the guest script fails: status 1, an
# error naming the script's exit status, and the guest console with the script's own output.
set -uo pipefail
OUT=$1
SCRIPT=$(mktemp)
trap 'rm -f "$SCRIPT"' EXIT
printf 'echo "about to fail on purpose"\nexit 3\n' > "$SCRIPT"
"$(dirname "$0")/../run.sh" --script "$SCRIPT" --out "$OUT" --timeout 300 --stall 120 \
  --cache "${KVMHOST_ARM64_CACHE:-$(dirname "$OUT")/cache}" > "$OUT.stdout" 2> "$OUT.stderr"
rc=$?
fail() { echo "FAIL: $1"; echo "--- run.sh stderr:"; cat "$OUT.stderr"; exit 1; }
[ "$rc" = 1 ] || fail "run.sh exited $rc, want 1"
grep -q '^kvmhost-arm64: error: guest: script exited with rc=3$' "$OUT.stderr" || fail "no error line naming rc=3"
grep -q '  | about to fail on purpose' "$OUT.stderr" || fail "console log not shown"
grep -q 'KVMHOST: kvm vhe' "$OUT.stderr" || fail "console does not show KVM in VHE mode"
echo "ok: run.sh reported the failing script (rc=$rc)"

# A wedged guest kernel is stopped at once, reported in one line naming where its vCPUs were (the
# guest's kallsyms, saved at boot: tools/kvmhost-common/save-symbols.sh), and its registers kept. The
# script fakes the soft-lockup watchdog's console line, then waits far longer than the test allows.
printf 'echo "watchdog: BUG: soft lockup - CPU#0 stuck for 75s! [exitscope:99]"\nsleep 400\n' > "$SCRIPT"
"$(dirname "$0")/../run.sh" --script "$SCRIPT" --out "$OUT-wedged" --timeout 420 --stall 300 --retries 0 \
  --cache "${KVMHOST_ARM64_CACHE:-$(dirname "$OUT")/cache}" > "$OUT.stdout" 2> "$OUT.stderr"
rc=$?
[ "$rc" = 1 ] || fail "wedged guest: run.sh exited $rc, want 1"
grep -Eq '^kvmhost-arm64: guest wedged at [0-9]+s into boot 1 \(soft lockup - CPU#0 stuck for 75s! \[exitscope:99\]; CPU#0 [^,]+, CPU#1 [^)]+\), no retries left' \
  "$OUT.stderr" || fail "wedged guest: no line saying the wedge and where"
grep -q '^ *PC=' "$OUT-wedged/vcpus.txt" || fail "wedged guest: no vCPU registers from QEMU's monitor"
grep -Eq '^round [0-9] CPU#[0-9] 0xffff[0-9a-f]+ [A-Za-z_][A-Za-z0-9_.]*\+0x[0-9a-f]+' "$OUT-wedged/vcpus.txt" ||
  fail "wedged guest: no vCPU resolved to a kernel function (the guest's kallsyms)"
echo "ok: run.sh stopped a wedged guest and said where its vCPUs were"
