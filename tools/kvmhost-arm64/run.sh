#!/usr/bin/env bash
# run.sh — boot a real arm64 KVM host (Debian's arm64 kernel, KVM in VHE mode at the emulated EL2) under
# QEMU software emulation on this x86-64 machine, run a script inside it and bring its files back.
# The project's arm64 real-KVM test harness (label kvmhost-arm64); the x86 one is tools/kvmhost/.
#
#   tools/kvmhost-arm64/run.sh --script FILE --out DIR [--cache DIR] [--exitscope ARM64_BIN]
#                              [--file PATH]... [--timeout S] [--stall S] [--retries N]
#
# Inside, FILE runs under busybox sh -e with cwd /out; everything it leaves in /out comes back to
# DIR/guest (a tar written raw onto a second virtio disk). On PATH: busybox, Debian's arm64 trace-cmd,
# kvmexits-arm64 (guest/kvmexits-arm64.c, cross-built here) and, with --exitscope, an arm64 exitscope
# (tools/kvmhost-arm64/cross-build.sh). --file PATH copies PATH to /kvmhost/. Exit status 0 only if
# /dev/kvm appeared in VHE mode and the script exited 0; otherwise the reason and the end of the guest
# console go to stderr and the status is 1 (2: usage, 3: host). DIR/host-run.txt has the boot times.
#
# Facts this relies on (../shared/kvmhost-recipe-arm64, measured on this 2-core machine):
# - `qemu-system-aarch64 -M virt,virtualization=on,gic-version=3 -cpu max -accel tcg,thread=multi`
#   (Debian's qemu-system-arm 7.2) starts Debian's arm64 kernel at EL2 ("CPU: All CPU(s) started at
#   EL2") and KVM, built in (CONFIG_KVM=y), initialises in VHE mode ("kvm [1]: VHE mode initialized
#   successfully"): /dev/kvm, nothing to load. -nic none: no NIC, so no option ROM is needed.
# - The arm64 .debs come through a private APT configuration with arm64 as its native architecture
#   (arm64-debs.sh), unpacked with dpkg -x: the host's dpkg is untouched. Debian's virtio_mmio and
#   virtio_blk are modules: the output disk needs them insmodded in dependency order.
# - Each exit costs ~0.5 ms under emulation; boot + a 50-iteration workload + recording took 36 s.
# - The guest VMM must create an in-kernel vGICv3: with the irqchip in userspace, a WFI with the
#   guest's timer armed blocks the vCPU for ever on 6.1 (kvm_vcpu_check_block() does not look at the
#   arch timer then). Under TCG, WFE never traps and a WFI whose timer already fired does not trap.
# - kvm_exit has `int ret` (0 IRQ, 1 SERROR, 2 TRAP, 3 IL, 0xbadca11 HYP_GONE), `unsigned int esr_ec`
#   (0 unless ret is TRAP) and `vcpu_pc`, printed "%s: HSR_EC: 0x%04x (%s), PC: 0x%016lx"; kvm_entry
#   has vcpu_pc only (the vCPU is the host thread). The kernel's own text (a tracefs instance's
#   `trace` file) is always right; x86 trace-cmd misprints these events, so it is the oracle.
# Knobs: --timeout (whole QEMU run, default 420), --stall (no console output, 150 s), --retries (boots
# again after a wedged or stalled guest kernel, 1), --mem MiB (2048), --smp (2), --disk-mb (512),
# --cache (arm64 packages, default build/kvmhost-arm64/cache), KVMHOST_SKIP_DEPS=1 skips
# scripts/install-deps.sh.
set -Eeuo pipefail
# As tools/kvmhost/run.sh: a command that fails outside the checks ends the run with its line said,
# so a harness fault is never mistaken for a silent guest.
trap 'echo "kvmhost-arm64: error: run.sh line $LINENO failed (exit $?), before or after the boot" >&2' ERR
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
SCRIPT= OUT= TIMEOUT=420 STALL=150 RETRIES=1 MEM=2048 SMP=2 DISK_MB=512 EXITSCOPE_BIN=
CACHE=$REPO/build/kvmhost-arm64/cache
FILES=()
usage() { sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    --script) SCRIPT=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --cache) CACHE=$2; shift 2 ;;
    --exitscope) EXITSCOPE_BIN=$2; shift 2 ;;
    --file) FILES+=("$2"); shift 2 ;;
    --timeout) TIMEOUT=$2; shift 2 ;;
    --stall) STALL=$2; shift 2 ;;
    --retries) RETRIES=$2; shift 2 ;;
    --mem) MEM=$2; shift 2 ;;
    --smp) SMP=$2; shift 2 ;;
    --disk-mb) DISK_MB=$2; shift 2 ;;
    -h|--help) usage ;;
    *) echo "kvmhost-arm64: error: unknown argument '$1'" >&2; usage ;;
  esac
done
[ -n "$SCRIPT" ] && [ -n "$OUT" ] || usage
log() { echo "kvmhost-arm64[$(date +%T)]: $*" >&2; }
die_host() { echo "kvmhost-arm64: error: $1" >&2; [ -n "${2:-}" ] && echo "hint: $2" >&2; exit 3; }
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }

[ -r "$SCRIPT" ] || die_host "cannot read script $SCRIPT"
if [ -n "$EXITSCOPE_BIN" ]; then
  file -L "$EXITSCOPE_BIN" | grep -q 'ARM aarch64' ||
    die_host "$EXITSCOPE_BIN is not an arm64 exitscope" "build one with tools/kvmhost-arm64/cross-build.sh"
fi
if [ "${KVMHOST_SKIP_DEPS:-0}" != 1 ]; then bash "$REPO/scripts/install-deps.sh" >&2; fi
for tool in qemu-system-aarch64 aarch64-linux-gnu-gcc cpio gzip modinfo file; do
  command -v "$tool" >/dev/null || die_host "$tool not found" "run scripts/install-deps.sh"
done
T_START=$(now)
"$HERE/arm64-debs.sh" "$CACHE" >&2 || die_host "could not fetch the arm64 packages" "see arm64-debs.sh"
CACHE=$(cd "$CACHE" && pwd)
KVER=$(cat "$CACHE/kernel.release")
T_DEBS=$(now)

mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
WORK=$OUT/.kvmhost
rm -rf "$WORK" "$OUT/guest" "$OUT"/console.[0-9]*.log "$OUT"/vcpus*.txt
mkdir -p "$WORK"

# ------------------------------------------------------------------ initramfs
# The arm64 userland is the unpacked sysroot less what only a build needs (headers, static and
# development files, docs); busybox provides the shell and every small tool.
ROOT=$WORK/root
mkdir -p "$ROOT"
cp -a "$CACHE/sysroot/." "$ROOT/"
rm -rf "$ROOT/usr/include" "$ROOT/usr/share" "$ROOT/usr/lib/aarch64-linux-gnu/pkgconfig" \
       "$ROOT/usr/lib/aarch64-linux-gnu/cmake" "$ROOT/usr/lib/aarch64-linux-gnu/gconv"
find "$ROOT" -name '*.a' -delete
mkdir -p "$ROOT"/{bin,sbin,usr/bin,usr/sbin,proc,sys,dev,tmp,out,etc,root,kvmhost,lib/modules}
[ -x "$ROOT/bin/busybox" ] || die_host "busybox-static:arm64 missing from $CACHE/sysroot"
aarch64-linux-gnu-gcc -O2 -static -Wall -Wextra -Werror -o "$ROOT/usr/bin/kvmexits-arm64" \
  "$HERE/guest/kvmexits-arm64.c" || die_host "could not build guest/kvmexits-arm64.c"
if [ -n "$EXITSCOPE_BIN" ]; then cp -L "$EXITSCOPE_BIN" "$ROOT/usr/bin/exitscope"; fi
# virtio_mmio (the virt board's transport) and virtio_blk, after their dependencies.
M=$CACHE/kernel/lib/modules/$KVER
ORDER=()
add_module() {
  local ko dep
  ko=$(find "$M" -name "$1.ko" | head -1)
  [ -n "$ko" ] || die_host "module $1 not in linux-image-$KVER"
  for dep in $(modinfo -F depends "$ko" | tr ',' ' '); do add_module "$dep"; done
  case " ${ORDER[*]} " in *" $1.ko "*) ;; *) cp "$ko" "$ROOT/lib/modules/"; ORDER+=("$1.ko") ;; esac
}
add_module virtio_mmio
add_module virtio_blk
printf '%s\n' "${ORDER[@]}" > "$ROOT/modules.load"
cp "$HERE/guest/init.sh" "$ROOT/init"
cp "$HERE/../kvmhost-common/save-symbols.sh" "$ROOT/kvmhost/save-symbols.sh"
cp "$SCRIPT" "$ROOT/kvmhost/script.sh"
for f in ${FILES[@]+"${FILES[@]}"}; do cp "$f" "$ROOT/kvmhost/"; done
chmod 0755 "$ROOT/init"
(cd "$ROOT" && find . | LC_ALL=C sort | cpio -o -H newc --owner=0:0 --quiet) | gzip -1 > "$WORK/initramfs.cpio.gz"
cp "$CACHE/kernel/boot/vmlinuz-$KVER" "$WORK/vmlinuz"
T_INITRAMFS=$(now)
log "initramfs $(du -h "$WORK/initramfs.cpio.gz" | cut -f1) for kernel $KVER in $(secs "$T_START" "$T_INITRAMFS")s"

# ------------------------------------------------------------------ QEMU
DISK=$WORK/out.img
CONSOLE=$OUT/console.log
SCRIPT_TIMEOUT=$(( TIMEOUT > 180 ? TIMEOUT - 90 : TIMEOUT / 2 ))
CMDLINE="console=ttyAMA0 panic=-1 rdinit=/init quiet kvmhost.timeout=$SCRIPT_TIMEOUT"
# A wedged or silent guest kernel is stopped and booted again, --retries times; its console and its
# vCPUs' registers stay in OUT (tools/kvmhost-common/watchdog.sh, the same guard as tools/kvmhost/).
NAME=kvmhost-arm64
# shellcheck source=../kvmhost-common/watchdog.sh
. "$HERE/../kvmhost-common/watchdog.sh"
watchdog_init
start_qemu() {  # $1: the monitor socket
  truncate -s 0 "$DISK"; truncate -s "${DISK_MB}M" "$DISK"
  log "booting: qemu-system-aarch64 -M virt,virtualization=on,gic-version=3 -cpu max -smp $SMP -m $MEM" \
    "(timeout ${TIMEOUT}s, stall ${STALL}s)"
  timeout --signal=KILL "$TIMEOUT" qemu-system-aarch64 \
    -M virt,virtualization=on,gic-version=3 -cpu max -accel tcg,thread=multi -smp "$SMP" -m "$MEM" \
    -kernel "$WORK/vmlinuz" -initrd "$WORK/initramfs.cpio.gz" -append "$CMDLINE" \
    -drive file="$DISK",format=raw,if=none,id=out -device virtio-blk-device,drive=out \
    -nic none -display none -monitor unix:"$1",server,nowait -serial file:"$CONSOLE" \
    -no-reboot </dev/null >"$WORK/qemu.stderr" 2>&1 &
  QEMU_PID=$!
}
boot_with_retries
T_END=$(now)

# ------------------------------------------------------------------ results
mkdir -p "$OUT/guest"
if tar -tf "$DISK" >/dev/null 2>&1; then tar -xf "$DISK" -C "$OUT/guest"; fi
rm -f "$DISK"
STATUS=$OUT/guest/kvmhost-status.txt
# Boot time: QEMU start to /init (the guest's uptime when /init began, from its status file).
BOOT_S=$(sed -n 's/^init uptime=\([0-9.]*\)$/\1/p' "$STATUS" 2>/dev/null | head -1 || true)  # no status file: a wedged boot
echo "qemu_rc=$QEMU_RC packages_s=$(secs "$T_START" "$T_DEBS") initramfs_s=$(secs "$T_DEBS" "$T_INITRAMFS")" \
  "guest_uptime_at_init_s=${BOOT_S:-?} qemu_wall_s=$(secs "$T_INITRAMFS" "$T_END") smp=$SMP mem=$MEM" \
  "kernel=$KVER stalled=$STALLED boots=$BOOTS wedged_boots=$((WEDGED_BOOTS + WEDGED))" > "$OUT/host-run.txt"
fail() {
  echo "kvmhost-arm64: error: $1" >&2
  echo "kvmhost-arm64: guest console ($CONSOLE), last 60 lines:" >&2
  tail -n 60 "$CONSOLE" | sed 's/^/  | /' >&2
  [ -s "$WORK/qemu.stderr" ] && sed 's/^/  qemu: /' "$WORK/qemu.stderr" >&2
  exit 1
}
if [ "$WEDGED" = 1 ]; then fail "guest kernel wedged in every one of $BOOTS boots (soft lockup over ${WEDGED_S}s)"; fi
if [ "$STALLED" = 1 ]; then fail "guest stalled: no console output for ${STALL}s"; fi
if [ "$QEMU_RC" = 137 ] || [ "$QEMU_RC" = 124 ]; then fail "QEMU timed out after ${TIMEOUT}s"; fi
if [ "$QEMU_RC" != 0 ]; then fail "QEMU exited with status $QEMU_RC"; fi
[ -s "$STATUS" ] || fail "the guest returned no results (kernel panic or no /dev/vda?)"
if grep -q '^fail: ' "$STATUS"; then fail "guest: $(grep -m1 '^fail: ' "$STATUS" | cut -c7-)"; fi
grep -qx 'script ok' "$STATUS" || fail "the guest did not finish the script"
log "ok: $(cat "$OUT/host-run.txt")"
