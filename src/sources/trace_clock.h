// What a trace's clock counts and how its raw timestamps become ns: one decision for every reader.
// In: the clock the trace names (trace-cmd's TRACECLOCK / BUFFER clock, v6's "[clock]" text), the
// file's TSC2NSEC option and the user's --tsc-khz. Out: a ClockPlan — the unit of the timestamps
// handed out, the raw→ns multiplier, the label the report shows and the notes it must print.
// Assumption: x86 (or arm64, which adds no clock): the clocks are kernel/trace/trace.c trace_clocks[]
// plus x86's "x86-tsc" (arch/x86/include/asm/trace_clock.h) and trace-cmd's "tsc2nsec" (x86-tsc
// recorded with a TSC2NSEC option).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "model/trace_meta.h"

namespace exitscope {

struct ClockPlan {
  TimeUnit unit = TimeUnit::kNs;  // of the timestamps after conversion
  // ns = (raw * mult) >> shift when mult != 0 (128-bit product, as trace-cmd's mul_u64_u32_shr).
  uint64_t mult = 0;
  uint32_t shift = 0;
  std::string label;               // for TraceMeta::clock: "x86-tsc (--tsc-khz 2400000)"
  std::vector<std::string> notes;  // for TraceMeta::clock_notes
  uint64_t ToNs(uint64_t raw) const {
    return mult ? static_cast<uint64_t>((static_cast<unsigned __int128>(raw) * mult) >> shift) : raw;
  }
};

// clock: as the trace names it ("" when it does not). file_mult/file_shift: the TSC2NSEC option
// (file_mult 0: none, or unusable).
ClockPlan PlanClock(std::string_view clock, uint32_t file_mult, uint32_t file_shift, const ClockOptions& options);

// Text whose timestamps are plain integers ("123456789012:"): trace-cmd report and the kernel's
// trace file print so for clocks not in ns (x86-tsc, counter), and `trace-cmd report --raw-ts`
// for any clock. Cycles when --tsc-khz says so, else unknown.
ClockPlan PlanRawTextClock(const ClockOptions& options);

// Stores the plan's unit, label and notes in *meta.
void ApplyClockPlan(const ClockPlan& plan, TraceMeta* meta);

// Multiplier and shift for ns = cycles * 1e6 / khz (khz > 0).
void TscKhzToMultShift(double khz, uint64_t* mult, uint32_t* shift);

}  // namespace exitscope
