#!/usr/bin/env python3
"""check_host.py DIR — checks a tools/hostkvm/record-bench.sh recording (or samples/bench-pvm).

Whatever the host's KVM (VMX, SVM, or kvm_pvm emulating the guest), the detail events KVM emits for
each bench test are fixed by the test: one kvm_cpuid per CPUID, one kvm_pio per port access, one
kvm_msr per in-kernel MSR access, one kvm_userspace_exit per round trip to our VMM. `trace-cmd
report` (the peer) and `exitscope dump` must both read the file `exitscope record` wrote and agree
on every event count; both must match the bench's iterations. On a host that emulates the guest
(bench.json context.emulated_guest), each exiting instruction is one kvm_emulate_insn at its RIP and
there is no kvm_exit; elsewhere `exitscope report` must count the bench's CPUIDs as cpuid exits.
Prints "ok" or FAIL lines; "skipped: why" (status 77, ctest's SKIP_RETURN_CODE) when record-bench.sh
could not run here.
"""
import collections
import json
import os
import re
import subprocess
import sys

# KVM_EXIT_* (include/uapi/linux/kvm.h).
KVM_EXIT_IO, KVM_EXIT_HLT, KVM_EXIT_MMIO = 2, 5, 6
KVM_EXIT_X86_RDMSR, KVM_EXIT_X86_WRMSR = 29, 30

failures = []


def expect(cond, what):
    if not cond:
        failures.append(what)


def read(path):
    with open(path, errors="replace") as f:
        return f.read()


def exitscope(*args):
    binary = os.environ.get("EXITSCOPE_BIN", "exitscope")
    return subprocess.run([binary, *args], check=True, capture_output=True, text=True).stdout


def parse_trace_cmd(text):
    """Per event name counts, details keyed as the checks need them, and emulated RIPs."""
    line_re = re.compile(r"^\s*\S.*?-(\d+)\s+\[\d+\]\s+[\d.]+:\s+(kvm_\w+):\s+(.*)$")
    events, details, emulated = collections.Counter(), collections.Counter(), collections.Counter()
    for line in text.splitlines():
        m = line_re.match(line)
        if not m:
            continue
        event, fields = m.group(2), m.group(3)
        events[event] += 1
        if event == "kvm_pio":
            pm = re.match(r"(pio_\w+) at (0x[0-9a-f]+)", fields)
            details[f"{pm.group(1)} {int(pm.group(2), 16):#x}"] += 1
        elif event == "kvm_msr":
            mm = re.match(r"(msr_\w+) ([0-9a-f]+)", fields)
            details[f"{mm.group(1)} {int(mm.group(2), 16):#x}"] += 1
        elif event == "kvm_userspace_exit":
            code = int(re.search(r"[(](\d+)[)]", fields).group(1))
            details[f"user {code}"] += 1
        elif event == "kvm_mmio":
            mm = re.match(r"mmio (\S+) len \d+ gpa (0x[0-9a-f]+)", fields)
            if mm:
                details[f"mmio {mm.group(1)} {int(mm.group(2), 16):#x}"] += 1
        elif event == "kvm_emulate_insn":
            em = re.match(r"[0-9a-f]+:([0-9a-f]+):", fields)
            if em and "FAIL" not in fields:
                emulated[int(em.group(1), 16)] += 1
    return events, details, emulated


def parse_dump(text):
    events, details = collections.Counter(), collections.Counter()
    for line in text.splitlines():
        e = json.loads(line)
        name, f = e["event"], e["fields"]
        events[name] += 1
        if name == "kvm_pio":
            details[f"pio_{'write' if f['rw'] else 'read'} {f['port']:#x}"] += 1
        elif name == "kvm_userspace_exit":
            details[f"user {f['reason']}"] += 1
    return events, details


def check(d):
    bench = json.loads(read(os.path.join(d, "bench.json")))
    tests = {t["name"]: t for t in bench["tests"]}
    n = lambda t: tests[t]["iterations"] if tests.get(t, {}).get("status") == "ok" else 0
    if os.path.exists(os.path.join(d, "record.rc")):
        expect(read(os.path.join(d, "record.rc")).strip() == "0",
               f"record failed: {read(os.path.join(d, 'record.err'))!r}")
    if os.path.exists(os.path.join(d, "state-before.txt")):
        expect(read(os.path.join(d, "state-before.txt")) == read(os.path.join(d, "state-after.txt")),
               "the top-level tracing state changed across the recording")
        left = os.path.join(d, "instance-left.txt")
        if os.path.exists(left):
            failures.append(f"instance left behind: {read(left).strip()}")
    tc_text = subprocess.run(["trace-cmd", "report", "-i", os.path.join(d, "trace.dat")],
                             capture_output=True, text=True)
    expect(tc_text.returncode == 0, f"trace-cmd report failed: {tc_text.stderr!r}")
    events, details, emulated = parse_trace_cmd(tc_text.stdout)
    ours, our_details = parse_dump(exitscope("dump", "--json", os.path.join(d, "trace.dat")))
    expect(sum(events.values()) > 0, "no kvm events in the recording")
    expect(events == ours, f"trace-cmd report and exitscope dump disagree: "
                           f"{dict(events - ours)} vs {dict(ours - events)}")
    for key in ("pio_read 0xf1", "pio_write 0xf2", "user 5"):
        expect(details[key] == our_details[key], f"{key}: trace-cmd {details[key]}, dump {our_details[key]}")
    want = {
        # dr_burst* run a CPUID before each burst of DR accesses.
        "kvm_cpuid": ("cpuid", events["kvm_cpuid"], n("cpuid") + n("dr_burst") + n("dr_burst_guestdbg")),
        "pio_read 0x40": ("inl_from_kernel", details["pio_read 0x40"], n("inl_from_kernel")),
        "pio_read 0xf1": ("inl_from_user", details["pio_read 0xf1"], n("inl_from_user")),
        "pio_write 0xf2": ("outl_to_user", details["pio_write 0xf2"], n("outl_to_user")),
        "pio_write 0xf4": ("pio_ioeventfd", details["pio_write 0xf4"], n("pio_ioeventfd")),
        "msr_read 0x6e0": ("rdmsr_tsc_deadline", details["msr_read 0x6e0"], n("rdmsr_tsc_deadline")),
        "msr_write 0x6e0": ("wrmsr_tsc_deadline", details["msr_write 0x6e0"], n("wrmsr_tsc_deadline")),
        "user HLT": ("hlt", details[f"user {KVM_EXIT_HLT}"], n("hlt")),
        "user MMIO": ("mmio_user", details[f"user {KVM_EXIT_MMIO}"], n("mmio_user")),
        "user RDMSR": ("rdmsr_to_user", details[f"user {KVM_EXIT_X86_RDMSR}"], n("rdmsr_to_user")),
        "user WRMSR": ("wrmsr_to_user", details[f"user {KVM_EXIT_X86_WRMSR}"], n("wrmsr_to_user")),
    }
    for key, (test, got, n_) in want.items():
        expect(got == n_, f"{test}: {got} '{key}' events, bench ran {n_}")
    if bench["context"].get("emulated_guest"):
        expect(events["kvm_exit"] == 0, f"{events['kvm_exit']} kvm_exit on a host that emulates the guest")
        for t in tests.values():
            if t["status"] == "ok":
                expect(emulated[t["exit_rip"]] == t["iterations"],
                       f"{t['name']}: {emulated[t['exit_rip']]} kvm_emulate_insn at {t['exit_rip_hex']}, "
                       f"bench ran {t['iterations']}")
    else:
        doc = json.loads(exitscope("report", "--json", os.path.join(d, "trace.dat")))
        reasons = {r["reason"]: r["count"] for g in doc["groups"][:1] for r in g["reasons"]}
        got = reasons.get("cpuid", reasons.get("CPUID", 0))
        want = n("cpuid") + n("dr_burst") + n("dr_burst_guestdbg")
        expect(got == want, f"exitscope report: {got} cpuid exits, bench ran {want}")


EXIT_SKIPPED = 77  # cmake/hostkvm.cmake SKIP_RETURN_CODE, as record-bench.sh exits


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    skipped = os.path.join(sys.argv[1], "skipped.txt")
    if os.path.exists(skipped):
        print(f"skipped: {read(skipped).strip()}")
        return EXIT_SKIPPED
    try:
        check(sys.argv[1])
    except (OSError, ValueError, KeyError, subprocess.CalledProcessError) as e:
        failures.append(f"{type(e).__name__}: {e}")
    for f in failures:
        print(f"FAIL: {f}")
    if not failures:
        print("ok")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
