# watchdog.sh — sourced by tools/kvmhost/run.sh and tools/kvmhost-arm64/run.sh: boots QEMU, watches
# the guest console, stops a wedged or silent guest kernel and boots again, --retries times.
#
# A wedged emulated kernel: the soft-lockup watchdog has seen one CPU stuck in the kernel for
# WEDGED_S seconds (under TCG seen in CI: exitscope bench stuck in the kernel, every timer late, 400 s
# of lockup reports until the timeout). A stalled one: no console output for STALL seconds (seen:
# both vCPUs in the kernel with interrupts off during a DR-burst recording). The guest's own script
# timeout cannot fire then, and waiting for the whole --timeout only wastes it.
#
# Each wedged or stalled boot leaves in OUT: console.N.log (its console) and vcpus.N.txt (QEMU
# monitor's `info cpus` and two rounds of `info registers -a`: RIPs/PCs that move or not). Each one
# prints ONE line on stderr, "NAME: guest wedged at …, retrying (1/2)", also appended to
# $KVMHOST_WEDGE_LOG when set (scripts/test.sh shows that file after ctest: a retry that passed
# would otherwise stay hidden in ctest's log).
#
# The caller sets NAME (the harness's name in messages), OUT, CONSOLE, STALL, RETRIES, DISK and
# DISK_MB (the results disk and its size, for where_vcpus) and defines
#   start_qemu MONITOR_SOCKET   launch QEMU in the background (under timeout(1)), with
#                               `-monitor unix:MONITOR_SOCKET,server,nowait -serial file:$CONSOLE`;
#                               set QEMU_PID to the background process.
# then calls watchdog_init once and boot_with_retries, which sets QEMU_RC, WEDGED, STALLED, BOOTS,
# WEDGED_BOOTS (boots stopped and retried) and LOCKUP_S.
WEDGED_S=${WEDGED_S:-60}

watchdog_init() {
  # A unix socket path must stay under 108 bytes, so not below $OUT.
  MONITOR=$(mktemp -u "/tmp/$NAME-monitor.XXXXXX")
  trap 'rm -f "$MONITOR"' EXIT
}

longest_lockup() {  # seconds of the longest "soft lockup - CPU#n stuck for Ns!" on the console
  grep -o 'soft lockup - CPU#[0-9]* stuck for [0-9]*s' "$CONSOLE" 2>/dev/null |
    sed 's/.* for \([0-9]*\)s/\1/' | sort -n | tail -1 || true
}

dump_vcpus() {  # $1: file for 'info cpus' and two rounds of every vCPU's registers
  python3 - "$MONITOR" > "$1" 2>&1 <<'PY' || true
import socket, sys
sock = socket.socket(socket.AF_UNIX)
sock.settimeout(2)
sock.connect(sys.argv[1])
def answer():  # everything the monitor says until it has been quiet for the timeout
    data = b""
    try:
        while True:
            chunk = sock.recv(1 << 16)
            if not chunk:
                break
            data += chunk
    except socket.timeout:
        pass
    return "".join(line for line in data.decode(errors="replace").splitlines(True) if "\x1b" not in line)
answer()  # the banner
for command in ("info cpus", "info registers -a", "info registers -a"):
    sock.sendall(command.encode() + b"\n")
    print("## " + command)
    print(answer())
PY
}

# The kernel functions the vCPUs were in. The guest's /init saved its kallsyms (KASLR's placement of
# this boot) at the end of the results disk (save-symbols.sh); after QEMU is stopped that slice is read
# back, the RIPs/PCs of every `info registers` round are looked up in it, a "## where" section is
# appended to $1 and "CPU#0 sym+0x1f, CPU#1 sym+0x4 [kvm_amd]" (the last round) printed for the
# one-line report. "?" for an address outside the symbols (user space; a boot wedged before /init).
where_vcpus() {
  local syms=$OUT/.kvmhost-kallsyms.txt
  [ -n "${DISK:-}" ] && [ -f "$DISK" ] || return 0
  dd if="$DISK" bs=512 skip=$(( DISK_MB * 2048 - 32768 )) 2> /dev/null | tar -xOf - kallsyms.gz 2> /dev/null |
    gzip -dc > "$syms" 2> /dev/null || true
  python3 - "$1" "$syms" 2>/dev/null <<'PY' || true
import bisect, re, sys
regs, kallsyms = sys.argv[1], sys.argv[2]
syms = []
for line in open(kallsyms, errors="replace"):
    f = line.split()
    if len(f) >= 3 and f[1] in "tTwW":
        syms.append((int(f[0], 16), f[2] + (" " + f[3] if len(f) > 3 else "")))
syms.sort()
addrs = [a for a, _ in syms]
def name(pc):
    i = bisect.bisect_right(addrs, pc) - 1
    if i < 0 or pc - addrs[i] > 1 << 20:
        return "?"
    fn, _, mod = syms[i][1].partition(" ")
    return f"{fn}+{pc - addrs[i]:#x}" + (f" {mod}" if mod else "")
rounds, cpu = [], None
for line in open(regs, errors="replace"):
    if line.startswith("## info registers"):
        rounds.append({})
    m = re.match(r"\s*CPU#(\d+)", line)
    if m:
        cpu = int(m.group(1))
    m = re.search(r"\b(?:RIP|PC)=([0-9a-f]{8,16})", line)
    if m and rounds and cpu is not None:
        rounds[-1].setdefault(cpu, int(m.group(1), 16))
with open(regs, "a") as out:
    out.write(f"## where (the guest's kallsyms of this boot: {len(syms)} text symbols)\n")
    for n, r in enumerate(rounds, 1):
        for c, pc in sorted(r.items()):
            out.write(f"round {n} CPU#{c} {pc:#x} {name(pc)}\n")
if rounds:
    print(", ".join(f"CPU#{c} {name(pc)}" for c, pc in sorted(rounds[-1].items())))
PY
  rm -f "$syms"
}

stop_qemu() {  # $1: the timeout(1) process QEMU runs under; QEMU is its child and must die first
  local child
  child=$(pgrep -P "$1" || true)
  [ -n "$child" ] && kill -KILL $child 2>/dev/null
  kill -KILL "$1" 2>/dev/null || true
  for _ in $(seq 50); do  # until the disk image's write lock is free for the next boot
    [ -n "$child" ] && kill -0 $child 2>/dev/null || break
    sleep 0.1
  done
}

# Where the guest was: the watchdog's own line for a wedge, else the console's last line.
where_wedged() {
  local at
  at=$(grep -o 'soft lockup - CPU#[0-9]* stuck for [0-9]*s! \[[^]]*\]' "$CONSOLE" 2>/dev/null | tail -1 || true)
  [ -n "$at" ] || at="last console line: $(tr -d '\r' < "$CONSOLE" 2>/dev/null | grep -v '^[[:space:]]*$' | tail -1 | cut -c1-120)"
  echo "$at"
}

# A wedged or stalled boot: its registers saved, QEMU stopped (no "Killed" job notice on stderr),
# and where its vCPUs were in WHERE.
stop_and_keep() {  # $1: the timeout(1) process QEMU runs under
  dump_vcpus "$OUT/vcpus.txt"
  { stop_qemu "$1"; } 2> /dev/null
  WHERE=$(where_vcpus "$OUT/vcpus.txt")
}

watch_qemu() {  # sets QEMU_RC, STALLED, WEDGED, LOCKUP_S, STOPPED_AT_S
  local qemu=$QEMU_PID last=-1 since start size lockup
  start=$(date +%s) since=$start STALLED=0 WEDGED=0 LOCKUP_S=0 STOPPED_AT_S=0 WHERE=
  while kill -0 "$qemu" 2>/dev/null; do
    sleep 1
    size=$(stat -c %s "$CONSOLE" 2>/dev/null || echo 0)
    if [ "$size" != "$last" ]; then
      last=$size since=$(date +%s)
      lockup=$(longest_lockup)
      if [ "${lockup:-0}" -ge "$WEDGED_S" ]; then
        WEDGED=1 LOCKUP_S=$lockup STOPPED_AT_S=$(( $(date +%s) - start ))
        stop_and_keep "$qemu"
        break
      fi
      continue
    fi
    if [ $(( $(date +%s) - since )) -ge "$STALL" ]; then
      STALLED=1 STOPPED_AT_S=$(( $(date +%s) - start ))
      stop_and_keep "$qemu"
      break
    fi
  done
  QEMU_RC=0; { wait "$qemu"; } 2>/dev/null || QEMU_RC=$?  # no "Killed" job notice for a stopped boot
}

wedge_line() {  # $1: what follows "retrying" or "no retries left"
  local how
  if [ "$WEDGED" = 1 ]; then how="wedged"; else how="stalled (no console output for ${STALL}s)"; fi
  local line="$NAME: guest $how at ${STOPPED_AT_S}s into boot $BOOTS ($(where_wedged)${WHERE:+; $WHERE}), $1"
  echo "$line" >&2
  if [ -n "${KVMHOST_WEDGE_LOG:-}" ]; then echo "$(date -u +%FT%TZ) $line [$OUT]" >> "$KVMHOST_WEDGE_LOG"; fi
}

boot_with_retries() {
  BOOTS=0 WEDGED_BOOTS=0
  while :; do
    BOOTS=$((BOOTS + 1))
    : > "$CONSOLE"
    rm -f "$OUT/vcpus.txt"
    start_qemu "$MONITOR"
    watch_qemu
    { [ "$WEDGED" = 1 ] || [ "$STALLED" = 1 ]; } || break
    if [ "$WEDGED_BOOTS" -ge "$RETRIES" ]; then
      wedge_line "no retries left (console.log, vcpus.txt)"
      break
    fi
    WEDGED_BOOTS=$((WEDGED_BOOTS + 1))
    cp "$CONSOLE" "$OUT/console.$WEDGED_BOOTS.log"
    mv "$OUT/vcpus.txt" "$OUT/vcpus.$WEDGED_BOOTS.txt" 2>/dev/null || true
    wedge_line "retrying ($WEDGED_BOOTS/$RETRIES); console.$WEDGED_BOOTS.log, vCPU registers in vcpus.$WEDGED_BOOTS.txt"
  done
}
