// What a trace says about where it came from. In: filled by each source at open time.
// Out: the report's context block (kernel, ISA, clock, source) and the names of host threads.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "base/units.h"  // TimeUnit
#include "model/kvm_event.h"

namespace exitscope {

// What the user says about a trace's clock, applied by every reader as it opens the trace.
struct ClockOptions {
  double tsc_khz = 0;  // --tsc-khz: TSC ticks per ms of the recording host (0: not given)
};

struct GuestInfo {  // trace-cmd's GUEST option (one per traced guest)
  std::string name;
  uint64_t trace_id = 0;
  std::map<int32_t, int32_t> vcpu_to_host_tid;  // vCPU index → host thread id
  // What `exitscope record` knew on the live host (empty in trace-cmd's own GUEST options).
  std::string uuid, vmm;
};

struct TraceMeta {
  std::string source_path;
  std::string source_format;           // "trace.dat v7 (zstd)", "perf.data", "text: trace-cmd report" …
  std::string kernel;                  // uname / OSRELEASE when recorded
  std::string clock;                   // "local", "global", "x86-tsc", "tsc2nsec"…
  TimeUnit time_unit = TimeUnit::kNs;  // of every timestamp handed out
  // Lines the report prints about the clock: a unit that is not ns, a conversion not applied.
  std::vector<std::string> clock_notes;
  std::string cpu_description;   // CPUDESC / CPUID when recorded
  std::string hostname;          // perf.data HOSTNAME feature (empty when unknown)
  std::string arch;              // perf.data ARCH feature ("x86_64")
  std::string record_command;    // the recording's command line (perf.data CMDLINE feature)
  Isa isa_hint = Isa::kUnknown;  // from the file's CPU information, when it has one
  int cpu_count = 0;
  uint32_t page_size = 0;
  std::map<int32_t, std::string> comm_by_tid;  // pid → comm (cmdlines, COMM records, text)
  std::map<int32_t, int32_t> tgid_by_tid;      // thread → process when the source knows it
  std::vector<GuestInfo> guests;
  std::string kallsyms;  // host kallsyms text to write (the live recorder's); readers do not keep it
  // First and last timestamp of every record the source read, kvm events or not (set when the
  // source is exhausted; both 0 when it read none): the trace's span.
  uint64_t first_ts_ns = 0, last_ts_ns = 0;
  // First event time per CPU. In an overwritten (flight-recorder) ring buffer CPUs start at different
  // times; before the latest start, an exit's entry may simply be missing (Perfetto drops those).
  std::map<int32_t, uint64_t> cpu_first_ts_ns;
  bool buffer_overwritten = false;  // the source saw overwrite/lost markers at the start
};

}  // namespace exitscope
