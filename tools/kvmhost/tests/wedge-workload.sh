#!/bin/sh
# wedge-workload.sh — inside the kvmhost guest, for tools/kvmhost/wedge-study.sh: a short cut of the
# suite boot's load that wedged emulated kernels on 2026-12-01 (trace-cmd and perf recording every
# KVM event of the whole bench on both vCPUs, then exitscope's own tracefs reader during a CPUID
# storm), ~30-60 s of guest time.
set -eu
sh /kvmhost/record-dual.sh dual exitscope bench --iterations 25 --json
exitscope report dual/trace.dat > dual/report.txt
exitscope top --mode tracefs -d 0.5 -n 6 --json > top.json &
TOP=$!
sleep 1
exitscope bench --test cpuid --iterations 5000 --json > cpuid.json
wait $TOP
rm -f dual/trace.dat dual/perf.data
echo "wedge-workload: done"
