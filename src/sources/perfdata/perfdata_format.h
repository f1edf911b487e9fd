// The perf.data on-disk ABI: record types, sample_type / read_format bits, header feature ids and
// perf_event_attr offsets. Facts from include/uapi/linux/perf_event.h and
// tools/perf/Documentation/perf.data-file-format.txt (Linux 6.1); no logic lives here.
#pragma once

#include <cstdint>

namespace exitscope::perfdata {

// "PERFILE2" read as a little-endian u64 (perf.data-file-format.txt: magic). A big-endian writer's
// file reads as the byte-swapped value.
inline constexpr uint64_t kMagicLe = 0x32454c4946524550ULL;
inline constexpr uint64_t kMagicSwapped = 0x50455246494c4532ULL;
// Pipe mode (`perf record -o -`): the header is only {magic, size = 16}.
inline constexpr uint64_t kPipeHeaderSize = 16;
// Offsets in struct perf_file_header (file mode).
inline constexpr uint64_t kFileHeaderMinSize = 104;  // magic, size, attr_size, 3 sections, 256-bit features
inline constexpr uint64_t kHeaderAttrSizeOff = 16;
inline constexpr uint64_t kHeaderAttrsOff = 24;
inline constexpr uint64_t kHeaderDataOff = 40;
inline constexpr uint64_t kHeaderFeaturesOff = 72;
inline constexpr int kFeatureBits = 256;

// struct perf_event_header: u32 type; u16 misc; u16 size.
inline constexpr uint32_t kRecordHeaderSize = 8;

// enum perf_event_type (include/uapi/linux/perf_event.h).
inline constexpr uint32_t kRecordMmap = 1;
inline constexpr uint32_t kRecordLost = 2;
inline constexpr uint32_t kRecordComm = 3;
inline constexpr uint32_t kRecordExit = 4;
inline constexpr uint32_t kRecordFork = 7;
inline constexpr uint32_t kRecordSample = 9;
inline constexpr uint32_t kRecordLostSamples = 13;
// enum perf_user_event_type (tools/lib/perf/include/perf/event.h): records perf itself writes.
inline constexpr uint32_t kRecordHeaderAttr = 64;
inline constexpr uint32_t kRecordHeaderEventType = 65;
inline constexpr uint32_t kRecordHeaderTracingData = 66;
inline constexpr uint32_t kRecordHeaderBuildId = 67;
inline constexpr uint32_t kRecordFinishedRound = 68;
inline constexpr uint32_t kRecordHeaderFeature = 80;
inline constexpr uint32_t kRecordCompressed = 81;

// enum perf_event_sample_format.
inline constexpr uint64_t kSampleIp = 1ULL << 0;
inline constexpr uint64_t kSampleTid = 1ULL << 1;
inline constexpr uint64_t kSampleTime = 1ULL << 2;
inline constexpr uint64_t kSampleAddr = 1ULL << 3;
inline constexpr uint64_t kSampleRead = 1ULL << 4;
inline constexpr uint64_t kSampleCallchain = 1ULL << 5;
inline constexpr uint64_t kSampleId = 1ULL << 6;
inline constexpr uint64_t kSampleCpu = 1ULL << 7;
inline constexpr uint64_t kSamplePeriod = 1ULL << 8;
inline constexpr uint64_t kSampleStreamId = 1ULL << 9;
inline constexpr uint64_t kSampleRaw = 1ULL << 10;
inline constexpr uint64_t kSampleIdentifier = 1ULL << 16;
// Every field perf_event.h's PERF_RECORD_SAMPLE puts after RAW (BRANCH_STACK 1 << 11 and on, but
// IDENTIFIER, which comes first): with none of them set a sample ends at RAW's u64 padding.
inline constexpr uint64_t kSampleFieldsAfterRaw = ~((1ULL << 11) - 1) & ~kSampleIdentifier;

// enum perf_event_read_format.
inline constexpr uint64_t kReadTotalTimeEnabled = 1ULL << 0;
inline constexpr uint64_t kReadTotalTimeRunning = 1ULL << 1;
inline constexpr uint64_t kReadId = 1ULL << 2;
inline constexpr uint64_t kReadGroup = 1ULL << 3;
inline constexpr uint64_t kReadLost = 1ULL << 4;

// struct perf_event_attr field offsets (stable since PERF_ATTR_SIZE_VER0 = 64 bytes).
inline constexpr uint32_t kAttrTypeOff = 0;
inline constexpr uint32_t kAttrSizeOff = 4;
inline constexpr uint32_t kAttrConfigOff = 8;
inline constexpr uint32_t kAttrSampleTypeOff = 24;
inline constexpr uint32_t kAttrReadFormatOff = 32;
inline constexpr uint32_t kAttrFlagsOff = 40;
inline constexpr uint32_t kAttrClockIdOff = 92;  // PERF_ATTR_SIZE_VER1+ (96 bytes)
inline constexpr uint32_t kAttrMinSize = 64;     // PERF_ATTR_SIZE_VER0
inline constexpr uint64_t kAttrFlagSampleIdAll = 1ULL << 18;
inline constexpr uint64_t kAttrFlagUseClockId = 1ULL << 25;
inline constexpr uint32_t kAttrTypeTracepoint = 2;  // PERF_TYPE_TRACEPOINT: config = event id

// enum of header features (tools/perf/util/header.h): bit n of adds_features = section n present.
inline constexpr int kFeatTracingData = 1;
inline constexpr int kFeatHostname = 3;
inline constexpr int kFeatOsRelease = 4;
inline constexpr int kFeatVersion = 5;
inline constexpr int kFeatArch = 6;
inline constexpr int kFeatNrCpus = 7;
inline constexpr int kFeatCpuDesc = 8;
inline constexpr int kFeatCpuId = 9;
inline constexpr int kFeatCmdline = 11;
inline constexpr int kFeatEventDesc = 12;
inline constexpr int kFeatClockId = 23;

}  // namespace exitscope::perfdata
