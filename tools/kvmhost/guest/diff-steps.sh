#!/bin/sh
# diff-steps.sh DIR — inside the kvmhost guest: the before/after pairs `exitscope diff` is checked on
# (tests/check_diff.py), each one bench test recorded alone by `trace-cmd record -e kvm`, which starts
# the workload once it traces:
#   dr_burst_guestdbg.dat / dr_burst.dat          every DR access exits vs only the burst's first
#   mmio_user.dat / mmio_ioeventfd.dat            an MMIO store handed to the VMM vs an ioeventfd
#   rdmsr_to_user.dat / rdmsr_tsc_deadline.dat    an RDMSR filtered to the VMM vs one KVM answers
# Each run's bench JSON is <test>.json, trace-cmd's exit status <test>.rc.
set -eu
DIR=$1
mkdir -p "$DIR"
N=40
for t in dr_burst_guestdbg dr_burst mmio_user mmio_ioeventfd rdmsr_to_user rdmsr_tsc_deadline; do
  rc=0
  trace-cmd record -e kvm -b 8192 -o "$DIR/$t.dat" \
    sh -c "exitscope bench --test $t --iterations $N --json > '$DIR/$t.json'" > "$DIR/$t-record.log" 2>&1 || rc=$?
  echo $rc > "$DIR/$t.rc"
  echo "diff-steps: $t recorded (rc $rc)" >&2
done
