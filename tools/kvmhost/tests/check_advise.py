#!/usr/bin/env python3
"""check_advise.py CHECK OUT — one kvmhost check of `exitscope advise` over what advise-suite.sh
recorded in OUT/guest/advise (one trace.dat per `exitscope bench --test T` workload).

Each workload was chosen to produce one advisor pattern, or to be a near miss that must not be flagged.
Exit times under QEMU TCG mean nothing; the checks are about which patterns are recognised, on which
address / MSR, and with how many exits (the bench's iteration count is the oracle).
"""
import json
import os
import subprocess
import sys

failures = []


def expect(cond, what):
    if not cond:
        failures.append(what)


def advise(out, test):
    path = os.path.join(out, "guest", "advise", test + ".dat")
    r = subprocess.run([os.environ["EXITSCOPE_BIN"], "advise", "--json", path], capture_output=True, text=True)
    if r.returncode not in (0, 65):
        failures.append(f"advise {test}: exit {r.returncode}: {r.stderr.strip()}")
        return None
    return json.loads(r.stdout)


def finding(doc, rule):
    return next((f for f in doc["findings"] if f["id"] == rule), None)


def iterations(out):
    with open(os.path.join(out, "guest", "advise", "iterations.txt")) as f:
        return int(f.read())


def check_flagged(out, test, rule, evidence_key=None, evidence_text=None):
    doc = advise(out, test)
    if doc is None:
        return
    n = iterations(out)
    f = finding(doc, rule)
    expect(f is not None, f"{test}: rule {rule} not flagged; findings {[x['id'] for x in doc['findings']]}")
    if f is None:
        return
    expect(f["exits"] >= n, f"{test}: {rule} matched {f['exits']} exits, fewer than the {n} iterations")
    if evidence_key:
        got = f["evidence"].get(evidence_key, "")
        expect(evidence_text in got, f"{test}: {rule} evidence {evidence_key!r} = {got!r}, wanted {evidence_text!r}")


def check_not_flagged(out, test, rules):
    doc = advise(out, test)
    if doc is None:
        return
    ids = [x["id"] for x in doc["findings"]]
    for r in rules:
        expect(r not in ids, f"{test}: rule {r} flagged but the workload has no such pattern ({ids})")


# arch/x86/include/asm/page_64_types.h __START_KERNEL_map + CONFIG_PHYSICAL_START (Debian 6.1): where
# _text is linked; KASLR moves it by a multiple of CONFIG_PHYSICAL_ALIGN (2 MiB).
LINK_TEXT = 0xffffffff81000000
KASLR_ALIGN = 0x200000


def check_real_kallsyms(out):
    """The kvmhost kernel's /proc/kallsyms (KASLR on) against its link-address map: exitscope must
    find the slide the kernel really used over every shared symbol."""
    d = os.path.join(out, "guest", "advise")
    kallsyms = os.path.join(d, "kallsyms.txt")
    lines = [l.split() for l in open(kallsyms) if l.strip()]
    text = next(int(f[0], 16) for f in lines if len(f) >= 3 and f[2] == "_text")
    slide = text - LINK_TEXT
    expect(slide % KASLR_ALIGN == 0, f"KASLR slide {slide:#x} is not a 2 MiB multiple")
    mapped = os.path.join(d, "System.map.derived")
    with open(mapped, "w") as m:
        for f in lines:
            if len(f) == 3 and int(f[0], 16) >= LINK_TEXT + slide:  # core kernel lines only
                m.write(f"{int(f[0], 16) - slide:016x} {f[1]} {f[2]}\n")
    r = subprocess.run([os.environ["EXITSCOPE_BIN"], "report", "--by", "rip", "--json", "--guest-kallsyms", kallsyms,
                        "--guest-system-map", mapped, os.path.join(d, "cpuid.dat")], capture_output=True, text=True)
    expect(r.returncode in (0, 65), f"report --by rip with real kallsyms: exit {r.returncode}: {r.stderr.strip()}")
    if r.returncode in (0, 65):
        sym = json.loads(r.stdout)["symbols"]
        expect(f"moved by {slide:#x}" in sym, f"pair slide not {slide:#x}: {sym}")
        expect("functions" in sym and len(lines) > 50000, f"real kallsyms too small or unread: {sym}")


def main():
    check, out = sys.argv[1], sys.argv[2]
    n = iterations(out)
    if check == "mmio_doorbell":
        check_flagged(out, "mmio_user", "vmm-doorbell", "addresses", f"MMIO 0xd0000000 ×{n}")
    elif check == "pio_doorbell":
        check_flagged(out, "outl_to_user", "vmm-doorbell", "addresses", f"port 0xf2 ×{n}")
    elif check == "vmm_halt":
        check_flagged(out, "hlt", "vmm-halt")
    elif check == "tsc_deadline":
        check_flagged(out, "wrmsr_tsc_deadline", "timer", "registers", "IA32_TSC_DEADLINE (0x6e0)")
    elif check == "msr_loop":
        # KVM hands the filtered WRMSR to the VMM and traces no kvm_msr for it: named by the KVM_EXIT.
        check_flagged(out, "wrmsr_to_user", "msr", "registers", f"KVM_EXIT_X86_WRMSR, index not traced) ×{n}")
    elif check == "real_kallsyms":
        check_real_kallsyms(out)
    elif check == "not_flagged":
        # KVM switches DRs lazily: one DR exit per run, never a burst.
        check_not_flagged(out, "mov_to_dr7", ["dr-burst", "vmm-doorbell", "msr", "timer", "vmm-halt"])
        # An ioeventfd doorbell stays in the kernel: exactly what the doorbell rule recommends.
        check_not_flagged(out, "mmio_ioeventfd", ["vmm-doorbell", "vmm-halt"])
        check_not_flagged(out, "cpuid", ["vmm-doorbell", "vmm-halt", "msr", "timer", "dr-burst", "ipi", "pmu"])
    else:
        print(f"unknown check {check}", file=sys.stderr)
        return 2
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
