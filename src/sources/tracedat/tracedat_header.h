// The metadata of a trace.dat file (trace-cmd's Documentation/trace-cmd/trace-cmd.dat.v6.5.txt and
// .v7.5.txt): v6's fixed header sequence and options, v7's options and sections (each may be
// compressed). In: the mapped file. Out: formats, TraceMeta (uname, clock, cpus, guests, comms,
// kallsyms) and where each CPU's ring-buffer pages live. The pages themselves are read later.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "format/event_format.h"
#include "model/diagnostics.h"
#include "base/result.h"
#include "model/trace_meta.h"
#include "sources/tracedat/decompressor.h"
#include "sources/tracedat/tracedat_format.h"

namespace exitscope {

struct TraceDatCpuData {
  int32_t cpu = 0;
  uint64_t offset = 0;  // file offset of the CPU's pages (v7 compressed: of its chunk count)
  uint64_t size = 0;    // bytes in the file (v7 compressed: as the BUFFER option claims them)
};

struct TraceDatLayout {
  int version = 0;
  Codec codec = Codec::kNone;    // of the metadata sections and, if flagged, the data
  bool data_compressed = false;  // v7 flyrecord data stored as compressed chunks
  uint32_t page_size = 0;
  uint32_t long_size = 8;
  std::string header_page;
  std::vector<TraceDatCpuData> cpus;
  // TSC2NSEC option: ns = (ts * mult) >> shift (trace-cmd applies neither offset nor clock check).
  uint32_t tsc_mult = 0, tsc_shift = 0;
  uint64_t tsc_offset = 0;
  int64_t ts_offset_ns = 0;  // OFFSET option: added to every timestamp, as trace-cmd does
};

// Reads headers, options and sections only: no page of the ring-buffer data is touched.
Result<TraceDatLayout> ParseTraceDatHeader(std::span<const uint8_t> file, const std::string& path,
                                           FormatRegistry* formats, TraceMeta* meta, Diagnostics* diagnostics);

}  // namespace exitscope
