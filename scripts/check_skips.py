#!/usr/bin/env python3
"""Fails when ctest skipped a test that this machine could have run (issue 13: a skip says why, and CI
fails on an unexpected one).

A test may skip only for a reason listed in EXPECTED, and only when that reason holds here: each
entry is a name pattern, a check of this machine, and the reason the test prints. Everything else
that ctest reports as "(Skipped)" fails the run: a missing ../shared/traces is a failure, never a skip.

  hostkvm.*            this machine's /dev/kvm, tracefs with kvm events and root (record-bench.sh,
                       exit 77); the QEMU harness (label kvmhost) covers the same in CI
  LiveRecordTest.*     a writable tracefs (instances/) for `exitscope record`
  install.capabilities the same, to record with the exporter unit's one capability
  RealKernelSymbols.*  a readable System.map or /proc/kallsyms with real addresses

Usage: scripts/check_skips.py CTEST_OUTPUT   (ctest's stdout; exit 1 and one line per unexpected skip)
       scripts/check_skips.py --self-test
"""
import os
import re
import sys

TRACEFS = "/sys/kernel/tracing"


def no_host_kvm():
    if not os.path.exists("/dev/kvm") or not os.access("/dev/kvm", os.W_OK):
        return "no writable /dev/kvm"
    if not os.path.isdir(TRACEFS + "/instances"):
        return "tracefs is not mounted"
    if not os.path.isdir(TRACEFS + "/events/kvm"):
        return "no kvm trace events"
    if os.geteuid() != 0:
        return "not root"
    return None


def no_writable_tracefs():
    for t in (TRACEFS, "/sys/kernel/debug/tracing"):
        if os.path.isdir(t + "/instances") and os.access(t + "/instances", os.W_OK):
            return None
    return "no writable tracefs"


def no_kernel_symbols():
    # As tests/guest_symbols_test.cc RealKernelMapText: more than 10,000 non-zero core addresses.
    release = os.uname().release
    for path in ("/boot/System.map-" + release, "/proc/kallsyms"):
        try:
            with open(path, errors="replace") as f:
                nonzero = sum(1 for line in f if "[" not in line and not line.startswith("0000000000000000"))
        except OSError:
            continue
        if nonzero > 10000:
            return None
    return "no readable kernel symbols"


EXPECTED = [
    (re.compile(r"^hostkvm\."), no_host_kvm),
    (re.compile(r"^LiveRecordTest\."), no_writable_tracefs),
    (re.compile(r"^install\.capabilities$"), no_writable_tracefs),
    (re.compile(r"^RealKernelSymbols\."), no_kernel_symbols),
]

# ctest: "The following tests did not run:" then "\t 42 - hostkvm.record_bench (Skipped)".
SKIPPED = re.compile(r"^\s*\d+\s+-\s+(\S+)\s+\(Skipped\)\s*$")


def unexpected(ctest_output, expected=EXPECTED):
    bad = []
    for line in ctest_output.splitlines():
        m = SKIPPED.match(line)
        if not m:
            continue
        name = m.group(1)
        for pattern, cannot_run in expected:
            if pattern.search(name):
                why = cannot_run()
                if why is None:
                    bad.append(f"{name}: skipped, but this machine can run it")
                break
        else:
            bad.append(f"{name}: skipped, and no expected reason covers it (see {__file__})")
    return bad


def self_test():
    log = ("The following tests did not run:\n"
           "\t 12 - hostkvm.record_bench (Skipped)\n"
           "\t 30 - AdviseGolden.Hip24TwoVcpu (Skipped)\n"
           "\t 31 - LiveRecordTest.SigintStopsCleanlyAndFinishesTheFile (Skipped)\n")
    rules = [(re.compile(r"^hostkvm\."), lambda: "no /dev/kvm"),
             (re.compile(r"^LiveRecordTest\."), lambda: None)]
    bad = unexpected(log, rules)
    want = ["AdviseGolden.Hip24TwoVcpu: skipped, and no expected reason covers it",
            "LiveRecordTest.SigintStopsCleanlyAndFinishesTheFile: skipped, but this machine can run it"]
    ok = len(bad) == 2 and bad[0].startswith(want[0]) and bad[1] == want[1] and not unexpected("100% tests passed")
    print("check_skips self-test:", "ok" if ok else f"FAILED: {bad}")
    return 0 if ok else 1


def main():
    if len(sys.argv) == 2 and sys.argv[1] == "--self-test":
        return self_test()
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 64
    with open(sys.argv[1], errors="replace") as f:
        bad = unexpected(f.read())
    for b in bad:
        print(f"unexpected skip: {b}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
