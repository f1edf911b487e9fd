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
