#!/usr/bin/env python3
"""A real `trace-cmd report` text repeated REPEAT times, each copy's timestamps moved past the one
before (its span plus 1 ms), so the result reads as one longer run: time never steps back and every
copy's events and exits are counted. For the text formats' rows of bench/rss_scaling.sh and the
flat-memory check of tests/bench/text_rss_check.sh.

  bench/text_scale.py IN.txt[.gz] OUT.txt REPEAT       (OUT ending in .gz is written gzip -1)
"""
import gzip
import re
import sys

# "comm-pid [cpu] 14.625324: event: body" (trace-cmd report; the kernel trace file has flags before
# the time): the first "<seconds>.<digits>:" after the CPU field.
TS = re.compile(rb"(\]\s+(?:\S+\s+)?)(\d+)\.(\d+)(:)")


def main():
    src, dst, repeat = sys.argv[1], sys.argv[2], int(sys.argv[3])
    opener = gzip.open if src.endswith(".gz") else open
    with opener(src, "rb") as f:
        lines = f.read().splitlines(keepends=True)
    header = [l for l in lines if not TS.search(l)]
    events = [l for l in lines if TS.search(l)]
    if not events:
        sys.exit(f"{src}: no timestamped event lines")
    digits = len(TS.search(events[0]).group(3))
    scale = 10**digits

    def ticks(line):
        m = TS.search(line)
        return int(m.group(2)) * scale + int(m.group(3))

    first, last = ticks(events[0]), ticks(events[-1])
    step = last - first + scale // 1000  # the span plus 1 ms
    out = gzip.open(dst, "wb", compresslevel=1) if dst.endswith(".gz") else open(dst, "wb")
    with out:
        out.writelines(header)
        for i in range(repeat):
            shift = i * step
            if shift == 0:
                out.writelines(events)
                continue

            def moved(m):
                t = int(m.group(2)) * scale + int(m.group(3)) + shift
                return b"%s%d.%0*d%s" % (m.group(1), t // scale, digits, t % scale, m.group(4))

            out.writelines(TS.sub(moved, l, count=1) for l in events)


if __name__ == "__main__":
    main()
