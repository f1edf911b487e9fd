#!/usr/bin/env python3
"""perfdata_rounds_seeds.py IN.perf.data OUT.perf.data EVERY [LATE] — a seed for perfdata_rounds_fuzzer.

Rewrites a (small, file-mode) perf.data's data section with a PERF_RECORD_FINISHED_ROUND after every
EVERY records, so the parallel reader cuts it into many chunks; with LATE, the first sample of every
third round is moved to the end of the next round (a record perf's round rule must still place) and
a PERF_RECORD_LOST (lost 5) and a PERF_RECORD_LOST_SAMPLES (lost 3) are added in the second round.
The feature table and sections after the data section move by the added bytes.
Layout facts from tools/perf/Documentation/perf.data-file-format.txt and include/uapi/linux/perf_event.h.
"""
import struct
import sys

PERF_RECORD_LOST = 2
PERF_RECORD_SAMPLE = 9
PERF_RECORD_LOST_SAMPLES = 13
PERF_RECORD_FINISHED_ROUND = 68


def main():
    src, dst, every = sys.argv[1], sys.argv[2], int(sys.argv[3])
    late = len(sys.argv) > 4 and sys.argv[4] == "late"
    data = bytearray(open(src, "rb").read())
    if data[:8] != b"PERFILE2":
        sys.exit("not a perf.data file (PERFILE2)")
    data_off, data_size = struct.unpack_from("<QQ", data, 40)
    records, pos = [], data_off
    while pos + 8 <= data_off + data_size:
        t, _, size = struct.unpack_from("<IHH", data, pos)
        if size < 8:
            break
        if t != PERF_RECORD_FINISHED_ROUND:
            records.append(bytes(data[pos:pos + size]))
        pos += size
    rounds = [records[i:i + every] for i in range(0, len(records), every)]
    if late:
        for i in range(0, len(rounds) - 1, 3):
            for j, r in enumerate(rounds[i]):
                if struct.unpack_from("<I", r, 0)[0] == PERF_RECORD_SAMPLE:
                    rounds[i + 1].append(rounds[i].pop(j))
                    break
        if len(rounds) > 1:
            rounds[1].insert(1, struct.pack("<IHHQQ", PERF_RECORD_LOST, 0, 24, 1, 5))
            rounds[1].append(struct.pack("<IHHQ", PERF_RECORD_LOST_SAMPLES, 0, 16, 3))
    finished = struct.pack("<IHH", PERF_RECORD_FINISHED_ROUND, 0, 8)
    body = b"".join(b"".join(r) + finished for r in rounds)
    delta = len(body) - data_size
    tail = bytearray(data[data_off + data_size:])
    features = struct.unpack_from("<4Q", data, 72)
    for i in range(sum(bin(w).count("1") for w in features)):
        off, size = struct.unpack_from("<QQ", tail, 16 * i)
        struct.pack_into("<QQ", tail, 16 * i, off + delta, size)
    out = bytearray(data[:data_off]) + body + tail
    struct.pack_into("<QQ", out, 40, data_off, len(body))
    open(dst, "wb").write(out)


if __name__ == "__main__":
    main()
