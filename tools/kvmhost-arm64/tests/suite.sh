# The kvmhost-arm64 suite, run inside ONE boot by tests/boot-suite.sh; tests/check_arm64.py checks
# what it leaves in /out. ITERATIONS comes from the fixture (kvmhost.iterations on the command line is
# not used: the script is written by boot-suite.sh with the number in it).
if command -v exitscope > /dev/null; then exitscope --version > version.txt; fi
sh /kvmhost/record-workload.sh /out/rec "${ITERATIONS:-200}"
# The arm64 build has no bench guest yet: it must say so (status 69), not crash.
if command -v exitscope > /dev/null; then
  rc=0; exitscope bench > bench.out 2> bench.err || rc=$?
  echo "$rc" > bench.rc
fi
