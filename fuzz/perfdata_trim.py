#!/usr/bin/env python3
"""perfdata_trim.py IN.perf.data OUT.perf.data K EVENT... — a small perf.data fuzz seed cut from a real one.

`perf record -e 'kvm:*'` writes one attr, one format and one EVENT_DESC entry per kvm tracepoint
(~90 on 6.1): 150 KB of metadata before a single sample, re-parsed by every fuzz execution. This
keeps only the attrs of the named tracepoints (and their formats in HEADER_TRACING_DATA and their
HEADER_EVENT_DESC entries), the non-sample records, and the first K samples of the kept events;
every other byte (header, other features, FINISHED_ROUND markers) is copied, offsets moved.
Layout facts from tools/perf/Documentation/perf.data-file-format.txt and
tools/perf/util/trace-event-info.c (file mode only; attrs must carry PERF_SAMPLE_IDENTIFIER).
"""
import re
import struct
import sys

PERF_RECORD_SAMPLE = 9               # include/uapi/linux/perf_event.h
PERF_RECORD_ID_INDEX = 69            # tools/lib/perf/include/perf/event.h
TASK_RECORDS = {1, 3, 4, 7, 10}      # MMAP, COMM, EXIT, FORK, MMAP2: body starts with u32 pid
PERF_SAMPLE_IDENTIFIER = 1 << 16     # include/uapi/linux/perf_event.h
HEADER_TRACING_DATA, HEADER_EVENT_DESC = 1, 12  # tools/perf/util/header.h feature bits
HEADER_SIZE, FEATURE_BITS = 104, 256


def u32(b, o): return struct.unpack_from("<I", b, o)[0]
def u64(b, o): return struct.unpack_from("<Q", b, o)[0]


def cstring(b, o):
    end = b.index(b"\0", o)
    return b[o:end].decode(), end + 1


def trim_tracing_data(td, keep_ids):
    """Keeps header, ftrace formats, kallsyms, printk and cmdlines; drops event formats not kept."""
    o = 3 + 7                       # "\x17\x08D" + "tracing"
    version, o = cstring(td, o)
    o += 2 + 4                      # endian, long size, page size
    for name in ("header_page", "header_event"):
        _, o = cstring(td, o)
        o += 8 + u64(td, o)
    n = u32(td, o); o += 4
    for _ in range(n):
        o += 8 + u64(td, o)
    out = bytearray(td[:o])
    systems = u32(td, o); o += 4
    sys_blocks = []
    for _ in range(systems):
        name, o2 = cstring(td, o)
        count = u32(td, o2); o2 += 4
        kept = []
        for _ in range(count):
            size = u64(td, o2)
            text = td[o2 + 8:o2 + 8 + size]
            o2 += 8 + size
            ids = [int(l.split(b":")[1]) for l in text.split(b"\n") if l.startswith(b"ID:")]
            if ids and ids[0] in keep_ids:
                kept.append(struct.pack("<Q", size) + text)
        if kept:
            sys_blocks.append(td[o:o + len(name) + 1] + struct.pack("<I", len(kept)) + b"".join(kept))
        o = o2
    out += struct.pack("<I", len(sys_blocks)) + b"".join(sys_blocks)
    out += td[o:]                   # kallsyms, printk, saved cmdlines (version >= 0.6)
    return bytes(out)


def trim_event_desc(ed, keep_ids):
    nr, attr_size = u32(ed, 0), u32(ed, 4)
    o, kept = 8, []
    for _ in range(nr):
        start = o
        config = u64(ed, o + 8)     # perf_event_attr.config: the tracepoint id
        o += attr_size
        nr_ids = u32(ed, o); o += 4
        o += 4 + u32(ed, o)         # perf string: u32 padded length, bytes
        o += 8 * nr_ids
        if config in keep_ids:
            kept.append(ed[start:o])
    return struct.pack("<II", len(kept), attr_size) + b"".join(kept)


def main():
    src, dst, k, names = sys.argv[1], sys.argv[2], int(sys.argv[3]), set(sys.argv[4:])
    d = open(src, "rb").read()
    assert d[:8] == b"PERFILE2", "not a perf.data file (PERFILE2)"
    attr_size = u64(d, 16)
    attrs_off, attrs_size, data_off, data_size = struct.unpack_from("<QQQQ", d, 24)
    features = struct.unpack_from("<4Q", d, 72)
    bits = [i for i in range(FEATURE_BITS) if features[i // 64] >> (i % 64) & 1]
    table = data_off + data_size
    sections = {b: struct.unpack_from("<QQ", d, table + 16 * i) for i, b in enumerate(bits)}

    # Tracepoint ids of the named events, from the formats in HEADER_TRACING_DATA.
    td_off, td_size = sections[HEADER_TRACING_DATA]
    td = d[td_off:td_off + td_size]
    keep_tp = {int(i) for n, i in re.findall(rb"name: (\S+)\nID: (\d+)\n", td) if n.decode() in names}

    # Attrs (perf_event_attr + ids section) of those tracepoints, and their sample ids.
    kept_attrs, sample_ids, all_ids = [], set(), set()
    for a in range(attrs_off, attrs_off + attrs_size, attr_size):
        ids_off, ids_size = struct.unpack_from("<QQ", d, a + attr_size - 16)
        ids = struct.unpack_from(f"<{ids_size // 8}Q", d, ids_off)
        all_ids.update(ids)
        if u64(d, a + 8) not in keep_tp:
            continue
        assert u64(d, a + 24) & PERF_SAMPLE_IDENTIFIER, "samples without PERF_SAMPLE_IDENTIFIER"
        sample_ids.update(ids)
        kept_attrs.append((d[a:a + attr_size - 16], d[ids_off:ids_off + ids_size]))

    # Samples kept, and the pids they name (u64 id, u64 ip, then u32 pid: IDENTIFIER|IP|TID).
    kept_samples, pids = set(), set()
    pos = data_off
    while pos + 8 <= data_off + data_size:
        rtype, _, size = struct.unpack_from("<IHH", d, pos)
        assert size >= 8, f"bad record size at {pos}"
        if rtype == PERF_RECORD_SAMPLE and u64(d, pos + 8) in sample_ids and len(kept_samples) < k:
            kept_samples.add(pos)
            pids.add(u32(d, pos + 24))
        pos += size

    records, samples, others = bytearray(), 0, {}
    pos = data_off
    while pos + 8 <= data_off + data_size:
        rtype, _, size = struct.unpack_from("<IHH", d, pos)
        if rtype in TASK_RECORDS:
            # `perf record -a` synthesizes these for every task on the host: keep the kept
            # samples' tasks and two of each type, so every record parser still runs.
            others[rtype] = others.get(rtype, 0) + 1
            if u32(d, pos + 8) in pids or others[rtype] <= 2:
                rec = bytearray(d[pos:pos + size])
                # sample_id_all: the record ends with an IDENTIFIER, which must name a kept attr.
                if u64(rec, size - 8) in all_ids - sample_ids:
                    struct.pack_into("<Q", rec, size - 8, min(sample_ids))
                records += rec
        elif rtype == PERF_RECORD_ID_INDEX:
            # u64 nr, then {u64 id, idx (of the mmap), cpu, tid}: only the kept attrs' ids.
            entries = [struct.unpack_from("<4Q", d, pos + 16 + 32 * i) for i in range(u64(d, pos + 8))]
            entries = [e for e in entries if e[0] in sample_ids]
            body = struct.pack("<Q", len(entries)) + b"".join(struct.pack("<4Q", *e) for e in entries)
            records += struct.pack("<IHH", rtype, struct.unpack_from("<H", d, pos + 4)[0], 8 + len(body)) + body
        elif rtype != PERF_RECORD_SAMPLE:
            records += d[pos:pos + size]
        elif pos in kept_samples:
            records += d[pos:pos + size]
            samples += 1
        pos += size

    # New layout: header, id arrays, attrs, data, feature table, features (perf's own order).
    out = bytearray(d[:HEADER_SIZE])
    id_offs = []
    for _, ids in kept_attrs:
        id_offs.append(len(out))
        out += ids
    new_attrs_off = len(out)
    for (attr, ids), at in zip(kept_attrs, id_offs):
        out += attr + struct.pack("<QQ", at, len(ids))
    new_data_off = len(out)
    out += records
    struct.pack_into("<QQQQ", out, 24, new_attrs_off, len(kept_attrs) * attr_size, new_data_off, len(records))
    table_at = len(out)
    out += bytes(16 * len(bits))
    for i, b in enumerate(bits):
        off, size = sections[b]
        body = d[off:off + size]
        if b == HEADER_TRACING_DATA:
            body = trim_tracing_data(body, keep_tp)
        elif b == HEADER_EVENT_DESC:
            body = trim_event_desc(body, keep_tp)
        struct.pack_into("<QQ", out, table_at + 16 * i, len(out), len(body))
        out += body
    open(dst, "wb").write(out)
    print(f"perfdata_trim: {len(kept_attrs)} attrs, {samples} samples, {len(out)} bytes", file=sys.stderr)


if __name__ == "__main__":
    main()
