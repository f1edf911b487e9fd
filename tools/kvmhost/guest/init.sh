#!/bin/sh
# /init of the kvmhost initramfs (busybox sh). Brings up a KVM host inside the QEMU TCG guest
# (kvm_amd on the emulated SVM CPU), runs /kvmhost/script.sh with cwd /out, writes /out as a tar
# archive to the raw virtio disk /dev/vda and powers off. Every step leaves a KVMHOST marker on the
# console and in /out/kvmhost-status.txt; tools/kvmhost/run.sh reads them to say what went wrong.
export PATH=/bin:/sbin:/usr/bin:/usr/sbin HOME=/root OUT=/out KVMHOST=1
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tracefs tracefs /sys/kernel/tracing
mount -t debugfs debugfs /sys/kernel/debug
mount -t tmpfs -o size=75% tmpfs /out
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
grep -m1 '^flags' /proc/cpuinfo > /out/cpuinfo-flags.txt
modprobe virtio_pci 2>/dev/null; modprobe virtio_blk 2>/dev/null
[ -b /dev/vda ] || status "warning: no /dev/vda: results cannot be returned"
if ! grep -qw svm /proc/cpuinfo; then status "fail: no svm flag in /proc/cpuinfo"; finish; fi
if ! modprobe kvm_amd > /out/modprobe.txt 2>&1 || ! grep -q '^kvm_amd ' /proc/modules; then
  cat /out/modprobe.txt
  dmesg | grep -iE 'kvm|svm' | tail -20
  status "fail: kvm_amd not loaded"; finish
fi
status "kvm_amd loaded"
for p in /sys/module/kvm_amd/parameters/*; do echo "$(basename "$p")=$(cat "$p")"; done > /out/kvm_amd-params.txt
if [ ! -c /dev/kvm ]; then status "fail: /dev/kvm missing"; finish; fi
status "dev_kvm present"
sh /kvmhost/save-symbols.sh  # for a wedged boot (tools/kvmhost-common/save-symbols.sh)
save
cd /out
status "script start uptime=$(cut -d' ' -f1 /proc/uptime)"
# busybox sh has no PIPESTATUS: the script's status travels through a file.
{ timeout "$SCRIPT_TIMEOUT" sh -e /kvmhost/script.sh 2>&1; echo $? > /tmp/script-rc; } | tee /out/script.log
rc=$(cat /tmp/script-rc)
status "script end uptime=$(cut -d' ' -f1 /proc/uptime)"
# timeout(1) exits 124 when it had to stop the script (busybox: 143 after SIGTERM).
case "$rc" in
  0) status "script ok" ;;
  124|143) status "fail: script timed out after ${SCRIPT_TIMEOUT}s (rc=$rc)" ;;
  *) status "fail: script exited with rc=$rc" ;;
esac
finish
