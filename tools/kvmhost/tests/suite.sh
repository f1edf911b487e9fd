# The kvmhost CTest suite, run inside ONE boot by tests/boot-suite.sh; tests/check_suite.py checks
# what it leaves in /out. Each step writes its own files so a failure still leaves the others.
exitscope --version > version.txt
exitscope bench --list > bench-list.txt
# Every test, iterations growing to a short time goal: table and JSON.
exitscope bench --min-time-ms 5 > bench-table.txt
exitscope bench --min-time-ms 5 --json > bench.json
exitscope bench --test cpuid --test hlt --iterations 20 --compare bench.json > bench-compare.txt
exitscope bench --test cpuid --test hlt --iterations 20 --compare bench.json --json > bench-compare.json
rc=0; exitscope bench --device /dev/no-such-kvm > bench-nokvm.out 2> bench-nokvm.err || rc=$?
echo "$rc" > bench-nokvm.rc
rc=0; exitscope bench --test no_such_test > /dev/null 2> bench-badtest.err || rc=$?
echo "$rc" > bench-badtest.rc
# One fixed-iteration run of every test, recorded by trace-cmd and perf at once.
sh /kvmhost/record-dual.sh /out/rec exitscope bench --iterations 25 --json
# Live: exitscope record + top --json during one bench run; SIGINT, SIGKILL + rerun clean-up.
rc=0; sh /kvmhost/live-steps.sh /out/live || rc=$?
echo "$rc" > live-steps.rc
# Clocks: one bench run recorded in TSC cycles (trace-cmd -C x86-tsc) and in ns at once, then runs
# under the default clock and -C tsc2nsec (tests/check_clocks.py).
rc=0; sh /kvmhost/clocks-steps.sh /out/clocks 2> clocks-steps.err || rc=$?
echo "$rc" > clocks-steps.rc
# Diff: before/after pairs of single bench tests (tests/check_diff.py).
rc=0; sh /kvmhost/diff-steps.sh /out/diff 2> diff-steps.err || rc=$?
echo "$rc" > diff-steps.rc
# Observers (issue 16): top --mode bpf / tracefs / stats on one bench run, bench --observe
# (tests/check_observe.py).
rc=0; sh /kvmhost/observe-steps.sh /out/observe 2> observe-steps.err || rc=$?
echo "$rc" > observe-steps.rc
# Prometheus: a real one scrapes serve during one bench run (tests/check_suite.py live_prometheus).
rc=0; sh /kvmhost/prom-steps.sh /out/prom 2> prom-steps.err || rc=$?; echo "$rc" > prom-steps.rc
