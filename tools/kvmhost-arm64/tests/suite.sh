# The kvmhost-arm64 suite, run inside ONE boot by tests/boot-suite.sh (which puts ITERATIONS=N in
# front of it); tests/check_arm64.py checks what it leaves in /out.
sh /kvmhost/record-workload.sh /out/rec kvmexits-arm64 "${ITERATIONS:-200}" 200
# With an arm64 exitscope (label kvmhost-arm64-full): its bench, and one fixed-iteration bench run
# recorded the same way.
if command -v exitscope > /dev/null; then
  exitscope --version > version.txt
  exitscope bench --list > bench-list.txt
  exitscope bench --min-time-ms 5 > bench-table.txt
  exitscope bench --min-time-ms 5 --json > bench.json
  sh /kvmhost/record-workload.sh /out/benchrec exitscope bench --iterations 50 --json
fi
