// The tracing-data block shared by trace.dat (v6 header, v7 sections) and perf.data
// (HEADER_TRACING_DATA): header_page, header_event, ftrace formats, event formats, kallsyms, printk
// formats, saved cmdlines. In: bytes. Out: formats in a FormatRegistry, kallsyms and pid→comm in
// TraceMeta, the header_page text (ring-buffer page layout). Assumption: little-endian producer.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "format/event_format.h"
#include "model/diagnostics.h"
#include "base/result.h"
#include "model/trace_meta.h"

namespace exitscope {

class ByteReader;

// "\x17\x08\x44tracing": the first 10 bytes of trace.dat and of perf's tracing data.
inline constexpr char kTracingMagic[] = "\x17\x08\x44tracing";
inline constexpr size_t kTracingMagicSize = 10;

struct TracingDataInfo {
  std::string version;  // "6", "7", "0.6" (perf)
  uint32_t page_size = 0;
  uint32_t long_size = 8;
  std::string header_page;  // events/header_page text: the ring-buffer page header layout
  std::string header_event;
  size_t consumed = 0;  // bytes read; trace.dat v6 continues with the CPU count and options
};

// Parses a whole tracing-data block that starts with kTracingMagic and a "6"/"0.6"-style version:
// the layout perf.data's HEADER_TRACING_DATA and trace.dat v6 share. Fills `formats` (every event
// whose format parses; a bad one is counted in diagnostics as "format.unparsable"), meta->comm_by_tid
// and, when it is unknown, meta->isa_hint from the kallsyms (ParseKallsyms). Cmdlines are optional
// (perf before 0.6 lacks them). `info` may be null.
Status ParseTracingData(std::span<const uint8_t> bytes, FormatRegistry* formats, TraceMeta* meta,
                        Diagnostics* diagnostics, TracingDataInfo* info = nullptr);

// The pieces, as trace.dat v7 stores them in separate sections. Each returns false when the
// bytes ended early (the caller turns that into its own error).
bool ParseHeaderInfo(ByteReader* r, TracingDataInfo* info);
bool ParseFtraceFormats(ByteReader* r, FormatRegistry* formats, Diagnostics* diagnostics);
bool ParseEventSystems(ByteReader* r, FormatRegistry* formats, Diagnostics* diagnostics);
// The host's kallsyms: the ISA its KVM module runs (vmx_vcpu_run / svm_vcpu_run) becomes
// meta->isa_hint when that is unknown, so a report names it even without a kvm_exit. Not kept.
bool ParseKallsyms(ByteReader* r, TraceMeta* meta);
bool ParsePrintk(ByteReader* r);
bool ParseCmdlines(ByteReader* r, TraceMeta* meta);
// "pid comm" lines (tracefs saved_cmdlines) into meta->comm_by_tid.
void AddCmdlines(std::string_view text, TraceMeta* meta);

}  // namespace exitscope
