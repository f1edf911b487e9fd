#!/bin/sh
# The exporter unit's one capability is enough (label install): as an unprivileged user holding
# only the unit's AmbientCapabilities (CAP_DAC_OVERRIDE), exitscope creates its tracefs instance,
# enables an event, reads trace_pipe_raw into a trace.dat and removes the instance, and `cleanup`
# runs; with no capability it is refused with 77. The unit's sandbox (DynamicUser, ProtectSystem)
# needs a running systemd and is not exercised here.
# Usage: capability_test.sh BIN UNIT_TEMPLATE. Exits 77 (skipped) without a writable tracefs.
set -eu
bin=$1 unit=$2
fail() { echo "FAIL: $*"; exit 1; }
tracefs=
for t in /sys/kernel/tracing /sys/kernel/debug/tracing; do
  if [ -d "$t/instances" ] && [ -w "$t/instances" ]; then tracefs=$t; break; fi
done
[ -n "$tracefs" ] || { echo "install.capabilities: not run: no writable tracefs"; exit 77; }
caps=$(sed -n 's/^AmbientCapabilities=//p' "$unit" | tr 'A-Z' 'a-z' | sed 's/cap_//g; s/ /,+/g')
[ "$caps" = dac_override ] || fail "the unit grants '$caps': update this test with the reason"
tmp=$(mktemp -d)
chmod 777 "$tmp"
trap 'rm -rf "$tmp"' EXIT
as_user() {  # CAPS CMD...: run as nobody with exactly CAPS (empty: none)
  c=$1; shift
  setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all${c:+,+$c} \
    --ambient-caps=-all${c:+,+$c} --bounding-set=-all${c:+,+$c} "$@"
}
as_user "$caps" "$bin" record -q --tracefs "$tracefs" -o "$tmp/t.dat" -e sched:sched_switch --duration 0.3 ||
  fail "record with only CAP_DAC_OVERRIDE: status $?"
n=$("$bin" dump "$tmp/t.dat" --event sched_switch | grep -c sched_switch || true)
[ "$n" -gt 0 ] || fail "the recording holds no sched_switch event"
as_user "$caps" "$bin" cleanup --tracefs "$tracefs" || fail "cleanup with only CAP_DAC_OVERRIDE: status $?"
set +e
as_user "" "$bin" record -q --tracefs "$tracefs" -o "$tmp/u.dat" -e sched:sched_switch --duration 0.1 2>"$tmp/err"
rc=$?
set -e
[ $rc -eq 77 ] || fail "record without capabilities: status $rc, not 77: $(cat "$tmp/err")"
echo "ok: CAP_DAC_OVERRIDE records ($n sched_switch events), none is refused (77)"
