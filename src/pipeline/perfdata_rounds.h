// Reads a file-mode perf.data on several threads (or, with one, on the caller's thread alone): the
// data section is cut into ~1 MB chunks as it is read — one worker at a time reads the next chunk
// (pread) and walks its record headers to the first record end the chunk size on
// (PerfDataFile::CutChunk: counts, losses, COMM/FORK names) —
// and the workers parse, decode and time-sort each round (or part of one) of a chunk; the caller's
// thread applies a chunk's names, joins a round's parts and replays the sequential reader's round
// rule (perfdata_stream.h) over the sorted rounds — the same events, loss markers, diagnostics and
// names as OpenPerfDataRaw + MakeDecodingSource, in the same order, since the rule depends only on
// the records' times, file offsets and the running maximum time, all of which a round's parse yields.
// In: a mapped perf.data, a thread count. Out: a KvmEventSource. Memory stays flat: the chunks of two
// rounds and a few more are in flight, and the file is read once, with pread (no page of it is
// mapped).
// Assumption: perf's rounds bound how far a record can be late (as perf's own ordered_events
// assumes); a file that breaks it gets the sequential reader's answer all the same, a chunk held
// back by a late record costs its memory until that record is handed out. A thread's COMM/FORK
// record comes in a chunk merged before its samples are handed out (they follow it in time, so a
// round rule holds them back until then): consumers that look a thread up while reading see it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "base/result.h"
#include "model/event_source.h"
#include "model/trace_meta.h"
#include "sources/mapped_file.h"

namespace exitscope {

// At least this much of the data section per chunk (perf writes rounds of ~1-8 MB, and more; a
// longer round is cut into parts): fifteen thousand kvm records or so, decoded in a few ms, whose
// events and entries fill most of one 2 MB huge page.
inline constexpr uint64_t kDefaultPerfChunkBytes = 3 << 19;  // 1.5 MB

// Pipe mode: the sequential reader (OpenPerfDataRaw + MakeDecodingSource). Fewer than 4 chunks'
// worth of data or threads < 2: the same chunks cut and parsed on the caller's thread, as it needs
// them (no worker). Otherwise workers. `chunk_bytes` 0 = kDefaultPerfChunkBytes (tests and fuzzers
// pass 1 to cut after every record).
Result<std::unique_ptr<KvmEventSource>> OpenPerfDataParallel(std::unique_ptr<MappedFile> input, unsigned threads,
                                                             uint64_t chunk_bytes = 0, const ClockOptions& clock = {});

// How many chunks `source` has cut (all of them once read; at least 1 for the chunked perf.data
// reader, with workers or without, 0 for any other source).
size_t PerfChunkCount(const KvmEventSource& source);

}  // namespace exitscope
