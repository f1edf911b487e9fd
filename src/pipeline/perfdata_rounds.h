// Reads a file-mode perf.data on several threads: the data section is cut into ~1 MB chunks at
// PERF_RECORD_FINISHED_ROUND records, or inside a longer round (PerfDataFile::cuts); workers parse,
// decode and time-sort each round (or part of one) of a chunk, and the caller's thread joins a
// round's parts and replays the sequential reader's round rule (perfdata_stream.h) over the
// sorted rounds — the same events, loss markers and diagnostics as OpenPerfDataRaw +
// MakeDecodingSource, in the same order, since the rule depends only on the records' times, file
// offsets and the running maximum time, all of which a round's parse yields.
// In: a mapped perf.data, a thread count. Out: a KvmEventSource. Memory stays flat: the chunks of two
// rounds and a few more are in flight, and the file is read with pread (no page of it is mapped).
// Assumption: perf's rounds bound how far a record can be late (as perf's own ordered_events
// assumes); a file that breaks it gets the sequential reader's answer all the same, a chunk held
// back by a late record costs its memory until that record is handed out.
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
// longer round is cut into parts): ten thousand kvm records or so, decoded in a few ms.
inline constexpr uint64_t kDefaultPerfChunkBytes = 1 << 20;

// Pipe mode, fewer than 4 chunks or threads < 2: the sequential reader
// (OpenPerfDataRaw + MakeDecodingSource); otherwise the parallel one. `chunk_bytes` 0 =
// kDefaultPerfChunkBytes (tests and fuzzers pass 1 to cut after every record).
Result<std::unique_ptr<KvmEventSource>> OpenPerfDataParallel(std::unique_ptr<MappedFile> input, unsigned threads,
                                                             uint64_t chunk_bytes = 0, const ClockOptions& clock = {});

// How many chunks `source` reads in (0: it is not the parallel perf.data reader).
size_t PerfChunkCount(const KvmEventSource& source);

}  // namespace exitscope
