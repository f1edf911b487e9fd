#!/usr/bin/env python3
"""check_suite.py CHECK OUT — one kvmhost CTest check over what boot-suite.sh left in OUT.

The oracles are KVM's own per-vCPU stats (in bench.json) and the peers trace-cmd report / perf script
/ perf kvm stat run on the host over ONE recorded `exitscope bench --iterations N` run (OUT/guest/rec).
Absolute cycle counts under emulation mean nothing: the checks are about behaviour.
"""
import collections
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "kvmhost-common"))
from top_totals import top_totals  # noqa: E402  (the harnesses' shared reading of top --json)

# SVM exit code of CPUID (arch/x86/include/uapi/asm/svm.h SVM_EXIT_CPUID).
SVM_EXIT_CPUID = 0x72

# KVM_EXIT_* userspace exit codes (include/uapi/linux/kvm.h, Linux 6.1).
KVM_EXIT_IO, KVM_EXIT_HLT, KVM_EXIT_MMIO = 2, 5, 6
KVM_EXIT_X86_RDMSR, KVM_EXIT_X86_WRMSR = 29, 30

failures = []


def expect(cond, what):
    if not cond:
        failures.append(what)


def load_json(path):
    with open(path) as f:
        return json.load(f)


def tests_by_name(doc):
    return {t["name"]: t for t in doc["tests"]}


def listed_tests(guest):
    with open(os.path.join(guest, "bench-list.txt")) as f:
        return [l.split()[0] for l in f if l[:1].isalpha()]


class PerRip:
    """Events attributed to the guest RIP of the kvm_exit that caused them (same host thread order)."""

    def __init__(self):
        self.exits = collections.defaultdict(collections.Counter)      # rip -> reason -> n
        self.user = collections.defaultdict(collections.Counter)       # rip -> KVM_EXIT_* -> n
        self.details = collections.defaultdict(collections.Counter)    # rip -> "pio_read at 0x40" -> n
        self.total_exits = 0


def parse_trace_cmd(path):
    out, last = PerRip(), {}
    line_re = re.compile(r"^\s*(\S.*?)-(\d+)\s+\[\d+\]\s+[\d.]+:\s+(kvm_\w+):\s+(.*)$")
    with open(path, errors="replace") as f:
        for line in f:
            m = line_re.match(line)
            if not m:
                continue
            tid, event, fields = m.group(2), m.group(3), m.group(4)
            if event == "kvm_exit":
                em = re.match(r"reason (\S+) rip (0x[0-9a-f]+)", fields)
                rip = int(em.group(2), 16)
                last[tid] = rip
                out.exits[rip][em.group(1)] += 1
                out.total_exits += 1
            elif tid not in last:
                continue
            elif event == "kvm_userspace_exit":
                um = re.search(r"\((\d+)\)", fields)
                out.user[last[tid]][int(um.group(1))] += 1
            elif event == "kvm_pio":
                pm = re.match(r"(pio_\w+) at (0x[0-9a-f]+)", fields)
                out.details[last[tid]][f"{pm.group(1)} at {pm.group(2)}"] += 1
            elif event == "kvm_msr":
                mm = re.match(r"(msr_\w+) ([0-9a-f]+)", fields)
                out.details[last[tid]][f"{mm.group(1)} {mm.group(2)}"] += 1
            elif event == "kvm_mmio":
                mm = re.match(r"mmio (\S+) len \d+ gpa (0x[0-9a-f]+)", fields)
                if mm:
                    out.details[last[tid]][f"mmio {mm.group(1)} {mm.group(2)}"] += 1
    return out


def parse_perf_script(path):
    counts = collections.Counter()  # (reason, rip) -> n
    with open(path, errors="replace") as f:
        for line in f:
            m = re.search(r"kvm:kvm_exit: .*?reason (\S+) rip (0x[0-9a-f]+)", line)
            if m:
                counts[(m.group(1), int(m.group(2), 16))] += 1
    return counts


# What each test must do, per iteration N, on AMD SVM (the harness CPU): the kvm_exit reason at the
# test's RIP as trace-cmd's kvm plugin prints it, and what follows that exit.
def svm_expectations(name, n, at):
    exits, user, details = at.exits, at.user, at.details
    reasons = set(exits) - {"EXIT_INTR"}  # a host interrupt can land on any instruction
    if name == "cpuid":
        expect(exits["EXIT_CPUID"] == n, f"cpuid: {exits['EXIT_CPUID']} EXIT_CPUID at its RIP, want {n}")
    elif name == "vmcall":
        expect(exits["EXIT_VMMCALL"] == n, f"vmcall: {dict(exits)} at its RIP, want {n} EXIT_VMMCALL")
    elif name == "mov_to_dr7":
        # KVM drops DR intercepts after the first access until the next exit (svm.c dr_interception).
        expect(1 <= exits["EXIT_WRITE_DR7"] <= n, f"mov_to_dr7: {dict(exits)}, want 1..{n} EXIT_WRITE_DR7")
        reasons -= {"EXIT_WRITE_DR7"}
    elif name in ("dr_burst", "dr_burst_guestdbg"):
        # The burst's first access (MOV from DR7) exits once per iteration either way: lazily, after the
        # CPUID re-armed the intercepts; with guest debugging, as every access does.
        # A host interrupt taken there re-arms lazily dropped intercepts, so the access exits once more.
        expect(n <= exits["EXIT_READ_DR7"] <= n + exits["EXIT_INTR"],
               f"{name}: {dict(exits)} at its RIP, want {n} EXIT_READ_DR7 (+1 per EXIT_INTR)")
    elif name in ("mov_from_cr8", "mov_to_cr8"):
        pass  # V_TPR: the CPU virtualizes CR8, so only interrupts may land here
    elif name in ("rdmsr_tsc_deadline", "wrmsr_tsc_deadline"):
        op = "msr_read" if name.startswith("rd") else "msr_write"
        expect(exits["EXIT_MSR"] == n, f"{name}: {exits['EXIT_MSR']} EXIT_MSR, want {n}")
        expect(details[f"{op} 6e0"] == n, f"{name}: kvm_msr {dict(details)}, want {n} '{op} 6e0'")
        expect(sum(user.values()) == 0, f"{name}: userspace exits {dict(user)}, want none")
    elif name in ("rdmsr_to_user", "wrmsr_to_user"):
        code = KVM_EXIT_X86_RDMSR if name.startswith("rd") else KVM_EXIT_X86_WRMSR
        expect(exits["EXIT_MSR"] == n, f"{name}: {exits['EXIT_MSR']} EXIT_MSR, want {n}")
        expect(user[code] == n, f"{name}: userspace exits {dict(user)}, want {n} of KVM exit {code}")
    elif name in ("inl_from_kernel", "inl_from_user", "outl_to_user", "pio_ioeventfd"):
        port = {"inl_from_kernel": "pio_read at 0x40", "inl_from_user": "pio_read at 0xf1",
                "outl_to_user": "pio_write at 0xf2", "pio_ioeventfd": "pio_write at 0xf4"}[name]
        to_user = name.endswith("_user")
        expect(exits["EXIT_IOIO"] == n, f"{name}: {exits['EXIT_IOIO']} EXIT_IOIO, want {n}")
        expect(details[port] == n, f"{name}: kvm_pio {dict(details)}, want {n} '{port}'")
        want_user = {KVM_EXIT_IO: n} if to_user else {}
        expect(dict(+user) == want_user, f"{name}: userspace exits {dict(user)}, want {want_user}")
    elif name in ("mmio_user", "mmio_ioeventfd"):
        expect(exits["EXIT_NPF"] >= n, f"{name}: {exits['EXIT_NPF']} EXIT_NPF, want >= {n}")
        want_user = {KVM_EXIT_MMIO: n} if name == "mmio_user" else {}
        expect(dict(+user) == want_user, f"{name}: userspace exits {dict(user)}, want {want_user}")
    elif name == "hlt":
        expect(exits["EXIT_HLT"] == n, f"hlt: {exits['EXIT_HLT']} EXIT_HLT, want {n}")
        expect(dict(+user) == {KVM_EXIT_HLT: n}, f"hlt: userspace exits {dict(user)}, want {n} KVM_EXIT_HLT")
    else:
        failures.append(f"{name}: no expectation written for this test")
    intended = {"cpuid": {"EXIT_CPUID"}, "vmcall": {"EXIT_VMMCALL"}, "mov_to_dr7": set(),
                "dr_burst": {"EXIT_READ_DR7"}, "dr_burst_guestdbg": {"EXIT_READ_DR7"},
                "mov_from_cr8": set(), "mov_to_cr8": set(), "hlt": {"EXIT_HLT"},
                "mmio_user": {"EXIT_NPF"}, "mmio_ioeventfd": {"EXIT_NPF"}}.get(
                    name, {"EXIT_MSR"} if "msr" in name else {"EXIT_IOIO"})
    expect(reasons <= intended, f"{name}: unexpected exit reasons at its RIP: {sorted(reasons - intended)}")


def check(name, out):
    guest = os.path.join(out, "guest")
    rec = os.path.join(guest, "rec")
    if name == "bench_all_tests":
        doc = load_json(os.path.join(guest, "bench.json"))
        expect(doc.get("schema") == "exitscope.bench/1" and doc.get("schema_version") == 1, f"schema {doc.get('schema')}")
        tests = tests_by_name(doc)
        names = listed_tests(guest)
        expect(len(names) >= 16, f"--list shows {len(names)} tests")
        expect(sorted(tests) == sorted(names), f"bench.json tests {sorted(tests)} != --list {names}")
        rips = [t["exit_rip"] for t in doc["tests"]]
        expect(len(set(rips)) == len(rips), "exit RIPs are not distinct")
        with open(os.path.join(guest, "bench-table.txt")) as f:
            table = {l.split()[0]: l.split() for l in f if l.split()}
        for t in doc["tests"]:
            expect(t["status"] == "ok", f"{t['name']}: {t['status']} {t.get('skip_reason', '')}")
            if t["status"] != "ok":
                continue
            expect(t["iterations"] > 0 and t["cycles_per_iter"] > 0 and t["ns_per_iter"] > 0,
                   f"{t['name']}: no measurement {t}")
            row = table.get(t["name"], [])
            expect(len(row) >= 6 and float(row[1]) > 0 and row[5] == t["exit_rip_hex"],
                   f"{t['name']}: table row {row}")
    elif name == "bench_kvm_stats":
        # KVM's own counters over the growing runs: each test caused its exits, and only those.
        for t in load_json(os.path.join(guest, "bench.json"))["tests"]:
            n, s, u, name_ = t["iterations"], t["kvm_stats"], t["userspace_exits"], t["name"]
            want = {
                "cpuid": s["exits"] >= n and u == 0,
                "vmcall": s["hypercalls"] == n and u == 0,
                "mov_to_dr7": 1 <= s["exits"] < n or n < 64,
                # Per iteration a CPUID and the DR burst: lazily one DR exit, with guest debugging 16.
                "dr_burst": 2 * n <= s["exits"] < 4 * n and u == 0,
                "dr_burst_guestdbg": s["exits"] >= 17 * n and u == 0,
                "mov_from_cr8": s["exits"] < n or n < 64,
                "mov_to_cr8": s["exits"] < n or n < 64,
                "rdmsr_tsc_deadline": s["exits"] >= n and u == 0,
                "wrmsr_tsc_deadline": s["exits"] >= n and u == 0,
                "rdmsr_to_user": u == n,
                "wrmsr_to_user": u == n,
                "inl_from_kernel": s["io_exits"] == n and u == 0,
                "inl_from_user": s["io_exits"] == n and u == n,
                "outl_to_user": s["io_exits"] == n and u == n,
                "pio_ioeventfd": s["io_exits"] == n and u == 0 and t["ioeventfd_signals"] == n,
                "mmio_user": s["mmio_exits"] == n and u == n,
                "mmio_ioeventfd": u == 0 and t["ioeventfd_signals"] == n,
                "hlt": s["halt_exits"] == n and u == n,
            }.get(name_, False)
            expect(want, f"{name_}: iterations {n} userspace_exits {u} signals "
                         f"{t['ioeventfd_signals']} stats {s}")
    elif name == "bench_compare":
        doc = load_json(os.path.join(guest, "bench-compare.json"))
        for t in doc["tests"]:
            expect("change_pct" in t and "baseline_cycles_per_iter" in t, f"{t['name']}: no change_pct")
        with open(os.path.join(guest, "bench-compare.txt")) as f:
            text = f.read()
        expect("lower is better" in text, "compare table does not say lower is better")
        for test in ("cpuid", "hlt"):
            expect(re.search(rf"^{test}\s.*[+-]\d+\.\d%$", text, re.M), f"no change column for {test}")
    elif name == "bench_errors":
        with open(os.path.join(guest, "bench-nokvm.rc")) as f:
            expect(f.read().strip() == "69", "missing /dev/kvm must exit 69")
        with open(os.path.join(guest, "bench-nokvm.err")) as f:
            err = f.read()
        expect(err.startswith("error: ") and "\nhint: " in err, f"stderr: {err!r}")
        with open(os.path.join(guest, "bench-badtest.rc")) as f:
            expect(f.read().strip() == "64", "unknown test must exit 64")
    elif name in ("trace_cpuid_rip", "trace_exit_reasons", "perf_agrees"):
        work = tests_by_name(load_json(os.path.join(rec, "workload.out")))
        trace = parse_trace_cmd(os.path.join(rec, "trace-cmd-report.txt"))
        if name == "trace_cpuid_rip":
            t = work["cpuid"]
            got = trace.exits[t["exit_rip"]]["EXIT_CPUID"]
            expect(got == t["iterations"] > 0,
                   f"{got} EXIT_CPUID at rip {t['exit_rip_hex']}, bench ran {t['iterations']}")
        elif name == "trace_exit_reasons":
            for tname, t in work.items():
                svm_expectations(tname, t["iterations"], _At(trace, t["exit_rip"]))
        else:
            perf = parse_perf_script(os.path.join(rec, "perf-script.txt"))
            expect(sum(perf.values()) == trace.total_exits,
                   f"perf script has {sum(perf.values())} kvm_exit, trace-cmd report {trace.total_exits}")
            for t in work.values():
                p = sum(v for (r, rip), v in perf.items() if rip == t["exit_rip"])
                c = sum(trace.exits[t["exit_rip"]].values())
                expect(p == c, f"{t['name']}: perf {p} exits at its RIP, trace-cmd {c}")
            with open(os.path.join(rec, "perf-kvm-stat-report.txt")) as f:
                m = re.search(r"^\s*cpuid\s+(\d+)\s", f.read(), re.M)
            cpuid_all = sum(v["EXIT_CPUID"] for v in trace.exits.values())
            expect(m and int(m.group(1)) == cpuid_all,
                   f"perf kvm stat cpuid samples {m and m.group(1)}, trace-cmd {cpuid_all}")
    elif name in ("report_agrees_with_bench", "dump_cpuid_rip"):
        report_checks(name, rec if os.path.isdir(rec) else out)
    elif name.startswith("live_"):
        live_checks(name, os.path.join(guest, "live"))
    else:
        failures.append(f"unknown check {name}")


def exitscope(*args):
    binary = os.environ.get("EXITSCOPE_BIN", "exitscope")
    return subprocess.run([binary, *args], check=True, capture_output=True, text=True).stdout


def report_checks(name, rec):
    """exitscope's own reader on a recording of `exitscope bench --iterations N` (rec dir or sample)."""
    bench = "workload.out" if os.path.exists(os.path.join(rec, "workload.out")) else "bench.json"
    work = tests_by_name(load_json(os.path.join(rec, bench)))
    trace_dat = os.path.join(rec, "trace.dat")
    if name == "dump_cpuid_rip":
        t = work["cpuid"]
        got = 0
        for line in exitscope("dump", "--json", "-e", "kvm_exit", trace_dat).splitlines():
            f = json.loads(line)["fields"]
            got += f["exit_reason"] == SVM_EXIT_CPUID and f["guest_rip"] == t["exit_rip"]
        expect(got == t["iterations"] > 0,
               f"exitscope dump: {got} CPUID exits at {t['exit_rip_hex']}, bench ran {t['iterations']}")
        return
    doc = json.loads(exitscope("report", "--json", trace_dat))
    reasons = {r["reason"]: r for r in doc["groups"][0]["reasons"]}
    # schema 2: "count" is every exit, "timed_count" those an entry closed (what this check counts).
    count = lambda r: reasons.get(r, {}).get("timed_count", reasons.get(r, {}).get("count", 0))
    n = lambda t: work[t]["iterations"] if t in work and work[t]["status"] == "ok" else 0
    # Only these bench tests cause each of these exit types (dr_burst* run a CPUID per iteration); the
    # bench's syncs are io exits.
    for reason, tests in (("cpuid", ["cpuid", "dr_burst", "dr_burst_guestdbg"]), ("hypercall", ["vmcall"]), ("hlt", ["hlt"]),
                          ("msr", ["rdmsr_tsc_deadline", "wrmsr_tsc_deadline", "rdmsr_to_user",
                                   "wrmsr_to_user"])):
        want = sum(n(t) for t in tests)
        expect(count(reason) == want, f"exitscope report: {count(reason)} {reason} exits, bench ran {want}")
    io_tests = sum(n(t) for t in ("inl_from_kernel", "inl_from_user", "outl_to_user", "pio_ioeventfd"))
    # One sync per run and per VM start; the very last one never re-enters, so it is not timed
    # (the open one is the pair.final_exit_without_entry diagnostic).
    diags = {d["name"]: d["count"] for d in doc.get("diagnostics", [])}
    open_exits = diags.get("pair.final_exit_without_entry", 0)
    expect(open_exits == 1, f"exitscope report: {open_exits} exits left open, want 1 (the last sync)")
    syncs = sum(t.get("runs", 0) for t in work.values()) + 2 - open_exits
    expect(count("io") == io_tests + syncs, f"exitscope report: {count('io')} io exits, want "
                                            f"{io_tests} from the tests + {syncs} syncs")
    expect(count("npf") >= n("mmio_user") + n("mmio_ioeventfd"), f"exitscope report: {count('npf')} npf")
    user_io = reasons.get("io", {}).get("userspace_count", -1)
    want_user_io = n("inl_from_user") + n("outl_to_user") + syncs
    expect(user_io == want_user_io, f"exitscope report: {user_io} io exits to userspace, want {want_user_io}")


def promtool_check(text, what):
    r = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True)
    expect(r.returncode == 0, f"promtool check metrics on {what}: rc {r.returncode} {r.stdout}{r.stderr}")


def read_text(path):
    with open(path, errors="replace") as f:
        return f.read()


def live_checks(name, live):
    """`exitscope record` / `top` on the live harness host (tools/kvmhost/guest/live-steps.sh)."""
    if name == "live_record":
        expect(read_text(os.path.join(live, "record.rc")).strip() == "0",
               f"record exited {read_text(os.path.join(live, 'record.rc')).strip()}: "
               f"{read_text(os.path.join(live, 'record.err'))!r}")
        err = read_text(os.path.join(live, "record.err"))
        m = re.search(r"exitscope record: wrote .*?: (\d+) events", err)
        expect(m and int(m.group(1)) > 0, f"record summary missing or no events: {err!r}")
        expect("lost events" not in err, f"record lost events: {err!r}")
        expect(read_text(os.path.join(live, "top.rc")).strip() == "0",
               f"top exited {read_text(os.path.join(live, 'top.rc')).strip()}: "
               f"{read_text(os.path.join(live, 'top.err'))!r}")
    elif name in ("live_report_agrees_with_bench", "live_dump_cpuid_rip"):
        report_checks(name[len("live_"):], live)
    elif name == "live_trace_cmd_reads_record":
        expect(not os.path.exists(os.path.join(live, "trace-cmd-report.rc")),
               f"trace-cmd report failed: {read_text(os.path.join(live, 'trace-cmd-report.err'))!r}")
        work = tests_by_name(load_json(os.path.join(live, "bench.json")))
        trace = parse_trace_cmd(os.path.join(live, "trace-cmd-report.txt"))
        expect(trace.total_exits > 0, "trace-cmd report shows no kvm_exit in the recording")
        for tname, t in work.items():
            svm_expectations(tname, t["iterations"], _At(trace, t["exit_rip"]))
        # Both readers see the same number of exits in the file.
        ours = sum(1 for l in exitscope("dump", "--json", "-e", "kvm_exit",
                                        os.path.join(live, "trace.dat")).splitlines() if l.strip())
        expect(ours == trace.total_exits, f"exitscope dump {ours} kvm_exit, trace-cmd {trace.total_exits}")
    elif name == "live_top_json":
        work = tests_by_name(load_json(os.path.join(live, "bench.json")))
        bench_pid = int(read_text(os.path.join(live, "bench.pid")))
        intervals, reasons, vm_exits, lost, schemas = top_totals(os.path.join(live, "top.jsonl"), bench_pid)
        expect(intervals >= 2, f"top printed {intervals} intervals")
        expect(schemas == {"exitscope.top/1"}, f"top schemas {schemas}")
        expect(lost == 0, f"top reported {lost} lost events")
        # dr_burst* run a CPUID before each burst.
        for reason, tests in (("cpuid", ("cpuid", "dr_burst", "dr_burst_guestdbg")), ("hlt", ("hlt",)),
                              ("hypercall", ("vmcall",))):
            n = sum(work[t]["iterations"] for t in tests if t in work)
            expect(reasons[reason] == n, f"top: {reasons[reason]} {reason} exits, bench ran {n}")
        want = sum(work[t]["iterations"] for t in ("cpuid", "hlt", "vmcall", "inl_from_user"))
        expect(vm_exits >= want, f"top: {vm_exits} exits of the bench VM (pid {bench_pid}), want >= {want}")
    elif name == "live_serve":
        # `exitscope serve` during the bench: the increase of exitscope_exits_total{reason="cpuid"}
        # between a scrape before and one after equals the bench's CPUID iterations.
        expect(read_text(os.path.join(live, "serve.rc")).strip() == "0",
               f"serve exited {read_text(os.path.join(live, 'serve.rc')).strip()}: "
               f"{read_text(os.path.join(live, 'serve.err'))!r}")
        work = tests_by_name(load_json(os.path.join(live, "bench.json")))
        bench_pid = int(read_text(os.path.join(live, "bench.pid")))

        def cpuid_exits(text, domain=None):
            n = 0
            for m in re.finditer(r'^exitscope_exits_total\{domain="([^"]*)",reason="cpuid"\} (\d+)$', text, re.M):
                if domain is None or m.group(1) == domain:
                    n += int(m.group(2))
            return n
        before = read_text(os.path.join(live, "metrics-before.txt"))
        after = read_text(os.path.join(live, "metrics-after.txt"))
        expect("exitscope_build_info" in before and "exitscope_build_info" in after,
               f"serve did not answer: {before[:200]!r} / {after[:200]!r}")
        n = sum(work[t]["iterations"] for t in ("cpuid", "dr_burst", "dr_burst_guestdbg") if t in work)
        got = cpuid_exits(after) - cpuid_exits(before)
        expect(got == n, f"serve: increase of exits_total{{reason=cpuid}} {got}, bench ran {n} CPUIDs")
        # The bench VMM is named by its process (no -name): "<comm>-<pid>".
        domain = f"exitscope-{bench_pid}"
        expect(cpuid_exits(after, domain) == n, f"serve: domain {domain} has {cpuid_exits(after, domain)} "
               f"cpuid exits, want {n}; vm_info: {re.findall(r'^exitscope_vm_info.*$', after, re.M)}")
        expect(re.search(r'^exitscope_events_lost_total\{cpu="0"\} 0$', after, re.M) is not None,
               "serve: events_lost_total{cpu=0} missing or non-zero")
    elif name == "live_record_names_vms":
        # `exitscope record` stored the bench VMM in a GUEST option: offline report --by vm and
        # report --openmetrics name it as serve did live ("<comm>-<pid>": the bench VMM gives no -name).
        work = tests_by_name(load_json(os.path.join(live, "bench.json")))
        bench_pid = int(read_text(os.path.join(live, "bench.pid")))
        trace = os.path.join(live, "trace.dat")
        doc = json.loads(exitscope("report", "--by", "vm", "--json", trace))
        domain = f"exitscope-{bench_pid}"
        labels = [g["label"] for g in doc["groups"]]
        mine = [g for g in doc["groups"] if g["label"].startswith(f"{domain} (pid {bench_pid}")]
        expect(len(mine) == 1, f"report --by vm: no group '{domain} (pid {bench_pid} …': {labels}")
        n = sum(work[t]["iterations"] for t in ("cpuid", "dr_burst", "dr_burst_guestdbg") if t in work)
        if mine:
            cpuid = sum(r["count"] for r in mine[0]["reasons"] if r["reason"] == "cpuid")
            expect(cpuid == n, f"report --by vm: {domain} has {cpuid} cpuid exits, bench ran {n}")
        om = exitscope("report", "--openmetrics", trace)
        m = re.search(rf'^exitscope_exits_total\{{domain="{domain}",reason="cpuid"\}} (\d+)$', om, re.M)
        expect(m and int(m.group(1)) == n, f"report --openmetrics: domain {domain} cpuid {m and m.group(1)}, want {n}")
        promtool_check(om, "report --openmetrics of the live recording")
        dump = subprocess.run(["trace-cmd", "dump", "--options", "-i", trace], capture_output=True, text=True).stdout
        expect(f"{domain} [Guest name]" in dump, f"trace-cmd dump --options shows no GUEST option {domain}")
    elif name == "live_prometheus":
        # A real Prometheus in the guest scraped serve during one bench run (guest/prom-steps.sh).
        prom = os.path.join(os.path.dirname(live), "prom")
        steps_rc = read_text(os.path.join(os.path.dirname(live), "prom-steps.rc")).strip()
        expect(steps_rc == "0", f"prom-steps.sh exited {steps_rc}: "
               f"{read_text(os.path.join(os.path.dirname(live), 'prom-steps.err'))[-2000:]!r}")
        if steps_rc != "0":
            return  # what it leaves is partial: the message above says why
        stalled = os.path.join(prom, "bench-stalled.err")
        if os.path.exists(stalled):
            print(f"live_prometheus: the bench's guest stalled, the window ran again on a fresh VM: "
                  f"{read_text(stalled).strip()!r}")
        expect(read_text(os.path.join(prom, "serve.rc")).strip() == "0",
               f"serve exited {read_text(os.path.join(prom, 'serve.rc')).strip()}: "
               f"{read_text(os.path.join(prom, 'serve.err'))!r}")
        work = tests_by_name(load_json(os.path.join(prom, "bench.json")))
        bench_pid = int(read_text(os.path.join(prom, "bench.pid")))
        n = work["cpuid"]["iterations"]

        def answer(f):
            doc = load_json(os.path.join(prom, f))
            expect(doc.get("status") == "success", f"{f}: {doc}")
            return doc["data"]["result"]
        inc = answer("q-increase.json")
        got = float(inc[0]["value"][1]) if inc else None
        expect(got == n, f"Prometheus: increase of exits_total{{reason=cpuid}} over the bench {got}, bench ran {n} CPUIDs")
        by_domain = {r["metric"].get("domain"): float(r["value"][1]) for r in answer("q-by-domain.json")}
        expect(by_domain.get(f"exitscope-{bench_pid}") == n,
               f"Prometheus: exits_total{{reason=cpuid}} by domain {by_domain}, want exitscope-{bench_pid}: {n}")
        fn = answer("q-increase-fn.json")
        scrapes = answer("q-up.json")
        print(f"live_prometheus: bench {n} CPUIDs; Prometheus @-difference {got}, increase() "
              f"{fn[0]['value'][1] if fn else None} (extrapolated), {scrapes[0]['value'][1] if scrapes else 0} scrapes")
        # The load while the bench ran: every scrape answered among 40 slow clients of the same
        # address, hostile requests refused, memory flat (figures printed for the notes).
        load = dict(kv.split("=") for kv in read_text(os.path.join(prom, "load.txt")).split())
        hostile = read_text(os.path.join(prom, "load-hostile.txt"))
        print(f"live_prometheus: load {load}; hostile: {hostile.strip().splitlines()}")
        # Under TCG a scraper is itself starved now and then (149/150 in 2 of the boots that reached
        # this step on 2026-12-01, before and after the slot rules changed): at most 1 % may go
        # unanswered here. prometheus.load checks every scrape answered on the build host's CPU.
        for f in ("load.txt.failed", "load2.txt.failed"):
            if os.path.exists(os.path.join(prom, f)):
                print(f"live_prometheus: {f}: {read_text(os.path.join(prom, f)).strip().splitlines()}")
        answered, scrapes = int(load["answered"]), int(load["scrapes"])
        expect(scrapes >= 100 and (scrapes - answered) * 100 <= scrapes,
               f"load: {answered} of {scrapes} scrapes answered")
        # A reply to a request still being sent may be lost to the reset that ends it ("closed").
        for name, status in (("huge-header", 431), ("many-headers", 431), ("huge-url", 414), ("post", 405)):
            expect(re.search(rf"^{name} (HTTP/1.1 {status}|closed)", hostile, re.M) is not None,
                   f"load: {name} not refused with {status}: {hostile!r}")
        # The first load's RSS also grows by what serve learnt of the bench's VM (0.5 to 5 MB in
        # the boots of 2026-12-01): the leak check is the second, identical load with the data steady.
        load2 = dict(kv.split("=") for kv in read_text(os.path.join(prom, "load2.txt")).split())
        print(f"live_prometheus: second load, data steady: {load2}")
        expect(int(load2["scrapes"]) - int(load2["answered"]) <= int(load2["scrapes"]) // 100,
               f"second load: {load2['answered']} of {load2['scrapes']} scrapes answered")
        expect(int(load2["rss_kb_after"]) - int(load2["rss_kb_before"]) < 2048,
               f"second load: serve's RSS grew: {load2}")
        up_min = answer("q-up-min.json")
        print(f"live_prometheus: min(up) over the bench {up_min[0]['value'][1] if up_min else None}")
        promtool_check(read_text(os.path.join(prom, "metrics.txt")), "serve's live exposition (prom-steps)")
        for f in ("metrics-before.txt", "metrics-after.txt"):
            promtool_check(read_text(os.path.join(live, f)), f"serve's live exposition (live-steps {f})")
    elif name == "live_cleanup":
        state = {k: read_text(os.path.join(live, f"state-{k}.txt"))
                 for k in ("before", "after-sigint", "after-sigkill", "after-rerun")}
        expect("tracing_on 0" in state["before"] and "kvm/kvm_pio/enable 1" in state["before"],
               f"the test did not set its distinctive top-level state: {state['before']!r}")
        expect("exitscope-" not in state["before"], f"instances before: {state['before']!r}")
        for k in ("after-sigint", "after-rerun"):
            expect(state[k] == state["before"], f"tracefs {k} differs from before:\n{state[k]}")
        killed = read_text(os.path.join(live, "killed.pid")).strip()
        expect(f"exitscope-{killed}" in state["after-sigkill"],
               f"SIGKILL left no instance exitscope-{killed} to clean (test did not exercise it)")
        expect(read_text(os.path.join(live, "rerun.rc")).strip() == "0",
               f"rerun after SIGKILL: {read_text(os.path.join(live, 'rerun.err'))!r}")
    else:
        failures.append(f"unknown check {name}")


class _At:
    def __init__(self, trace, rip):
        self.exits, self.user, self.details = trace.exits[rip], trace.user[rip], trace.details[rip]


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        check(sys.argv[1], sys.argv[2])
    except (OSError, ValueError, KeyError, IndexError) as e:
        failures.append(f"{type(e).__name__}: {e}")
    for f in failures:
        print(f"FAIL {sys.argv[1]}: {f}")
    if not failures:
        print(f"ok {sys.argv[1]}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
