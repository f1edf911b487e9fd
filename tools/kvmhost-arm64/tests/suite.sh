# The kvmhost-arm64 suite, run inside ONE boot by tests/boot-suite.sh; tests/check_arm64.py checks
# what it leaves in /out. ITERATIONS comes from the fixture (kvmhost.iterations on the command line is
# not used: the script is written by boot-suite.sh with the number in it).
if command -v exitscope > /dev/null; then exitscope --version > version.txt; fi
sh /kvmhost/record-workload.sh /out/rec "${ITERATIONS:-200}"
