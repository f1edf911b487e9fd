// The trace.dat file format's numbers, in one place for the reader (tracedat_header, tracedat_pages),
// the writer (sinks/tracedat_writer) and the scaling tool (bench/tracedat_scale). Each comes from
// trace-cmd's own description of the format: Documentation/trace-cmd/trace-cmd.dat.v6.5.txt and
// trace-cmd.dat.v7.5.txt, and where trace-cmd 3.1.6 writes something the text does not say, from a
// file it wrote (noted). The magic itself is kTracingMagic (format/tracing_data.h): perf.data's
// HEADER_TRACING_DATA opens with the same bytes, so it lives in the layer both readers share.
#pragma once

#include <cstdint>
#include <string_view>

namespace exitscope {

// trace.dat.v6.5 "REST OF TRACE-CMD HEADER": 10-byte markers after the CPU count.
inline constexpr std::string_view kV6Options("options  \0", 10);
inline constexpr std::string_view kV6Latency("latency  \0", 10);
inline constexpr std::string_view kV6Flyrecord("flyrecord\0", 10);

// trace.dat.v7.5 "OPTIONS" (trace-cmd lib/trace-cmd/include/private/trace-cmd-private.h, enum
// tracecmd_file_options). In v7 a section's id is the option id that points to it; an options
// section has id kOptDone.
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

// trace.dat.v7.5 "SECTIONS": u16 id, u16 flags, u32 description (an offset into the strings
// section), then the size. The text says a 4-byte size; trace-cmd 3.1.6 writes and reads 8 bytes
// (checked on a file it wrote), which is what every v7 file in the wild has.
inline constexpr uint64_t kSectionHeaderSize = 2 + 2 + 4 + 8;
inline constexpr uint64_t kSectionFlagsOffset = 2;  // flags follow the u16 id
// trace-cmd.h enum tracecmd_section_flags TRACECMD_SEC_FL_COMPRESS: the body is a compressed block.
inline constexpr uint16_t kSectionCompressed = 1;
// A compressed block (section body or flyrecord chunk): u32 compressed size, u32 size, then data.
inline constexpr uint64_t kCompressedBlockHeaderSize = 4 + 4;

// An option: u16 id, u32 size, then size bytes. In v7 the DONE option carries a u64: the offset of
// the next options section (0: none).
inline constexpr uint64_t kOptionHeaderSize = 2 + 4;
inline constexpr uint64_t kDoneOptionSize = kOptionHeaderSize + 8;

// v7 compressed flyrecord data: per CPU a u32 chunk count, then the chunks. The BUFFER option's
// per-CPU size leaves the count out (as trace-cmd 3.1.6 writes it).
inline constexpr uint64_t kChunkCountSize = 4;
// trace-cmd 3.1.6 compresses this many ring-buffer pages per chunk.
inline constexpr uint32_t kTraceCmdPagesPerChunk = 10;

}  // namespace exitscope
