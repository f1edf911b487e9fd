#!/usr/bin/env python3
"""check_arm64.py CHECK OUT [FILE] — one kvmhost-arm64 CTest check over what boot-suite.sh left in OUT.

The oracle is the kernel's own text rendering of the run (OUT/guest/rec/trace.txt, a tracefs instance's
`trace` file, on only while the workload ran) and what the workload itself did: its VMM's counts and
KVM's per-vCPU binary stats (workload.txt). FILE names the recording under check (trace.dat: trace-cmd's,
exitscope-record.dat: `exitscope record`'s), read on the host by the x86 exitscope (EXITSCOPE_BIN).

Checks:
  vhe_host          the inner host is aarch64 and KVM came up in VHE mode
  workload_exits    the text's kvm_exit per class (HVC64, SYS64, DABT_LOW, WFx …) equal what the
                    guest did and KVM counted; nothing lost in the oracle's ring buffer
  dump_matches_text `exitscope dump FILE`: the workload thread's kvm events, in order, with
                    kvm_exit's ret / esr_ec / vcpu_pc and kvm_entry's vcpu_pc, equal the text's
  report_per_class  `exitscope report --json FILE`: per reason, the text's count per class (needs the
                    arm64 exit decoder: without it every exit is one UNKNOWN reason and this fails)
  peer_trace_cmd    Debian's trace-cmd report of trace.dat (on the host) has the text's kvm events
  record_clean      `exitscope record` exited 0 and reported no lost events
  record_defaults   `exitscope record` with its default events (exitscope-default.dat): the arm64 exit
                    and detail events the workload made are in it, each as often as in the text, and
                    events exitscope does not model (kvm_arm_set_dreg32 …) are not
  live_top          `exitscope top --json` during the run: its intervals' exits per reason add up to the
                    text's count per class (the VM's last exit, which no entry follows, included), all
                    of them the workload VM's; no loss, exit status 0
  live_serve        `exitscope serve` scraped before and after the run: the increase of
                    exitscope_exits_total per reason equals the text's count per class
  live_top_stats    `exitscope top --mode stats --json` during the run: KVM's counters of the workload VM
                    read through its stats fds (arm64's hvc_exit_stat, wfi_exit_stat, mmio_exit_user …)
                    grew by most of what the VMM read from them at the end, and never by more
  live_bpf_refused  `exitscope top --mode bpf` on the arm64 host exits 69 with an error, a hint and why
                    (this cross build has no BPF program; one that has refuses arm64's kvm_exit layout);
                    `--mode auto` says it falls back to tracefs and prints an interval
  bench_all_tests   the arm64 `exitscope bench`: every test ran, KVM's stats count its exit per iteration
  bench_exits_by_pc a recorded `exitscope bench --iterations 50`: the text's kvm_exit of each test's
                    class at its exiting instruction, once per iteration
"""
import collections
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "kvmhost-common"))
from top_totals import top_totals  # noqa: E402  (the harnesses' shared reading of top --json)

# kvm_exit's `ret` (arch/arm64/include/asm/kvm_asm.h ARM_EXCEPTION_*): the kernel prints IRQ, SERROR,
# TRAP, HYP_GONE by name and IL (3) as a bare number; perf kvm stat's spellings.
RET_NAMES = {"IRQ": "IRQ", "SERROR": "SERROR", "HYP_GONE": "HYP_GONE", "0x3": "ILLEGAL", "3": "ILLEGAL"}
# The vGIC set-up before the guest's loop: GICD_CTLR, GICR_IGROUPR0, GICR_IPRIORITYR, GICR_ISENABLER0
# (guest/kvmexits-arm64.c), each a DABT_LOW the kernel emulates.
VGIC_SETUP_WRITES = 4

failures = []


def expect(cond, what):
    if not cond:
        failures.append(what)


TEXT_RE = re.compile(r"^\s*(.+?)-(\d+)\s+\[(\d+)\]\s+(\S+)\s+([\d.]+):\s+(\w+):\s?(.*)$")
EXIT_RE = re.compile(r"^(\w+): HSR_EC: (0x[0-9a-f]+) \((\w+)\), PC: (0x[0-9a-f]+)$")
ENTRY_RE = re.compile(r"^PC: (0x[0-9a-f]+)$")


IRQ_EVENTS = set()  # events the text shows in hard or soft interrupt context (its flags column)


def text_events(path):
    """(tid, event, fields) of every event line of a tracefs `trace` file, in order."""
    out = []
    with open(path, errors="replace") as f:
        for line in f:
            if line.startswith("#"):
                continue
            m = TEXT_RE.match(line.rstrip("\n"))
            if m:
                if len(m.group(4)) > 2 and m.group(4)[2] in "hHs":
                    IRQ_EVENTS.add(m.group(6))
                out.append((int(m.group(2)), m.group(6), m.group(7)))
    return out


def exit_class(fields):
    """The class perf kvm stat would name a kernel-text kvm_exit by, and (ret, esr_ec, pc)."""
    m = EXIT_RE.match(fields)
    if not m:
        raise ValueError(f"unparsed kvm_exit: {fields!r}")
    ret, ec, ec_name, pc = m.group(1), int(m.group(2), 16), m.group(3), int(m.group(4), 16)
    name = ec_name if ret == "TRAP" else RET_NAMES.get(ret, f"UNKNOWN({ret})")
    return name, ret, ec, pc


def workload(guest, rec="rec"):
    """The VMM's START / RESULT counts and STAT lines (workload.txt), its pid and status."""
    w = {"stat": {}}
    with open(os.path.join(guest, rec, "workload.pid")) as f:
        w["pid"] = int(f.read())
    with open(os.path.join(guest, rec, "workload.status")) as f:
        for kv in f.read().split():
            k, _, v = kv.partition("=")
            w[k] = v
    if rec != "rec":
        return w
    with open(os.path.join(guest, rec, "workload.txt")) as f:
        for line in f:
            words = line.split()
            if not words:
                continue
            if words[0] == "STAT":
                k, v = words[1].split("=", 1)
                w["stat"][k] = int(v)
            elif words[0] in ("START", "RESULT", "SETUP") or "=" in words[0]:
                for kv in words[1:] if "=" not in words[0] else words:
                    if "=" in kv:
                        k, v = kv.split("=", 1)
                        w[k] = v
    return w


def oracle(guest, rec="rec"):
    """Per-class kvm_exit counts of the workload's thread in the text, and that thread's events."""
    w = workload(guest, rec)
    tid = int(w.get("tid", w["pid"]))  # single-threaded VMMs: the vCPU runs in the main thread
    events = [e for e in text_events(os.path.join(guest, rec, "trace.txt")) if e[0] == tid]
    classes = collections.Counter(exit_class(f)[0] for _, ev, f in events if ev == "kvm_exit")
    return w, tid, events, classes


def check_vhe_host(out):
    guest = os.path.join(out, "guest")
    with open(os.path.join(guest, "uname.txt")) as f:
        expect(" aarch64" in f.read(), "uname.txt: not an aarch64 kernel")
    with open(os.path.join(guest, "dmesg-kvm.txt")) as f:
        dmesg = f.read()
    expect("VHE mode initialized successfully" in dmesg, "dmesg: KVM not in VHE mode")
    expect("CPU(s) started at EL2" in dmesg, "dmesg: CPUs not started at EL2")


def check_workload_exits(out):
    guest = os.path.join(out, "guest")
    w, tid, events, classes = oracle(guest)
    s, n = w["stat"], int(w["iterations"])
    print(f"workload tid {tid}, {n} iterations; text kvm_exit per class: {dict(classes)}; KVM stats: {s}")
    expect(w.get("rc") == "0", f"workload rc={w.get('rc')}")
    expect(int(w["mmio_user_reads"]) == n, f"VMM answered {w['mmio_user_reads']} MMIO reads, want {n}")
    expect(n >= 50, f"only {n} iterations: too few to tell counts apart")
    # hvc: one PSCI_VERSION per iteration and the final SYSTEM_OFF
    expect(classes["HVC64"] == n + 1, f"HVC64 {classes['HVC64']}, want {n + 1} (iterations + SYSTEM_OFF)")
    expect(s["hvc_exit_stat"] == classes["HVC64"], f"hvc_exit_stat {s['hvc_exit_stat']} != HVC64 {classes['HVC64']}")
    # sysreg: one trapped ID register read per iteration (ICC_* writes go to the vGIC's CPU interface)
    expect(classes["SYS64"] == n, f"SYS64 {classes['SYS64']}, want {n} (one MRS ID_AA64MMFR0_EL1 each)")
    # MMIO: a write and a read to the VMM, a write to the ioeventfd per iteration, the vGIC set-up
    mmio_user = int(w["mmio_user_writes"]) + int(w["mmio_user_reads"])
    expect(mmio_user == 2 * n, f"VMM saw {mmio_user} MMIO exits, want {2 * n}")
    expect(s["mmio_exit_user"] == mmio_user, f"mmio_exit_user {s['mmio_exit_user']} != VMM's {mmio_user}")
    expect(int(w["ioeventfd_signals"]) == n, f"ioeventfd signalled {w['ioeventfd_signals']}, want {n}")
    expect(s["mmio_exit_kernel"] == n + VGIC_SETUP_WRITES,
           f"mmio_exit_kernel {s['mmio_exit_kernel']}, want {n + VGIC_SETUP_WRITES}")
    # every MMIO exit is a DABT_LOW; so are the stage-2 faults on the guest's first data touches (none:
    # the guest only reads and writes outside its RAM and its code page faults as IABT_LOW)
    expect(classes["DABT_LOW"] == s["mmio_exit_user"] + s["mmio_exit_kernel"],
           f"DABT_LOW {classes['DABT_LOW']} != mmio_exit_user + mmio_exit_kernel "
           f"{s['mmio_exit_user'] + s['mmio_exit_kernel']}")
    # WFI: trapped unless its timer had already fired (TCG), so at most one per iteration
    wfx = s["wfi_exit_stat"] + s["wfe_exit_stat"]
    expect(classes["WFx"] == wfx, f"WFx {classes['WFx']} != wfi_exit_stat + wfe_exit_stat {wfx}")
    expect(0 < classes["WFx"] <= n, f"WFx {classes['WFx']}, want 1..{n}")
    expect(classes["IABT_LOW"] >= 1, "no IABT_LOW: the guest's code page never faulted in?")
    total = sum(classes.values())
    expect(total == s["exits"], f"text has {total} kvm_exit, KVM's exits stat {s['exits']}")
    entries = sum(1 for _, ev, _ in events if ev == "kvm_entry")
    expect(entries == total, f"{entries} kvm_entry vs {total} kvm_exit")
    user = sum(1 for _, ev, _ in events if ev == "kvm_userspace_exit")
    expect(user == int(w["kvm_run_calls"]), f"{user} kvm_userspace_exit, VMM made {w['kvm_run_calls']} KVM_RUN calls")
    with open(os.path.join(guest, "rec", "oracle-ring-buffer-stats.txt")) as f:
        for line in f:
            k, _, v = line.partition(":")
            if k.strip() in ("overrun", "commit overrun", "dropped events"):
                expect(int(v) == 0, f"oracle ring buffer: {line.strip()}")


DUMP_RE = re.compile(r"^[\d.]+ \d+ (\d+) \S+ (\w+): ?(.*)$")


def dump_events(path, tid):
    exe = os.environ.get("EXITSCOPE_BIN", "exitscope")
    p = subprocess.run([exe, "dump", path], capture_output=True, text=True)
    expect(p.returncode == 0, f"exitscope dump {path}: status {p.returncode}: {p.stderr.strip()[:300]}")
    out = []
    for line in p.stdout.splitlines():
        m = DUMP_RE.match(line)
        if m and int(m.group(1)) == tid and m.group(2).startswith(("kvm_", "vgic_")):
            out.append((m.group(2), dict(kv.split("=", 1) for kv in m.group(3).split() if "=" in kv)))
    return out


def key_of_dump(ev, fields):
    if ev == "kvm_exit":
        return (ev, int(fields["ret"], 0), int(fields["esr_ec"], 0), int(fields["vcpu_pc"], 0))
    if ev == "kvm_entry":
        return (ev, int(fields["vcpu_pc"], 0))
    return (ev,)


RET_CODES = {"IRQ": 0, "SERROR": 1, "TRAP": 2, "3": 3, "0x3": 3, "HYP_GONE": 0xBADCA11}


def key_of_text(ev, fields):
    if ev == "kvm_exit":
        _, ret, ec, pc = exit_class(fields)
        return (ev, RET_CODES[ret], ec, pc)
    if ev == "kvm_entry":
        return (ev, int(ENTRY_RE.match(fields).group(1), 16))
    return (ev,)


def check_dump_matches_text(out, name):
    guest = os.path.join(out, "guest")
    _, tid, events, _ = oracle(guest)
    path = os.path.join(guest, "rec", name)
    expect(os.path.getsize(path) > 0, f"{name} is empty")
    want = [key_of_text(ev, f) for _, ev, f in events if ev.startswith(("kvm_", "vgic_"))]
    got = [key_of_dump(ev, f) for ev, f in dump_events(path, tid)]
    print(f"{name}: {len(got)} kvm events of thread {tid} in dump, {len(want)} in the text; "
          f"seen in interrupt context: {sorted(IRQ_EVENTS)}")
    expect(len(want) > 1000, f"only {len(want)} events in the text: the workload did not run")
    # Two buffers are written one after the other by each tracepoint, so an interrupt between the two
    # writes lands on different sides of it in each (seen: the timer's kvm_timer_update_irq before
    # kvm_exit in one, after it in the other). Events the text shows in process context only must be
    # in the very same order; interrupt-context ones in the same order among themselves.
    def compare(what, a, b):
        if a != b:
            i = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
            failures.append(f"{name}: {what}: dump and text differ first at {i}: dump {a[i:i + 3]} "
                            f"text {b[i:i + 3]} (dump {len(a)}, text {len(b)})")
    compare("process-context events", [k for k in got if k[0] not in IRQ_EVENTS],
            [k for k in want if k[0] not in IRQ_EVENTS])
    for ev in sorted(IRQ_EVENTS):
        compare(ev, [k for k in got if k[0] == ev], [k for k in want if k[0] == ev])
    cg = collections.Counter(k[0] for k in got)
    cw = collections.Counter(k[0] for k in want)
    expect(cg == cw, f"{name}: per-event counts differ: dump-text {dict(cg - cw)} text-dump {dict(cw - cg)}")


def check_report_per_class(out, name):
    guest = os.path.join(out, "guest")
    _, _, _, classes = oracle(guest)
    exe = os.environ.get("EXITSCOPE_BIN", "exitscope")
    path = os.path.join(guest, "rec", name)
    p = subprocess.run([exe, "report", "--json", path], capture_output=True, text=True)
    # 65 is PARTIAL: under emulation on a loaded host a vCPU thread can sit preempted for over 100 ms
    # (pair.exit_across_silence); such exits are still counted, and the counts must match exactly.
    expect(p.returncode in (0, 65), f"exitscope report --json {name}: status {p.returncode}: {p.stderr.strip()[:300]}")
    if p.returncode not in (0, 65):
        return
    doc = json.loads(p.stdout)
    if p.returncode == 65:
        print(f"{name}: PARTIAL: " + ", ".join(f"{d.get('name', d)}={d.get('count', '')}" for d in doc.get("diagnostics", [])
                                                 if isinstance(d, dict) and d.get("severity") == "data-loss"))
    got = collections.Counter()
    for group in doc["groups"]:
        for r in group["reasons"]:
            got[r["reason"]] += r["count"]
    print(f"{name}: report per reason {dict(got)}; text per class {dict(classes)}")
    expect(got == classes, f"{name}: report per reason {dict(got)} != text per class {dict(classes)}")
    text = subprocess.run([exe, "report", path], capture_output=True, text=True).stdout
    for cls in classes:
        expect(re.search(rf"^\s*{re.escape(cls)}\s+{classes[cls]}\s", text, re.M),
               f"{name}: text report has no row '{cls} {classes[cls]}'")


def check_peer_trace_cmd(out):
    guest = os.path.join(out, "guest")
    _, tid, events, _ = oracle(guest)
    expect(not os.path.exists(os.path.join(guest, "rec", "trace-cmd-report.rc")), "trace-cmd report failed")
    got = collections.Counter()
    with open(os.path.join(guest, "rec", "trace-cmd-report.txt"), errors="replace") as f:
        for line in f:
            m = re.search(rf"-{tid}\s+\[\d+\]\s+[\d.]+:\s+(\w+):", line)
            if m:
                got[m.group(1)] += 1
    want = collections.Counter(ev for _, ev, _ in events)
    print(f"trace-cmd report: {sum(got.values())} events of thread {tid}, text {sum(want.values())}")
    expect(got == want, f"trace-cmd report per event differs from the text: report-text {dict(got - want)} "
           f"text-report {dict(want - got)}")


def check_record_clean(out):
    rec = os.path.join(out, "guest", "rec")
    with open(os.path.join(rec, "exitscope-record.rc")) as f:
        expect(f.read().strip() == "0", "exitscope record exited non-zero")
    with open(os.path.join(rec, "exitscope-record.err"), errors="replace") as f:
        err = f.read()
    expect("exitscope record: wrote" in err, f"exitscope record did not say what it wrote: {err.strip()[:300]}")
    expect("lost events" not in err, f"exitscope record reported losses: {err.strip()[:300]}")


# The arm64 events the decoder models that this workload makes (src/model/kvm_event.cc): a default
# recording must hold each the text has. kvm_arm_* debug-register events are not modeled.
ARM64_MODELED = ["kvm_exit", "kvm_entry", "kvm_wfx_arm64", "kvm_hvc_arm64", "kvm_handle_sys_reg", "kvm_sys_access",
                 "kvm_guest_fault", "kvm_mmio", "kvm_userspace_exit", "kvm_vcpu_wakeup", "kvm_timer_update_irq",
                 "vgic_update_irq_pending"]
NOT_MODELED = ["kvm_arm_set_dreg32", "kvm_arm_setup_debug", "kvm_arm_clear_debug", "kvm_timer_save_state"]


def check_record_defaults(out):
    guest = os.path.join(out, "guest")
    rec = os.path.join(guest, "rec")
    with open(os.path.join(rec, "exitscope-default.rc")) as f:
        expect(f.read().strip() == "0", "exitscope record (default events) exited non-zero")
    with open(os.path.join(rec, "exitscope-default.err"), errors="replace") as f:
        err = f.read()
    expect("lost events" not in err, f"exitscope record (default events) reported losses: {err.strip()[:300]}")
    _, tid, events, _ = oracle(guest)
    want = collections.Counter(ev for _, ev, _ in events)
    got = collections.Counter(ev for ev, _ in dump_events(os.path.join(rec, "exitscope-default.dat"), tid))
    print(f"default events, thread {tid}: recorded {dict(got)}; text {dict(want)}")
    for ev in ARM64_MODELED:
        if want[ev]:
            expect(got[ev] == want[ev], f"{ev}: {got[ev]} in the default recording, {want[ev]} in the text")
    expect(want["kvm_wfx_arm64"] > 0 and want["kvm_hvc_arm64"] > 0, "the text has no WFx or HVC detail: workload?")
    for ev, n in got.items():
        expect(n == want[ev], f"{ev}: {n} in the default recording, {want[ev]} in the text")
    for ev in NOT_MODELED:
        expect(got[ev] == 0, f"{ev} (not modeled) is in the default recording ({want[ev]} in the text)")


def live_status(rec, tool):
    with open(os.path.join(rec, f"{tool}.rc")) as f:
        rc = f.read().strip()
    with open(os.path.join(rec, f"{tool}.err"), errors="replace") as f:
        expect(rc == "0", f"{tool} exited {rc}: {f.read().strip()[:300]}")


def check_live_top(out):
    guest = os.path.join(out, "guest")
    rec = os.path.join(guest, "rec")
    w, _, _, classes = oracle(guest)
    live_status(rec, "top")
    intervals, reasons, vm_exits, lost, schemas = top_totals(os.path.join(rec, "top.jsonl"), w["pid"])
    expect(intervals >= 2, f"top printed {intervals} intervals")
    expect(schemas == {"exitscope.top/1"}, f"top schemas {schemas}")
    print(f"top: {intervals} intervals, per reason {dict(reasons)}; text per class {dict(classes)}")
    expect(lost == 0, f"top reported {lost} lost events")
    # The workload's VM is the only one: every exit top saw is its, and the text's. Each counts at its
    # kvm_exit, so the VM's last (PSCI SYSTEM_OFF, never followed by an entry) is in too.
    expect(reasons == classes, f"top per reason {dict(reasons)} != text per class {dict(classes)}")
    expect(vm_exits == sum(classes.values()),
           f"top: {vm_exits} exits of the workload VM (pid {w['pid']}), text {sum(classes.values())}")


def check_live_serve(out):
    guest = os.path.join(out, "guest")
    rec = os.path.join(guest, "rec")
    _, _, _, classes = oracle(guest)
    live_status(rec, "serve")

    def exits(name):
        got = collections.Counter()
        with open(os.path.join(rec, name), errors="replace") as f:
            text = f.read()
        expect("exitscope_build_info" in text, f"serve did not answer ({name}): {text[:200]!r}")
        for m in re.finditer(r'^exitscope_exits_total\{[^}]*reason="([^"]+)"[^}]*\} (\d+)$', text, re.M):
            got[m.group(1)] += int(m.group(2))
        return got
    before, after = exits("metrics-before.txt"), exits("metrics-after.txt")
    grown = collections.Counter({r: after[r] - before[r] for r in after if after[r] != before[r]})
    print(f"serve: exits_total grew by {dict(grown)}; text per class {dict(classes)}")
    expect(grown == classes, f"serve: exits_total grew by {dict(grown)}, text per class {dict(classes)}")


def check_live_bpf_refused(out):
    rec = os.path.join(out, "guest", "rec")

    def read(name):
        with open(os.path.join(rec, name), errors="replace") as f:
            return f.read().strip()
    rc, err = read("top-bpf.rc"), read("top-bpf.err")
    print(f"top --mode bpf: exit {rc}: {err[:300]}")
    expect(rc == "69", f"top --mode bpf exited {rc}, want 69 (unavailable)")
    expect("error:" in err and "hint:" in err, f"top --mode bpf: no error:/hint: {err!r}")
    # The cross build carries no BPF program (cmake/bpf.cmake: never when cross-compiling), and says
    # that a rebuild would not help; a native arm64 build with one refuses arm64's kvm_exit layout
    # instead (tests/observe_test.cc). Either way it names arm64 and points at tracefs.
    expect("arm64" in err and "--mode tracefs" in err, f"top --mode bpf does not say why on arm64: {err!r}")
    rc, err = read("top-auto.rc"), read("top-auto.err")
    print(f"top --mode auto: exit {rc}: {err[:300]}")
    expect(rc == "0", f"top --mode auto exited {rc}: {err!r}")
    expect("using tracefs mode" in err, f"top --mode auto did not say it fell back: {err!r}")
    docs = [json.loads(line) for line in read("top-auto.jsonl").splitlines() if line.strip()]
    expect(len(docs) == 1 and docs[0].get("schema") == "exitscope.top/1",
           f"top --mode auto -n 1 printed {len(docs)} tracefs intervals")


# KVM's counters the workload makes grow (arm64 names among them), as the VMM read them at the end.
STATS_GROWN = ["exits", "hvc_exit_stat", "wfi_exit_stat", "mmio_exit_user", "mmio_exit_kernel"]


def check_live_top_stats(out):
    guest = os.path.join(out, "guest")
    rec = os.path.join(guest, "rec")
    w = workload(guest)
    live_status(rec, "top-stats")
    with open(os.path.join(rec, "top-stats.jsonl")) as f:
        docs = [json.loads(line) for line in f if line.strip()]
    expect(docs and all(d.get("schema") == "exitscope.top-stats/1" for d in docs), "top --mode stats: schema")
    grown = collections.Counter()
    for d in docs:
        for vm in d["vms"]:
            if vm["pid"] == w["pid"]:
                grown.update(vm["counters"])  # the first sight counts from 0
    print(f"top --mode stats: workload VM (pid {w['pid']}) grew by "
          f"{ {k: grown[k] for k in STATS_GROWN} }; the VMM read {[(k, w['stat'].get(k)) for k in STATS_GROWN]}")
    # Read every 0.1 s while the VM lives: what KVM counted after the last read is gone with the VM,
    # so each counter grew by at most the VMM's final figure, and (exits) by most of it.
    for k in STATS_GROWN:
        want = w["stat"].get(k, 0)
        expect(want > 0, f"the VMM read no {k}: workload?")
        expect(0 < grown[k] <= want, f"top --mode stats: {k} grew by {grown[k]}, the VMM read {want}")
    expect(grown["exits"] >= w["stat"].get("exits", 0) // 2,
           f"top --mode stats: exits grew by {grown['exits']}, under half of {w['stat'].get('exits')}")


BENCH_TESTS = ["hvc", "sysreg_read", "mmio_user", "mmio_ioeventfd", "wfi"]
# Per test: the class its exit has, the PC kvm_exit shows relative to the exiting instruction (an HVC
# is taken with its return address, the next instruction; traps and aborts with their own), and
# what KVM's stats must count per iteration.
BENCH_EXPECT = {
    "hvc": ("HVC64", 4, {"hvc_exit_stat": 1}),
    "sysreg_read": ("SYS64", 0, {}),
    "mmio_user": ("DABT_LOW", 0, {"mmio_exit_user": 1}),
    "mmio_ioeventfd": ("DABT_LOW", 0, {"mmio_exit_kernel": 1}),
    "wfi": ("WFx", 0, {}),
}


def bench_tests(path):
    with open(path) as f:
        return {t["name"]: t for t in json.load(f)["tests"]}


def check_bench_all_tests(out):
    guest = os.path.join(out, "guest")
    with open(os.path.join(guest, "bench-list.txt")) as f:
        listed = [l.split()[0] for l in f if l[:1].isalpha()]
    expect(listed == BENCH_TESTS, f"bench --list: {listed}, want {BENCH_TESTS}")
    tests = bench_tests(os.path.join(guest, "bench.json"))
    expect(sorted(tests) == sorted(BENCH_TESTS), f"bench.json tests {sorted(tests)}")
    with open(os.path.join(guest, "bench-table.txt")) as f:
        table = f.read()
    for name, t in tests.items():
        print(f"{name}: {t.get('iterations')} iterations, {t.get('ns_per_iter', 0):.0f} ns/iter, "
              f"exits {t.get('exits')}, stats {t.get('kvm_stats')}")
        expect(t["status"] == "ok", f"{name}: status {t['status']} {t.get('skip_reason', '')}")
        if t["status"] != "ok":
            continue
        n = t["iterations"]
        expect(n > 0 and t["ns_per_iter"] > 0, f"{name}: {n} iterations, {t['ns_per_iter']} ns/iter")
        expect(re.search(rf"^\s*{name}\s", table, re.M), f"bench table has no row {name}")
        stats = t["kvm_stats"]
        expect(t["exits"] is not None and t["exits"] >= (1 if name == "wfi" else n),
               f"{name}: exits {t['exits']} for {n} iterations")
        for stat, per in BENCH_EXPECT[name][2].items():
            expect(stats.get(stat) == per * n, f"{name}: {stat} {stats.get(stat)}, want {per * n}")
        want_user = n if name == "mmio_user" else 0
        expect(t["userspace_exits"] == want_user, f"{name}: {t['userspace_exits']} exits to the VMM, want {want_user}")
        if name == "mmio_ioeventfd":
            expect(t["ioeventfd_signals"] == n, f"{name}: {t['ioeventfd_signals']} ioeventfd signals, want {n}")
        if name == "wfi":
            expect(0 < stats.get("wfi_exit_stat", 0) <= n, f"wfi: wfi_exit_stat {stats.get('wfi_exit_stat')}")


def check_bench_exits_by_pc(out):
    """The recorded fixed-iteration bench run: the text's kvm_exit at each test's exiting instruction."""
    guest = os.path.join(out, "guest")
    _, tid, events, _ = oracle(guest, "benchrec")
    tests = bench_tests(os.path.join(guest, "benchrec", "workload.txt"))
    at = collections.Counter()
    for _, ev, f in events:
        if ev == "kvm_exit":
            name, _, _, pc = exit_class(f)
            at[(pc, name)] += 1
    for name in BENCH_TESTS:
        t = tests[name]
        cls, delta, _ = BENCH_EXPECT[name]
        n, pc = t["iterations"], t["exit_rip"] + delta
        got = at[(pc, cls)]
        print(f"{name}: {got} {cls} exits at {pc:#x} for {n} iterations")
        if name == "wfi":
            expect(0 < got <= n and got == t["kvm_stats"]["wfi_exit_stat"],
                   f"wfi: {got} WFx at {pc:#x}, wfi_exit_stat {t['kvm_stats']['wfi_exit_stat']}")
        else:
            expect(got == n, f"{name}: {got} {cls} exits at {pc:#x}, want {n}")


def main():
    check, out = sys.argv[1], sys.argv[2]
    name = sys.argv[3] if len(sys.argv) > 3 else "trace.dat"
    {
        "vhe_host": lambda: check_vhe_host(out),
        "workload_exits": lambda: check_workload_exits(out),
        "dump_matches_text": lambda: check_dump_matches_text(out, name),
        "report_per_class": lambda: check_report_per_class(out, name),
        "peer_trace_cmd": lambda: check_peer_trace_cmd(out),
        "record_clean": lambda: check_record_clean(out),
        "record_defaults": lambda: check_record_defaults(out),
        "live_top": lambda: check_live_top(out),
        "live_serve": lambda: check_live_serve(out),
        "live_top_stats": lambda: check_live_top_stats(out),
        "live_bpf_refused": lambda: check_live_bpf_refused(out),
        "bench_all_tests": lambda: check_bench_all_tests(out),
        "bench_exits_by_pc": lambda: check_bench_exits_by_pc(out),
    }[check]()
    for f in failures:
        print("FAIL:", f)
    if failures:
        sys.exit(1)
    print(f"ok: {check}")


if __name__ == "__main__":
    main()
