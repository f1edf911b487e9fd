#!/usr/bin/env python3
"""check_observe.py CHECK OUT — the observers of issue 16 in one kvmhost boot.

tools/kvmhost/guest/observe-steps.sh ran `top --mode bpf`, `top --mode tracefs` and `top --mode stats`
at once during ONE `exitscope bench --test cpuid --iterations N`, then `bench --observe` over every
observer; it left its files in OUT/guest/observe. The oracles: the bench ran N CPUIDs, so each
CPUID-counting observer must see exactly N; the two tracing observers watched the same run, so their
per-reason counts are equal and their percentiles agree within one log2 bucket (bpf keeps only
log2 buckets); KVM's own `exits` counter of the bench VM grew by at least the bench's exits stat
(the bench reports the stat over its measured run; the VM's counter also holds its set-up exits).
"""
import collections
import json
import math
import os
import sys

failures = []


def expect(cond, what):
    if not cond:
        failures.append(what)


def read(path):
    with open(path) as f:
        return f.read()


def jsonl(path):
    return [json.loads(l) for l in read(path).splitlines() if l.strip()]


def per_reason(docs):
    c = collections.Counter()
    for d in docs:
        for r in d["reasons"]:
            c[r["reason"]] += r["exits"]
    return c


def busiest(docs, reason):
    """The row of `reason` in the interval where it had most exits."""
    best = None
    for d in docs:
        for r in d["reasons"]:
            if r["reason"] == reason and (best is None or r["exits"] > best["exits"]):
                best = r
    return best


def check(name, out):
    d = os.path.join(out, "guest", "observe")
    expect(read(os.path.join(out, "guest", "observe-steps.rc")).strip() == "0",
           f"observe-steps.sh failed: {read(os.path.join(out, 'guest', 'observe-steps.err'))[-800:]!r}")
    bench = json.loads(read(os.path.join(d, "bench.json")))
    cpuid = next(r for r in bench["tests"] if r["name"] == "cpuid")
    n = cpuid["iterations"]
    if name in ("top_bpf_counts", "top_bpf_equals_tracefs"):
        for mode in ("bpf", "tracefs"):
            rc = read(os.path.join(d, f"top-{mode}.rc")).strip()
            expect(rc == "0", f"top --mode {mode} exited {rc}: {read(os.path.join(d, f'top-{mode}.err'))!r}")
        bpf = jsonl(os.path.join(d, "top-bpf.jsonl"))
        tr = jsonl(os.path.join(d, "top-tracefs.jsonl"))
        expect(all(x.get("mode") == "bpf" for x in bpf), "top --mode bpf lines lack mode: bpf")
        b, t = per_reason(bpf), per_reason(tr)
        print(f"bench cpuid iterations {n}; bpf per reason {dict(b)}; tracefs per reason {dict(t)}")
        if name == "top_bpf_counts":
            expect(b["cpuid"] == n, f"top --mode bpf counted {b['cpuid']} cpuid exits, the bench ran {n}")
        else:
            expect(sum(x["lost_per_cpu"] and sum(x["lost_per_cpu"]) or 0 for x in tr) == 0, "tracefs lost events")
            # tracefs reports only paired exits: the VM's last exit (its sync-port I/O, after which the
            # bench closes the VM) has no entry, and a pair the pairer distrusts (an exit across 100 ms
            # in which no CPU recorded anything: TCG stalls) is dropped with a data-loss counter.
            # bpf counts every kvm_exit, so it may exceed tracefs by exactly those.
            diag = collections.Counter()
            for x in tr:
                for k, v in x.get("diagnostics", {}).items():
                    diag[k] = max(diag[k], v)  # cumulative per line
            dropped = diag["pair.exit_across_silence"] + diag["pair.resume_mismatch"]
            vms = {v["pid"] for x in bpf for v in x["vms"]}
            extra = {k: b[k] - t[k] for k in set(b) | set(t) if b[k] != t[k]}
            print(f"bpf - tracefs per reason {extra}; tracefs dropped {dropped} pairs; {len(vms)} VM(s) closed")
            expect(all(v > 0 for v in extra.values()), f"tracefs counted more than bpf: {extra}")
            expect(sum(extra.values()) <= dropped + len(vms),
                   f"bpf and tracefs differ by {extra}, more than tracefs's {dropped} dropped pairs + "
                   f"{len(vms)} last exit(s)")
            rb, rt = busiest(bpf, "cpuid"), busiest(tr, "cpuid")
            expect(rb is not None and rt is not None, "no cpuid row in one of the tops")
            if rb and rt:
                # p50 and p90 of the interval where each saw most CPUIDs: the two tops' intervals are
                # not cut at the same instants, so a p99 (a few TCG stalls) is printed, not compared.
                for p in ("p50_ns", "p90_ns", "p99_ns"):
                    lb, lt = math.log2(max(rb[p], 1)), math.log2(max(rt[p], 1))
                    print(f"cpuid {p}: bpf {rb[p]} tracefs {rt[p]} (log2 {lb:.2f} vs {lt:.2f})")
                    expect(p == "p99_ns" or abs(math.floor(lb) - math.floor(lt)) <= 1,
                           f"cpuid {p}: bpf {rb[p]} ns and tracefs {rt[p]} ns are more than one log2 bucket apart")
    elif name == "top_stats_exits":
        rc = read(os.path.join(d, "top-stats.rc")).strip()
        expect(rc == "0", f"top --mode stats exited {rc}: {read(os.path.join(d, 'top-stats.err'))!r}")
        pid = int(read(os.path.join(d, "bench.pid")))
        docs = jsonl(os.path.join(d, "top-stats.jsonl"))
        expect(all(x.get("schema") == "exitscope.top-stats/1" for x in docs), "top-stats schema")
        grown = 0
        for x in docs:
            for vm in x["vms"]:
                if vm["pid"] == pid:
                    grown += vm["counters"].get("exits", 0)  # the first sight counts from 0
        print(f"stats: bench VM (pid {pid}) exits grew by {grown}; bench exits stat {cpuid['exits']}, "
              f"{n} iterations")
        # Reads every 0.1 s see the counter grow while the VM lives; what it counted after the last
        # read before the bench closed it is gone with its debugfs directory (kvm_stat has the same
        # blind spot), so the growth seen is at most the stat plus set-up exits, and most of it.
        expect(grown >= cpuid["exits"] // 2, f"the VM's exits grew by {grown}, under half the bench's {cpuid['exits']}")
        growing = sum(1 for x in docs for vm in x["vms"] if vm["pid"] == pid and vm["counters"].get("exits", 0) > 0)
        expect(growing >= 2, f"the VM's exits grew in {growing} interval(s), want >= 2")
        expect(grown <= cpuid["exits"] + 200, f"the VM's exits grew by {grown}, far more than {cpuid['exits']}")
    elif name == "top_bpf_explicit_fails":
        rc = read(os.path.join(d, "top-bpf-nobpf.rc")).strip()
        err = read(os.path.join(d, "top-bpf-nobpf.err"))
        expect(rc == "69", f"top --mode bpf without tracefs exited {rc}, want 69")
        expect("hint:" in err, f"no hint: {err!r}")
    elif name == "bench_observe_table":
        expect(read(os.path.join(d, "observe.rc")).split() == ["0", "0"],
               f"bench --observe failed: {read(os.path.join(d, 'observe.err'))!r}")
        table = read(os.path.join(d, "observe.txt"))
        print(table)
        j = json.loads(read(os.path.join(d, "observe.json")))
        expect(j.get("schema") == "exitscope.bench-observe/1", f"schema {j.get('schema')}")
        modes = {m["mode"]: m for m in j["tests"][0]["modes"]}
        for m in ("none", "stats", "bpf", "tracefs-minimal", "tracefs"):
            expect(m in modes, f"mode {m} missing from --observe (skipped: {j.get('skipped_modes')})")
            expect(m in table, f"mode {m} missing from the table")
        for m in ("bpf", "tracefs-minimal", "tracefs"):
            if m in modes:
                expect(all(s >= 1000 for s in modes[m]["seen_exits"]),
                       f"{m} saw {modes[m]['seen_exits']} exits of 1000 iterations")
        if "bpf" in modes and "tracefs" in modes:
            print(f"added cycles/exit: " + ", ".join(f"{k} {v.get('added_cycles_per_exit', 0):+.0f}"
                                                      for k, v in modes.items()))
    else:
        failures.append(f"unknown check {name}")


if __name__ == "__main__":
    name, out = sys.argv[1], sys.argv[2]
    try:
        check(name, out)
    except (OSError, ValueError, KeyError, StopIteration) as e:
        failures.append(f"{type(e).__name__}: {e}")
    for f in failures:
        print("FAIL:", f)
    sys.exit(1 if failures else 0)
