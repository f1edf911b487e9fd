#!/bin/busybox sh
# /init of the arm64 kvmhost initramfs (busybox sh, PID 1 of the emulated arm64 machine). Checks that
# KVM came up in VHE mode (/dev/kvm), runs /kvmhost/script.sh with cwd /out, writes /out as a tar
# archive to the raw virtio disk /dev/vda and powers off. Every step leaves a KVMHOST marker on the
# console and in /out/kvmhost-status.txt; tools/kvmhost-arm64/run.sh reads them to say what went wrong.
/bin/busybox --install -s /bin
export PATH=/bin:/sbin:/usr/bin:/usr/sbin HOME=/root OUT=/out KVMHOST=1
export LD_LIBRARY_PATH=/lib/aarch64-linux-gnu:/usr/lib/aarch64-linux-gnu
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tracefs tracefs /sys/kernel/tracing
mount -t debugfs debugfs /sys/kernel/debug
mount -t tmpfs -o size=75% tmpfs /out
mount -t tmpfs tmpfs /tmp
arg() { sed -n "s/.* kvmhost\.$1=\([^ ]*\).*/\1/p" /proc/cmdline; }
status() { echo "$1" >> /out/kvmhost-status.txt; echo "KVMHOST: $1"; }
save() {
  dmesg > /out/dmesg.txt
  if [ -b /dev/vda ]; then tar -C /out -cf /dev/vda . && sync; fi
}
finish() { save; status "done"; poweroff -f; }

SCRIPT_TIMEOUT=$(arg timeout); SCRIPT_TIMEOUT=${SCRIPT_TIMEOUT:-300}
status "init uptime=$(cut -d' ' -f1 /proc/uptime)"
uname -a > /out/uname.txt
for m in $(cat /modules.load); do insmod "/lib/modules/$m" || status "warning: insmod $m failed"; done
[ -b /dev/vda ] || status "warning: no /dev/vda: results cannot be returned"
dmesg | grep -iE 'kvm|EL2|VHE|vgic' > /out/dmesg-kvm.txt || true
if ! grep -q 'VHE mode initialized successfully' /out/dmesg-kvm.txt; then
  cat /out/dmesg-kvm.txt
  status "fail: KVM did not initialise in VHE mode"; finish
fi
status "kvm vhe"
if [ ! -c /dev/kvm ]; then status "fail: /dev/kvm missing"; finish; fi
status "dev_kvm present"
sh /kvmhost/save-symbols.sh  # for a wedged boot (tools/kvmhost-common/save-symbols.sh)
cd /out
status "script start uptime=$(cut -d' ' -f1 /proc/uptime)"
{ timeout "$SCRIPT_TIMEOUT" sh -e /kvmhost/script.sh 2>&1; echo $? > /tmp/script-rc; } | tee /out/script.log
rc=$(cat /tmp/script-rc)
status "script end uptime=$(cut -d' ' -f1 /proc/uptime)"
case "$rc" in
  0) status "script ok" ;;
  124|143) status "fail: script timed out after ${SCRIPT_TIMEOUT}s (rc=$rc)" ;;
  *) status "fail: script exited with rc=$rc" ;;
esac
finish
