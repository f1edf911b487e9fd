#!/usr/bin/env bash
# watchdog-test.sh — tools/kvmhost-common/watchdog.sh against a stand-in for QEMU (no boot): a
# process that writes a console and answers on a monitor socket like QEMU's. Boot 1 wedges (the
# kernel's soft-lockup line), boot 2 goes silent: the watchdog must stop each, say so in one line
# (stderr and $KVMHOST_WEDGE_LOG), keep each console and the vCPU registers, retry once, then give up.
set -uo pipefail
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
NAME=kvmhost-test CONSOLE=$OUT/console.log STALL=3 RETRIES=1 WEDGED_S=5 KVMHOST_WEDGE_LOG=$OUT/wedges.log
. "$(dirname "$0")/../watchdog.sh"
watchdog_init
start_qemu() {  # $1: the monitor socket
  local mode=silent
  [ "$BOOTS" = 1 ] && mode=wedge
  timeout --signal=KILL 60 python3 - "$1" "$CONSOLE" "$mode" <<'PY' &
import os, socket, sys, time
path, console, mode = sys.argv[1:]
srv = socket.socket(socket.AF_UNIX)
if os.path.exists(path):
    os.unlink(path)  # as QEMU does
srv.bind(path)
srv.listen(1)
with open(console, "a") as c:
    c.write("Linux version 6.1.0 (stand-in)\nKVMHOST: running the script\n")
    if mode == "wedge":
        c.write("watchdog: BUG: soft lockup - CPU#1 stuck for 7s! [exitscope:321]\n")
conn, _ = srv.accept()
conn.sendall(b"QEMU 7.2 monitor - type 'help' for more information\n(qemu) ")
for line in conn.makefile():
    if line.startswith("info cpus"):
        conn.sendall(b"* CPU #0: thread_id=1\n  CPU #1: thread_id=2\n(qemu) ")
    elif line.startswith("info registers"):
        conn.sendall(b"CPU#0\nRIP=ffffffff8123abcd RFL=00000246\nCPU#1\nRIP=ffffffff81001234\n(qemu) ")
time.sleep(60)
PY
  QEMU_PID=$!
}
boot_with_retries 2> "$OUT/stderr"
fails=0
fail() { echo "FAIL: $1"; fails=$((fails + 1)); }
cat "$OUT/stderr"
[ "$BOOTS" = 2 ] || fail "boots=$BOOTS, want 2"
[ "$WEDGED_BOOTS" = 1 ] || fail "wedged_boots=$WEDGED_BOOTS, want 1"
[ "$STALLED" = 1 ] || fail "the second boot's silence was not caught"
grep -Eq '^kvmhost-test: guest wedged at [0-9]+s into boot 1 \(soft lockup - CPU#1 stuck for 7s! \[exitscope:321\]\), retrying \(1/1\)' \
  "$OUT/stderr" || fail "no wedge-and-retry line"
grep -Eq '^kvmhost-test: guest stalled \(no console output for 3s\) at [0-9]+s into boot 2 \(last console line: KVMHOST: running the script\), no retries left' \
  "$OUT/stderr" || fail "no stall line"
grep -q 'RIP=ffffffff8123abcd' "$OUT/vcpus.1.txt" 2>/dev/null || fail "boot 1's vCPU registers not kept in vcpus.1.txt"
grep -q '## info cpus' "$OUT/vcpus.txt" 2>/dev/null || fail "boot 2's vCPU registers not kept in vcpus.txt"
grep -q 'soft lockup' "$OUT/console.1.log" 2>/dev/null || fail "boot 1's console not kept"
[ "$(wc -l < "$KVMHOST_WEDGE_LOG")" = 2 ] || fail "$KVMHOST_WEDGE_LOG has not one line per stopped boot"
[ "$fails" = 0 ] && echo "ok: wedge and stall stopped, reported and retried"
exit $((fails > 0))
