// trace.dat (trace-cmd record, file versions 6 and 7; v7 data uncompressed, zlib or zstd) as a
// RawEventSource. In: a path. Out: every ring-buffer record of the top instance, all CPUs merged in
// time order, timestamps in ns when the clock allows (sources/trace_clock.h; --tsc-khz through
// `clock`), payloads in place (mmap) or in the current decompressed chunk. Memory stays flat: one
// chunk per CPU is decompressed at a time.
#pragma once

#include <memory>
#include <string>

#include "sources/mapped_file.h"
#include "sources/raw_event_source.h"
#include "sources/tracedat/tracedat_pages.h"
#include "base/result.h"
#include "model/trace_meta.h"

namespace exitscope {

// Opens and parses the metadata; the records are read as Next() is called.
Result<std::unique_ptr<RawEventSource>> OpenTraceDat(const std::string& path, const ClockOptions& clock = {});
// The same over an input already opened (and sniffed) once: a pipe cannot be opened again.
Result<std::unique_ptr<RawEventSource>> OpenTraceDat(std::unique_ptr<MappedFile> file, const ClockOptions& clock);
// The same over bytes in memory (fuzzers, tests); `bytes` must outlive the source, `name` is what
// messages call the input.
Result<std::unique_ptr<RawEventSource>> OpenTraceDatBuffer(std::span<const uint8_t> bytes, const std::string& name);

// The sequential reader (tracedat_reader.cc) over a file OpenTraceDatShared already parsed: the
// sliced reader hands over a file it will not slice, so the header is parsed once. A compressed
// file's CPUs are decompressed ahead on up to `prefetch_threads` threads (one CPU on one at a time).
std::unique_ptr<RawEventSource> MakeTraceDatReader(TraceDatShared shared, TraceMeta meta, FormatRegistry formats,
                                                   Diagnostics diagnostics, const TraceDatLayout& layout,
                                                   unsigned prefetch_threads = 1);

// True when the bytes start with the trace.dat / tracing-data magic.
bool LooksLikeTraceDat(std::span<const uint8_t> head);

}  // namespace exitscope
