#!/usr/bin/env python3
"""Fails when an #include in src/ points up the record flow (issue 13, Perfetto's include rules).

The layers, lowest first; a file may include its own folder and any folder below it, never one above:

  base      byte helpers, Result/Error
  model     plain records and the interfaces between stages (RawEvent, KvmEvent, ExitSample,
            KvmEventSource, Diagnostics, TraceMeta, the format-neutral Report)
  format    the trace's own self-description: event format text, tracing data
  sources   bytes -> per-CPU records; one subfolder per input format (tracedat, perfdata, text, live),
            and those subfolders do not include each other
  sort      per-CPU merge by time
  decode    records -> typed kvm events; exit-reason, MSR, APIC tables per ISA
  pipeline  the one place that assembles source -> merge -> decode (sequential and sliced readers,
            input detection)
  symbols   guest symbols and KASLR
  kvmbench  the bench VMM, its guest and its JSON (advise prices fixes with a bench run's costs)
  analysis  pairing, aggregation, histograms, RIPs
  advise    the exit-cost rules
  report    one reporter per output format
  sinks     writers of trace files
  live      live recording on a host
  observe   the cheaper observers (in-kernel BPF counting, KVM's own stats) and what each costs
  cli       one file per command

Usage: scripts/check_layers.py [SRC_DIR]   (exit 1 and one line per violation)
       scripts/check_layers.py --self-test   (the check must flag an upward include, pass a downward one)
"""
import pathlib
import re
import sys

LAYERS = ["base", "model", "format", "sources", "sort", "decode", "pipeline", "symbols", "kvmbench",
          "analysis", "advise", "report", "sinks", "live", "observe", "cli"]
RANK = {name: i for i, name in enumerate(LAYERS)}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def violations(src: pathlib.Path) -> list:
    bad = []
    for path in sorted(src.rglob("*")):
        if path.suffix not in (".h", ".cc", ".S"):
            continue
        rel = path.relative_to(src).parts
        layer = rel[0]
        if layer not in RANK:
            bad.append(f"{path}: folder '{layer}' is not a known layer (add it to LAYERS in {__file__})")
            continue
        for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            m = INCLUDE.match(line)
            if not m or "/" not in m.group(1):
                continue
            inc = m.group(1).split("/")
            target = inc[0]
            if target not in RANK:
                bad.append(f"{path}:{n}: includes '{m.group(1)}' outside the known layers")
            elif RANK[target] > RANK[layer]:
                bad.append(f"{path}:{n}: {layer} includes '{m.group(1)}' from the higher layer {target}")
            elif (layer == target == "sources" and len(rel) > 2 and len(inc) > 2 and rel[1] != inc[1]):
                bad.append(f"{path}:{n}: sources/{rel[1]} includes '{m.group(1)}': input formats are peers")
    return bad


def self_test() -> int:
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        root = pathlib.Path(d)
        for rel, text in {"model/a.h": '#include "base/b.h"\n', "base/b.h": "",
                          "sources/tracedat/t.h": '#include "sources/perfdata/p.h"\n',
                          "sources/perfdata/p.h": '#include "model/a.h"\n',
                          "decode/d.cc": '#include "analysis/x.h"\n', "analysis/x.h": ""}.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(text)
        got = sorted(v.split(": ", 1)[0].replace(d + "/", "") for v in violations(root))
    want = ["decode/d.cc:1", "sources/tracedat/t.h:1"]
    print(f"check_layers self-test: {'ok' if got == want else f'FAILED: got {got}, want {want}'}")
    return 0 if got == want else 1


def main() -> int:
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    src = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).parent.parent / "src")
    bad = violations(src)
    for b in bad:
        print(b)
    if bad:
        print(f"check_layers: {len(bad)} include(s) point up the flow; layer order: {' < '.join(LAYERS)}")
        return 1
    print(f"check_layers: ok ({' < '.join(LAYERS)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
