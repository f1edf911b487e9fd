#!/usr/bin/env python3
"""damage_seeds.py — writes the damage kinds of issue 19 into the fuzz seed corpora, as damage-* files.

Each seed is an existing (real, trimmed) seed of fuzz/corpus/ with one damage a reader once answered
with a quiet, smaller result: an options chain looping back, a DONE option of the wrong size, a CPU
size or chunk count of 0, a CPUSTAT overrun, a zeroed page, a field offset past the record, a format
ID without records, uncompressed pages under a CPU size of 0 or one running into the next CPU's;
perf.data attr_size off by one, a sample_type bit flipped, a format ID past u16, a cut header; text
going back in time, with one line's timestamp far off, on one line, or with its last line cut. The
tests make the same damage on the full shared traces (tests/*_damage_test.cc). Run from the repository root.
Layout facts: trace-cmd's Documentation/trace-cmd/trace-cmd.dat.v7.5.txt and perf's
tools/perf/Documentation/perf.data-file-format.txt.
"""
import struct

C = "fuzz/corpus/"


def u16(b, o): return struct.unpack_from("<H", b, o)[0]
def u32(b, o): return struct.unpack_from("<I", b, o)[0]
def u64(b, o): return struct.unpack_from("<Q", b, o)[0]


def cstr_end(b, o): return b.index(b"\0", o) + 1


def map_v7(b):
    """Options sections, options {id, size, at} and BUFFER CPU entries {cpu, offset, size, at}."""
    p = cstr_end(b, cstr_end(b, 18))
    sec, sections, options, cpus = u64(b, p), [], [], []
    while sec and len(sections) < 16:
        sections.append(sec)
        end, q, nxt = sec + 16 + u64(b, sec + 8), sec + 16, 0
        while q + 6 <= end:
            oid, size = u16(b, q), u32(b, q + 2)
            options.append((oid, size, q))
            if oid == 3:
                r = cstr_end(b, cstr_end(b, q + 6 + 8))
                for i in range(u32(b, r + 4)):
                    e = r + 8 + 20 * i
                    cpus.append((u32(b, e), u64(b, e + 4), u64(b, e + 12), e))
            if oid == 0:
                nxt = u64(b, q + 6)
                break
            q += 6 + size
        sec = nxt
    return sections, options, cpus


def write(folder, name, b):
    with open(C + folder + "/damage-" + name, "wb") as f:
        f.write(b)


def same_length(b, after, old, new):
    assert len(old) == len(new)
    at = b.index(old, b.index(after))
    return b[:at] + new + b[at + len(old):]


def tracedat():
    src = open(C + "tracedat/kvmprobe-200-1page.dat", "rb").read()
    sections, options, cpus = map_v7(src)
    dones = [o for o in options if o[0] == 0]
    b = bytearray(src); struct.pack_into("<Q", b, dones[-1][2] + 6, sections[0]); write("tracedat", "loop.dat", b)
    b = bytearray(src); struct.pack_into("<I", b, dones[0][2] + 2, 4); write("tracedat", "done-size.dat", b)
    big = max(cpus, key=lambda c: c[2])
    b = bytearray(src); struct.pack_into("<Q", b, big[3] + 12, 0); write("tracedat", "cpu-size-0.dat", b)
    b = bytearray(src); struct.pack_into("<I", b, big[1], 0); write("tracedat", "chunks-0.dat", b)
    write("tracedat", "overrun.dat", same_length(src, b"CPU: 1\n", b"overrun: 0", b"overrun: 7"))
    for folder, name in (("tracedat", "dual-5000-1page.none.dat"), ("tracedat_sliced", "kvmprobe-200-3pages.none.dat")):
        src = open(C + folder + "/" + name, "rb").read()
        _, _, cpus = map_v7(src)
        big = max(cpus, key=lambda c: c[2])
        b = bytearray(src); b[big[1]:big[1] + 4096] = bytes(4096); write(folder, "zeroed-page.dat", b)
        write(folder, "field-offset.dat", same_length(src, b"name: kvm_exit\n", b"guest_rip;\toffset:16;",
                                                      b"guest_rip;\toffset:96;"))
        write(folder, "format-id.dat", same_length(src, b"name: kvm_entry\n", b"ID: 1", b"ID: 9"))
        # Uncompressed pages: a CPU size of 0, and one running into the next CPU's pages.
        b = bytearray(src); struct.pack_into("<Q", b, big[3] + 12, 0); write(folder, "pages-size-0.dat", b)
        small = min(cpus, key=lambda c: c[1])
        b = bytearray(src); struct.pack_into("<Q", b, small[3] + 12, small[2] + 4096)
        write(folder, "pages-size-over.dat", b)


def perfdata():
    src = open(C + "perfdata/kvmprobe-200-60rec.perf.data", "rb").read()
    attr_size, attrs, attrs_size = u64(src, 16), u64(src, 24), u64(src, 32)
    b = bytearray(src); struct.pack_into("<Q", b, 16, attr_size + 1); write("perfdata", "attr-size.perf.data", b)
    at = src.index(b"name: kvm_entry\nID: ") + 20
    entry_id = int(src[at:src.index(b"\n", at)])
    b = bytearray(src)
    for i in range(attrs_size // attr_size):
        a = attrs + i * attr_size
        if u64(src, a + 8) == entry_id:
            struct.pack_into("<Q", b, a + 24, u64(src, a + 24) ^ (1 << 8))  # PERF_SAMPLE_PERIOD
    write("perfdata", "sample-type.perf.data", b)
    b = bytearray(src); b[at - 1:at] = b"7"; write("perfdata", "format-id.perf.data", b)
    write("perfdata", "cut-header.perf.data", src[:40])


def text():
    src = open(C + "text/kvmprobe-200.trace-cmd-report.txt", "rb").read()
    lines = src.split(b"\n")
    first = next(i for i, l in enumerate(lines) if b": " in l and b"[" in l)
    colon = lines[first].index(b": ")
    lines[first] = lines[first][:colon - 9] + b"99.999999" + lines[first][colon:]
    write("text", "backwards.txt", b"\n".join(lines))
    write("text", "one-line.txt", src.replace(b"\n", b" "))  # small: the 64 KiB limit is left to mutation
    # One far timestamp: the last line 80 s late, the first one 10 s early.
    lines = src.split(b"\n")
    last = max(i for i, l in enumerate(lines) if b": " in l and b"[" in l)
    far = list(lines)
    colon = far[last].index(b": ")
    far[last] = far[last][:colon - 9] + b"94" + far[last][colon - 7:]
    write("text", "far-last-line.txt", b"\n".join(far))
    far = list(lines)
    colon = far[first].index(b": ")
    far[first] = far[first][:colon - 9] + b" 4" + far[first][colon - 7:]
    write("text", "far-first-line.txt", b"\n".join(far))
    rip = src.index(b"rip 0x", src.rindex(b"kvm_exit:"))
    write("text", "cut-last-line.txt", src[:rip + 8])


if __name__ == "__main__":
    tracedat()
    perfdata()
    text()
