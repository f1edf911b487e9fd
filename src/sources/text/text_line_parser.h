// The line prefix of the three text dialects users bring, cut into {comm, tid, cpu, ts, event, body}:
//   kernel trace file:  "  kvmprobe-506     [001] d..1.    14.789538: kvm_entry: vcpu 0, rip 0x1000"
//                       (flags column optional; "comm-pid (tgid) [cpu]" with record-tgid)
//   trace-cmd report:   "  kvmprobe-506   [001]    14.758348: kvm_exit:   reason EXIT_NPF rip 0x1000 …"
//   perf script:        "  kvmprobe   506 [001]    14.758532:   kvm:kvm_exit: vcpu 0 reason npf …"
//   trace-cmd report -l (latency format: the CPU glued to its flags, no brackets) and --ts-diff
//   ("14.758348: (+206)  kvm_exit: …") are read as trace-cmd report.
// In: one line. Out: TextLine with views into the line. Assumption: the CPU is the first "[digits]"
// token after the comm; comms may contain spaces and dashes (the pid is the last "-digits").
#pragma once

#include <cstdint>
#include <string_view>

namespace exitscope {

enum class TextDialect : uint8_t { kUnknown, kKernelTrace, kTraceCmd, kPerfScript };
std::string_view TextDialectName(TextDialect d);

struct TextLine {
  std::string_view comm;
  int32_t tid = -1;
  int32_t cpu = -1;
  uint64_t ts_ns = 0;           // ts_raw: the printed integer itself, in the clock's own unit
  uint32_t ts_frac_digits = 0;  // resolution the text printed (6 = µs)
  bool ts_raw = false;          // printed without a decimal point: not seconds
  std::string_view system;      // "kvm" when the dialect names it (perf script), else empty
  std::string_view event;       // "kvm_exit"
  std::string_view body;        // after "event: ", trailing spaces trimmed
  TextDialect dialect = TextDialect::kUnknown;
};

// False when the line is not an event line of a known dialect.
bool ParseTextLine(std::string_view line, TextLine* out);

// "CPU:1 [LOST 123 EVENTS]" (trace-cmd report, kernel trace): true with cpu and count.
bool ParseLostLine(std::string_view line, int32_t* cpu, uint64_t* count);

}  // namespace exitscope
