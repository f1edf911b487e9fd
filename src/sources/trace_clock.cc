#include "sources/trace_clock.h"

#include <cmath>
#include <fmt/format.h>

namespace exitscope {
namespace {

// include/asm-generic/param.h (x86 and arm64 use it): USER_HZ, the unit of the "uptime" clock
// (kernel/trace/trace_clock.c trace_clock_jiffies() returns jiffies_64_to_clock_t()).
constexpr uint64_t kUserHz = 100;
constexpr uint64_t kNsPerUptimeTick = 1000000000 / kUserHz;

// --tsc-khz as ns = (cycles * mult) >> 32: 32 fraction bits keep the error below 1e-9 relative.
constexpr uint32_t kKhzShift = 32;

enum class ClockKind { kNs, kUptime, kCounter, kTsc, kUnknown };

// kernel/trace/trace.c trace_clocks[]: local, global, perf, mono, mono_raw, boot, tai have
// in_ns = 1; counter and uptime in_ns = 0; x86's x86-tsc in_ns = 0. trace-cmd's -C tsc2nsec records
// x86-tsc and names the clock "tsc2nsec". A trace that names no clock was recorded with the
// kernel's default, local (trace-cmd reads it so too).
ClockKind KindOf(std::string_view clock) {
  for (std::string_view ns : {"local", "global", "perf", "mono", "mono_raw", "boot", "tai", ""}) {
    if (clock == ns) return ClockKind::kNs;
  }
  if (clock == "uptime") return ClockKind::kUptime;
  if (clock == "counter") return ClockKind::kCounter;
  if (clock == "x86-tsc" || clock == "tsc2nsec") return ClockKind::kTsc;
  return ClockKind::kUnknown;
}

std::string KhzText(double khz) {
  return khz == std::floor(khz) ? fmt::format("{:.0f}", khz) : fmt::format("{:.3f}", khz);
}

void UseKhz(double khz, ClockPlan* p) {
  TscKhzToMultShift(khz, &p->mult, &p->shift);
  p->unit = TimeUnit::kNs;
  p->label += " (--tsc-khz " + KhzText(khz) + ")";
}

}  // namespace

void TscKhzToMultShift(double khz, uint64_t* mult, uint32_t* shift) {
  *shift = kKhzShift;
  *mult = static_cast<uint64_t>(std::llround(1e6 * std::ldexp(1.0, kKhzShift) / khz));
}

ClockPlan PlanClock(std::string_view clock, uint32_t file_mult, uint32_t file_shift, const ClockOptions& options) {
  ClockPlan p;
  p.label = std::string(clock);
  const double khz = options.tsc_khz;
  std::string name = clock.empty() ? "local (not recorded)" : std::string(clock);
  // The file's own conversion wins, as in trace-cmd (tsc_calc is applied to any clock).
  if (file_mult) {
    p.mult = file_mult;
    p.shift = file_shift;
    if (clock != "tsc2nsec") p.label += " (tsc2nsec)";
    if (khz > 0) p.notes.push_back("--tsc-khz ignored: the file's TSC2NSEC option already converts its times to ns");
    return p;
  }
  switch (KindOf(clock)) {
    case ClockKind::kNs:
      if (khz > 0) p.notes.push_back(fmt::format("--tsc-khz ignored: clock {} already counts ns", name));
      break;
    case ClockKind::kUptime:
      p.mult = kNsPerUptimeTick;
      p.notes.push_back(
          "clock uptime: jiffies (10 ms steps, USER_HZ 100) converted to ns; an exit reads as "
          "0 or 10 ms, record with the default clock (local) to time exits");
      if (khz > 0) p.notes.push_back("--tsc-khz ignored: clock uptime counts jiffies, not TSC cycles");
      break;
    case ClockKind::kCounter:
      p.unit = TimeUnit::kCount;
      p.notes.push_back(
          "clock counter: timestamps count trace events, they are not time; durations are "
          "event counts");
      if (khz > 0) p.notes.push_back("--tsc-khz ignored: clock counter counts events, not TSC cycles");
      break;
    case ClockKind::kTsc:
      if (khz > 0) {
        UseKhz(khz, &p);
      } else {
        p.unit = TimeUnit::kCycles;
        p.notes.push_back(
            fmt::format("clock {}: times are TSC cycles, not ns (no TSC2NSEC option); pass "
                        "--tsc-khz N (the recording host's TSC rate) to convert",
                        name));
      }
      break;
    case ClockKind::kUnknown:
      if (khz > 0) {
        UseKhz(khz, &p);
        p.notes.push_back(fmt::format("clock {}: unknown to exitscope, read as TSC cycles (--tsc-khz)", name));
      } else {
        p.unit = TimeUnit::kUnknown;
        p.notes.push_back(
            fmt::format("clock {}: unknown to exitscope; times are its raw numbers (pass "
                        "--tsc-khz N if they are TSC cycles)",
                        name));
      }
      break;
  }
  return p;
}

ClockPlan PlanRawTextClock(const ClockOptions& options) {
  ClockPlan p;
  if (options.tsc_khz > 0) {
    p.label = "raw timestamps";
    UseKhz(options.tsc_khz, &p);
    p.notes.push_back("integer timestamps read as TSC cycles (--tsc-khz)");
    return p;
  }
  p.unit = TimeUnit::kUnknown;
  p.label = "raw timestamps";
  p.notes.push_back(
      "timestamps are plain integers (x86-tsc or counter clock, or --raw-ts): their unit is "
      "unknown; pass --tsc-khz N if they are TSC cycles");
  return p;
}

void ApplyClockPlan(const ClockPlan& plan, TraceMeta* meta) {
  meta->time_unit = plan.unit;
  meta->clock = plan.label;
  meta->clock_notes.insert(meta->clock_notes.end(), plan.notes.begin(), plan.notes.end());
}

}  // namespace exitscope
