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

namespace exitscope {

// trace-cmd lib/trace-cmd/include/trace-cmd-local.h / trace.dat.v7 doc: option ids.
enum TraceDatOption : uint16_t {
  kOptDone = 0,
  kOptDate = 1,
  kOptCpuStat = 2,
  kOptBuffer = 3,
  kOptTraceClock = 4,
  kOptUname = 5,
  kOptHook = 6,
  kOptOffset = 7,
  kOptCpuCount = 8,
  kOptVersion = 9,
  kOptProcMaps = 10,
  kOptTraceId = 11,
  kOptTimeShift = 12,
  kOptGuest = 13,
  kOptTsc2Nsec = 14,
  kOptStrings = 15,
  kOptHeaderInfo = 16,
  kOptFtraceEvents = 17,
  kOptEventFormats = 18,
  kOptKallsyms = 19,
  kOptPrintk = 20,
  kOptCmdlines = 21,
  kOptBufferText = 22,
};

// Bumped (info) per TIME_SHIFT option: its guest→host offsets are not applied.
inline constexpr const char* kTimeShiftIgnored = "tracedat.time_shift_ignored";

// v7 section header flag: the section body is {u32 compressed size, u32 size, data}.
inline constexpr uint16_t kSectionCompressed = 1;

struct TraceDatCpuData {
  int32_t cpu = 0;
  uint64_t offset = 0;  // file offset of the CPU's pages (v7 compressed: of its chunk count)
  uint64_t size = 0;    // bytes in the file
};

struct TraceDatLayout {
  int version = 0;
  Codec codec = Codec::kNone;       // of the metadata sections and, if flagged, the data
  bool data_compressed = false;     // v7 flyrecord data stored as compressed chunks
  uint32_t page_size = 0;
  uint32_t long_size = 8;
  std::string header_page;
  std::vector<TraceDatCpuData> cpus;
  // TSC2NSEC option: ns = (ts * mult) >> shift (trace-cmd applies neither offset nor clock check).
  uint32_t tsc_mult = 0, tsc_shift = 0;
  uint64_t tsc_offset = 0;
  int64_t ts_offset_ns = 0;         // OFFSET option: added to every timestamp, as trace-cmd does
};

Result<TraceDatLayout> ParseTraceDatHeader(std::span<const uint8_t> file, const std::string& path,
                                           FormatRegistry* formats, TraceMeta* meta,
                                           Diagnostics* diagnostics);

}  // namespace exitscope
