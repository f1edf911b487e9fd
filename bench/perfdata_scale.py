#!/usr/bin/env python3
"""perfdata_scale.py IN.perf.data OUT.perf.data N [K] — the perf.data twin of tracedat_scale.

Repeats the data section's SAMPLE records (and FINISHED_ROUND markers) N times, every repetition's
sample times shifted past the previous one, so `perf kvm stat report` on OUT sees N× the exits of
the same run. Everything else (COMM/MMAP/… records, attrs, feature sections such as
HEADER_TRACING_DATA) is kept once; feature section offsets are moved past the longer data section.
Layout facts from tools/perf/Documentation/perf.data-file-format.txt (file mode, not pipe mode).
"""
import struct
import sys

PERF_RECORD_SAMPLE = 9          # include/uapi/linux/perf_event.h
PERF_RECORD_FINISHED_ROUND = 68  # tools/lib/perf/include/perf/event.h
# include/uapi/linux/perf_event.h: sample_type bits that precede TIME in a sample body.
SAMPLE_IP, SAMPLE_TID, SAMPLE_TIME, SAMPLE_IDENTIFIER = 1 << 0, 1 << 1, 1 << 2, 1 << 16


def main():
    src, dst, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    # Optional 4th argument: keep only the first K records of the data section (small fuzz seeds).
    max_records = int(sys.argv[4]) if len(sys.argv) > 4 else None
    data = bytearray(open(src, "rb").read())
    magic, hsize, attr_size = struct.unpack_from("<8sQQ", data, 0)
    if magic != b"PERFILE2":
        sys.exit("not a perf.data file (PERFILE2)")
    attrs_off, attrs_size, data_off, data_size = struct.unpack_from("<QQQQ", data, 24)
    if max_records is not None:
        # Cut the data section after K records and move the feature table and sections up.
        pos, kept = data_off, 0
        while kept < max_records and pos + 8 <= data_off + data_size:
            pos += struct.unpack_from("<IHH", data, pos)[2]
            kept += 1
        cut = data_off + data_size - pos
        features = struct.unpack_from("<4Q", data, 72)
        nfeat = sum(bin(w).count("1") for w in features)
        table_at = data_off + data_size
        for i in range(nfeat):
            off, size = struct.unpack_from("<QQ", data, table_at + 16 * i)
            struct.pack_into("<QQ", data, table_at + 16 * i, off - cut, size)
        data = data[:pos] + data[table_at:]
        data_size = pos - data_off
        struct.pack_into("<QQ", data, 40, data_off, data_size)
    features = struct.unpack_from("<4Q", data, 72)
    sample_types = {struct.unpack_from("<Q", data, attrs_off + i + 24)[0]
                    for i in range(0, attrs_size, attr_size)}
    # The time's place in a sample depends only on the bits before it: all attrs must agree.
    time_poss = {8 + 8 * sum(1 for b in (SAMPLE_IDENTIFIER, SAMPLE_IP, SAMPLE_TID) if st & b)
                 for st in sample_types if st & SAMPLE_TIME}
    if len(time_poss) != 1 or not all(st & SAMPLE_TIME for st in sample_types):
        sys.exit("attrs place the sample time differently (or lack it): not supported")
    time_pos = time_poss.pop()

    # One template of the repeated records, with where each sample's time sits in it.
    template = bytearray()
    times = []
    pos, end = data_off, data_off + data_size
    while pos + 8 <= end:
        rtype, _misc, size = struct.unpack_from("<IHH", data, pos)
        if size < 8:
            sys.exit(f"bad record size at {pos}")
        if rtype == PERF_RECORD_SAMPLE:
            times.append((len(template) + time_pos, struct.unpack_from("<Q", data, pos + time_pos)[0]))
            template += data[pos:pos + size]
        elif rtype == PERF_RECORD_FINISHED_ROUND:
            template += data[pos:pos + size]
        pos += size
    span = max(t for _, t in times) - min(t for _, t in times) + 1_000_000

    with open(dst, "wb") as out:
        out.write(data[:data_off + data_size])
        for rep in range(1, n):
            block = bytearray(template)
            shift = rep * span
            for at, t in times:
                struct.pack_into("<Q", block, at, t + shift)
            out.write(block)
        new_size = data_size + (n - 1) * len(template)
        delta = new_size - data_size
        # Feature sections: a perf_file_section {offset, size} per set bit, right after the data.
        nfeat = sum(bin(w).count("1") for w in features)
        table = bytearray(data[data_off + data_size:data_off + data_size + 16 * nfeat])
        for i in range(nfeat):
            off, size = struct.unpack_from("<QQ", table, 16 * i)
            struct.pack_into("<QQ", table, 16 * i, off + delta, size)
        out.write(table)
        out.write(data[data_off + data_size + 16 * nfeat:])
        out.seek(40)
        out.write(struct.pack("<QQ", data_off, new_size))
    print(f"perfdata_scale: {len(times)} samples x {n} = {len(times) * n}", file=sys.stderr)


if __name__ == "__main__":
    main()
