// perf.data as a RawEventSource: the tracepoint formats come from the file's own tracing data
// (HEADER_TRACING_DATA, parsed by decode/tracing_data), records from PerfSampleStream in time order.
// In: a path. Out: RawEvents {ts, cpu, sample tid, RAW payload}; MakeDecodingSource turns them into
// KvmEvents. Assumption: the recording used tracepoints (perf record -e 'kvm:*' / perf kvm stat
// record); a perf.data without tracing data is refused with a hint.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "sources/raw_event_source.h"
#include "base/result.h"
#include "sources/mapped_file.h"
#include "model/trace_meta.h"
#include "sources/perfdata/perfdata_reader.h"

namespace exitscope {

// An opened perf.data with its tracepoint formats parsed: what the sequential source below and the
// parallel reader (pipeline/perfdata_rounds.h) are made from.
struct PerfDataParts {
  std::unique_ptr<PerfDataFile> file;
  std::unique_ptr<Diagnostics> diagnostics;  // PerfDataFile::Open's counts so far
  FormatRegistry formats;
};
// `chunked`: PerfDataFile::OpenChunked, not Open (the records are walked later, chunk by chunk).
Result<PerfDataParts> OpenPerfDataParts(std::unique_ptr<MappedFile> input, const ClockOptions& clock,
                                        bool chunked = false);
// The sequential source (PerfSampleStream, round-sorted) over opened parts.
std::unique_ptr<RawEventSource> MakePerfDataRawSource(PerfDataParts parts);

Result<std::unique_ptr<RawEventSource>> OpenPerfDataRaw(const std::string& path, const ClockOptions& clock = {});
// The same over an input already opened (and sniffed) once: a pipe cannot be opened again.
Result<std::unique_ptr<RawEventSource>> OpenPerfDataRaw(std::unique_ptr<MappedFile> input, const ClockOptions& clock);
// The same over bytes in memory (fuzzers, tests); `bytes` must outlive the source.
Result<std::unique_ptr<RawEventSource>> OpenPerfDataRawBuffer(std::span<const uint8_t> bytes, const std::string& name);

}  // namespace exitscope
