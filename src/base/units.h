// The one way exitscope writes durations for people (issue 13: advise, top, the RIP
// view and report each had their own). In: a time in the trace's unit. Out: "850ns", "4.193ms",
// "459.8us", "2.148s" — three or four significant digits and no space, as the report's tables always
// printed them, so a number reads the same in every command; a time that is not in ns (TSC cycles,
// counts) keeps its own unit with an SI prefix, "1.23Mcyc", never s/ns.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace exitscope {

// The unit of every timestamp a source hands out (KvmEvent::ts_ns and all times derived from it):
// ns unless the trace's clock does not count ns and nothing converts it (sources/trace_clock.h).
enum class TimeUnit : uint8_t {
  kNs,       // every clock of kernel/trace/trace.c trace_clocks[] with in_ns = 1, or converted
  kCycles,   // x86-tsc (arch/x86/include/asm/trace_clock.h, in_ns = 0) without TSC2NSEC / --tsc-khz
  kCount,    // "counter": an atomic count of events, no time at all
  kUnknown,  // raw numbers of a clock exitscope does not know (e.g. integer text timestamps)
};

// "ns", "cycles", "count", "unknown" (the JSON "time_unit" values).
constexpr std::string_view TimeUnitName(TimeUnit u) {
  switch (u) {
    case TimeUnit::kNs: return "ns";
    case TimeUnit::kCycles: return "cycles";
    case TimeUnit::kCount: return "count";
    default: return "unknown";
  }
}

std::string FormatDuration(double v, TimeUnit unit = TimeUnit::kNs);
inline std::string FormatDuration(uint64_t v, TimeUnit unit = TimeUnit::kNs) {
  return FormatDuration(static_cast<double>(v), unit);
}

}  // namespace exitscope
