#!/usr/bin/env python3
"""check_clocks.py CHECK OUT — one kvmhost CTest check over what guest/clocks-steps.sh left in
OUT/guest/clocks (issue 12, clocks): the same `exitscope bench` workload recorded with trace-cmd's
-C x86-tsc (TSC cycles) and in ns.

  clocks_cycles_labelled  the x86-tsc trace is reported in cycles: JSON time_unit "cycles", the text's
                          warning line, no s/ns unit in its table; advise refuses it with a hint
  clocks_tsc_khz_agrees   ONE run recorded at once with -C x86-tsc (trace-cmd) and in ns (exitscope
                          record, clock local): its kvm_exit stamps map cycles to ns at the guest
                          kernel's tsc_khz (from its boot log) within 2 %, and dump --tsc-khz turns
                          them into ns that run with the local clock's within 2 %; exit by exit, the
                          per-reason means agree within 2 % (or 1.5 us) once the one offset all
                          reasons share is taken out (each event is written to the second buffer
                          microseconds after the first under TCG) and the few exits whose two writes
                          were torn apart by the scheduler (> 50 us, at most 1 %) are left out.
                          The report's own means are printed. A second run under trace-cmd's default clock is in ns with
                          the same exit counts (its times drift with TCG's speed: printed, not checked).
                          trace-cmd's own -C tsc2nsec needs a stable TSC (not under TCG): checked if made.

Every measured ratio is printed, so the CTest log shows how close the clocks are under TCG.
"""
import json
import os
import re
import subprocess
import sys

# Reasons with fewer timed exits than this have means too noisy to compare.
MIN_EXITS = 100
# The same exits in two clocks: only the conversion differs.
SAME_RUN_TOLERANCE = 0.02
# Two recorders write each event to two buffers one after the other: under TCG the second write
# comes microseconds later, and by a different amount for kvm_exit and kvm_entry (measured: 5.9 us
# for every reason). That constant is taken out of the per-reason means, and must stay below this.
MAX_WRITE_OFFSET_NS = 20000
# ... and it is not quite the same for every reason: measured -2.5 to -3.7 us in one boot, and -3.7
# (cpuid, hypercall) vs -6.0 us (hlt, which goes out to the VMM) in another. A mean may differ by
# this much more where 2 % of it is less. A wrong conversion rate is still caught: the kvm_exit
# stamps' pace against the local clock must be within 2 % (above), and a rate 3 % off fails it.
WRITE_JITTER_NS = 5000
# An exit whose two writes are this far apart in one buffer and not the other was torn apart by the
# scheduler (seen: 2 of 1,222 exits, 4.6 and 6.0 ms); it says nothing about the clocks.
TORN_WRITE_NS = 50000

failures = []


def expect(cond, what):
    if not cond:
        failures.append(what)


def exitscope(*args, check=True):
    binary = os.environ.get("EXITSCOPE_BIN", "exitscope")
    r = subprocess.run([binary, *args], capture_output=True, text=True)
    if check and r.returncode not in (0, 65):
        raise ValueError(f"exitscope {' '.join(args)}: rc {r.returncode}: {r.stderr}")
    return r


def report(*args):
    return json.loads(exitscope("report", "--json", *args).stdout)


def means(doc):
    return {r["reason"]: (r["timed_count"], r["mean_ns"]) for r in doc["groups"][0]["reasons"]
            if r["timed_count"] >= MIN_EXITS}


def compare(what, got, want, tolerance=None):
    """Prints each reason's means; with a tolerance, they must agree within it once the one offset
    all reasons share (the median difference) is taken out."""
    common = sorted(set(got) & set(want))
    expect(common, f"{what}: no reason with >= {MIN_EXITS} timed exits in both ({sorted(got)} / {sorted(want)})")
    if not common:
        return
    diffs = sorted(got[r][1] - want[r][1] for r in common)
    offset = diffs[len(diffs) // 2]
    for reason in common:
        g, w = got[reason][1], want[reason][1]
        print(f"{what}: {reason}: {g:.0f} vs {w:.0f} ns ({got[reason][0]} / {want[reason][0]} exits), "
              f"ratio {g / w:.4f}, difference {g - w:.0f} ns; less the common {offset:.0f} ns: "
              f"ratio {g / (w + offset):.4f}")
        if tolerance is not None:
            expect(abs(g - (w + offset)) <= max(tolerance * (w + offset), WRITE_JITTER_NS),
                   f"{what}: {reason} mean {g:.0f} vs {w:.0f} ns (+ {offset:.0f} common), off by "
                   f"{100 * abs(g / (w + offset) - 1):.2f} % (> {100 * tolerance:.0f} % and > {WRITE_JITTER_NS} ns)")
    if tolerance is not None:
        # The offset is the second buffer's write, microseconds under TCG: not a rate.
        expect(abs(offset) <= MAX_WRITE_OFFSET_NS, f"{what}: common offset {offset:.0f} ns")


def exit_stamps(path, key, *args):
    return [json.loads(l)[key] for l in exitscope("dump", "--json", "-e", "kvm_exit", *args, path).stdout.splitlines()
            if l.strip()]


def exit_durations(path, *args):
    """(exit_reason, exit->entry time) per exit of the vCPU thread, in file order (dump --json)."""
    out, open_exit = [], None
    for line in exitscope("dump", "--json", "-e", "kvm_exit", "-e", "kvm_entry", *args, path).stdout.splitlines():
        if not line.strip():
            continue
        j = json.loads(line)
        if j["event"] == "kvm_exit":
            open_exit = (j["fields"]["exit_reason"], j["ts_ns"])
        elif open_exit:
            out.append((open_exit[0], j["ts_ns"] - open_exit[1]))
            open_exit = None
    return out


def slope(xs, ys):
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)


def read(path):
    with open(path, errors="replace") as f:
        return f.read()


def tsc2nsec_ns_per_cycle(path):
    """mult / 2^shift of the file's TSC2NSEC option, as `trace-cmd dump --options` prints it."""
    r = subprocess.run(["trace-cmd", "dump", "--options", "-i", path], capture_output=True, text=True)
    m = re.search(r"TSC2NSEC.*?\n\s*(\d+)\s+(\d+)\s+(\d+)", r.stdout + r.stderr, re.S)
    if not m:
        m = re.search(r"multiplier\s+(\d+).*?shift\s+(\d+)", r.stdout + r.stderr, re.S)
    return None if not m else int(m.group(1)) / 2 ** int(m.group(2))


def check(name, out):
    d = os.path.join(out, "guest", "clocks")
    tsc, local = os.path.join(d, "tsc.dat"), os.path.join(d, "local.dat")
    khz = int(read(os.path.join(d, "tsc-khz.txt")).strip() or 0)
    print(f"guest tsc_khz {khz} (from: {read(os.path.join(d, 'dmesg-tsc.txt')).strip()!r}), "
          f"clocksource {read(os.path.join(d, 'clocksource.txt')).strip()}")
    expect(read(os.path.join(d, "tsc-record.rc")).strip() == "0", "trace-cmd record -C x86-tsc failed")
    if name == "clocks_cycles_labelled":
        doc = report(tsc)
        expect(doc["context"]["clock"] == "x86-tsc", f"clock {doc['context']['clock']!r}, want x86-tsc")
        expect(doc["context"]["time_unit"] == "cycles", f"time_unit {doc['context']['time_unit']!r}")
        expect(doc["totals"]["timed_exits"] > 0, "no timed exits in tsc.dat")
        text = exitscope("report", tsc).stdout
        expect("warning: clock x86-tsc: times are TSC cycles" in text, f"no cycles warning:\n{text[:600]}")
        table = text[text.find("REASON"):text.find("\n\n", text.find("REASON"))]
        expect(not re.search(r"\d(ns|us|ms|s)\b", table), f"a time unit in a cycles table:\n{table}")
        expect("cyc" in table, f"no cycle unit in the table:\n{table}")
        adv = exitscope("advise", tsc, check=False)
        expect(adv.returncode == 64 and "--tsc-khz" in adv.stderr, f"advise on cycles: rc {adv.returncode} {adv.stderr!r}")
    elif name == "clocks_tsc_khz_agrees":
        expect(khz > 0, "no TSC rate in the guest's boot log")
        conv = report("--tsc-khz", str(khz), tsc)
        expect(conv["context"]["time_unit"] == "ns", f"--tsc-khz: time_unit {conv['context']['time_unit']!r}")
        same = report(local)
        expect(same["context"]["time_unit"] == "ns" and same["context"]["clock"] == "local",
               f"exitscope record's trace: clock {same['context']['clock']!r}")
        # The same exits' stamps in both clocks: cycles per ns is the TSC rate.
        cyc, ns = exit_stamps(tsc, "ts_cycles"), exit_stamps(local, "ts_ns")
        expect(len(cyc) == len(ns) > MIN_EXITS, f"kvm_exit: {len(cyc)} in tsc.dat, {len(ns)} in local.dat")
        if len(cyc) == len(ns) > MIN_EXITS:
            rate = slope(ns, cyc) * 1e6  # kHz
            print(f"kvm_exit stamps: {rate:.0f} cycles per ms over {(ns[-1] - ns[0]) / 1e9:.3f} s, "
                  f"tsc_khz {khz}: ratio {rate / khz:.5f}")
            expect(abs(rate / khz - 1) <= SAME_RUN_TOLERANCE, f"TSC rate {rate:.0f} kHz vs tsc_khz {khz}")
            # What exitscope makes of them with --tsc-khz: the local clock's ns, at the same pace.
            conv_ns = exit_stamps(tsc, "ts_ns", "--tsc-khz", str(khz))
            pace = slope(ns, conv_ns)
            print(f"kvm_exit stamps with --tsc-khz {khz}: {pace:.5f} ns per local ns")
            expect(abs(pace - 1) <= SAME_RUN_TOLERANCE, f"--tsc-khz stamps run at {pace:.5f} x the local clock")
        # The report's per-reason means, for the log: a mean of 400 exits moves by microseconds when one
        # exit's two buffer writes are milliseconds apart (the writer descheduled between them).
        compare("report means, x86-tsc --tsc-khz vs local (same run)", means(conv), means(same))
        # Exit by exit: the same exits' times in both clocks, less the few whose two writes were torn
        # apart, per reason.
        a, b = exit_durations(tsc, "--tsc-khz", str(khz)), exit_durations(local)
        expect(len(a) == len(b) and all(x[0] == y[0] for x, y in zip(a, b)),
               f"the two recordings hold different exits ({len(a)} / {len(b)})")
        kept = [(x[0], x[1], y[1]) for x, y in zip(a, b) if abs(x[1] - y[1]) <= TORN_WRITE_NS]
        torn = len(a) - len(kept)
        print(f"exits paired one to one: {len(a)}; {torn} whose two buffer writes differ by > {TORN_WRITE_NS} ns left out")
        # Under single-threaded TCG (run.sh's default since 2026-12-02) one host thread runs both
        # vCPUs in turn, so a writer is descheduled between its two writes more often: 14 of 1,230
        # in a local boot that day. A wrong conversion moves every exit, not a few percent.
        expect(torn <= max(1, len(a) * 5 // 100), f"{torn} of {len(a)} exits differ by > {TORN_WRITE_NS} ns between buffers")
        by = {}
        for reason, c, l in kept:
            by.setdefault(reason, []).append((c, l))
        paired = {}
        for reason, v in by.items():
            if len(v) >= MIN_EXITS:
                paired[hex(reason)] = (len(v), sum(c for c, _ in v) / len(v))
        paired_local = {hex(r): (len(v), sum(l for _, l in v) / len(v)) for r, v in by.items() if len(v) >= MIN_EXITS}
        compare("per-exit means, x86-tsc --tsc-khz vs local (same run)", paired, paired_local, SAME_RUN_TOLERANCE)
        if read(os.path.join(d, "default-record.rc")).strip() == "0":
            other = report(os.path.join(d, "default.dat"))
            expect(other["context"]["time_unit"] == "ns", f"default clock: {other['context']['time_unit']!r}")
            for r in ("cpuid", "hypercall", "hlt"):
                a, b = means(conv).get(r, (0,))[0], means(other).get(r, (0,))[0]
                expect(a == b > 0, f"{r}: {a} timed exits in the x86-tsc run, {b} in the default-clock run")
            compare("x86-tsc --tsc-khz vs default clock (another run)", means(conv), means(other))
        else:
            failures.append("trace-cmd record (default clock) failed: " + read(os.path.join(d, "default-record.log"))[-400:])
        t2n = os.path.join(d, "tsc2nsec.dat")
        if read(os.path.join(d, "tsc2nsec-record.rc")).strip() == "0":
            per_cycle = tsc2nsec_ns_per_cycle(t2n)
            if per_cycle:
                ratio = per_cycle / (1e6 / khz)
                print(f"trace-cmd TSC2NSEC {per_cycle:.6f} ns/cycle vs --tsc-khz {1e6 / khz:.6f}: ratio {ratio:.4f}")
                expect(abs(ratio - 1) <= SAME_RUN_TOLERANCE, f"TSC2NSEC and tsc_khz differ by {100 * abs(ratio - 1):.2f} %")
            ours = report(t2n)
            expect(ours["context"]["time_unit"] == "ns", f"tsc2nsec.dat: time_unit {ours['context']['time_unit']!r}")
        else:
            print("trace-cmd -C tsc2nsec failed here: " + read(os.path.join(d, "tsc2nsec-record.log"))[-300:])
    else:
        failures.append(f"unknown check {name}")


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        check(sys.argv[1], sys.argv[2])
    except (OSError, ValueError, KeyError, IndexError, json.JSONDecodeError) as e:
        failures.append(f"{type(e).__name__}: {e}")
    for f in failures:
        print(f"FAIL {sys.argv[1]}: {f}")
    if not failures:
        print(f"ok {sys.argv[1]}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
