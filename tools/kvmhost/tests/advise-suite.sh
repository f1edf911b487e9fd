# advise-suite.sh — runs inside ONE kvmhost boot (tools/kvmhost/run.sh, busybox sh -e, cwd /out):
# records `exitscope bench` workloads chosen to show (or not show) one advisor pattern each, one
# trace.dat per workload; tests/check_advise.py runs `exitscope advise` on them on the host.
#   mmio_user, outl_to_user  → MMIO / PIO doorbells answered by the VMM     (vmm-doorbell)
#   hlt                      → HLT round trips through the VMM              (vmm-halt)
#   wrmsr_tsc_deadline       → TSC_DEADLINE writes                          (timer)
#   wrmsr_to_user            → an MSR loop answered by the VMM              (msr)
#   dr_burst_guestdbg        → 16-access DR bursts that all exit (host guest debugging on) (dr-burst)
#   dr_burst, mov_to_dr7, mmio_ioeventfd, cpuid → patterns that must NOT be flagged
ITER=${ADVISE_ITERATIONS:-200}
mkdir -p advise
for t in mmio_user outl_to_user hlt wrmsr_tsc_deadline wrmsr_to_user dr_burst_guestdbg dr_burst mov_to_dr7 \
    mmio_ioeventfd cpuid; do
  echo "advise: recording $t"
  trace-cmd record -e kvm -b 8192 -o "advise/$t.dat" exitscope bench --test "$t" --iterations "$ITER" --json \
    > "advise/$t.out" 2> "advise/$t.log"
done
echo "$ITER" > advise/iterations.txt
# The booted Debian kernel's own symbols, placed by KASLR: real data for guest-symbol slide inference.
cat /proc/kallsyms > advise/kallsyms.txt
