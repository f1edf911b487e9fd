// Guest RIP attribution: which guest code triggers which exits. Collates timed exits by (reason, guest
// RIP) for `report --by rip`, and by (VM, vCPU, reason, RIP) for flame-graph folded stacks.
// In: ExitSamples from analysis/exit_pairer. Out: top RIPs per reason and folded lines, named through
// a GuestSymbolizer (func+0xoff when guest symbols are given, hex otherwise); rendered in report/.
// Assumption: distinct RIPs per trace are few (exit sites), so exact maps are fine.
#pragma once

#include <cstdint>
#include <array>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "analysis/exit_pairer.h"
#include "analysis/vm_grouper.h"
#include "decode/exit_reasons.h"
#include "symbols/guest_symbolizer.h"
#include "symbols/kaslr_slide.h"

namespace exitscope {

struct RipStat {
  uint64_t exits = 0, time_ns = 0;  // time_ns: exit -> entry, as --by rip has always shown it
  uint64_t handling_ns = 0;         // the report's handling time (blocked time out)
};

// One folded stack with both weights, for the HTML flame graph.
struct FoldedRow {
  std::string vm, vcpu, reason, frame;
  uint64_t exits = 0, handling_ns = 0;
};

// The `report --by rip` result, format-neutral (rendered by report/rip_reporter.h): per reason, most
// time first, its top RIPs named through the symbolizer.
struct RipRow {
  uint64_t rip = 0;
  std::string symbol;  // func+0xoff, or the hex RIP when nothing names it
  bool named = false;  // a symbol table named it
  std::string space;   // "kernel" / "user"
  RipStat stat;
};
struct RipReason {
  Isa isa = Isa::kUnknown;
  uint32_t reason = 0;
  std::string name;
  RipStat total;
  size_t distinct_rips = 0;
  std::vector<RipRow> rips;  // the top ones
};
struct RipSummary {
  uint64_t exits = 0, time_ns = 0;
  TimeUnit time_unit = TimeUnit::kNs;
  std::vector<std::string> clock_notes;
  std::string symbols;  // what named the RIPs (GuestSymbolizer::Describe)
  int64_t kaslr_slide = 0;
  std::vector<RipReason> reasons;
};

struct RipFilter {
  std::optional<int32_t> pid;  // VM process or vCPU thread
  std::optional<int32_t> vcpu;
  std::optional<ReasonCodes> reason;   // --reason in each ISA (decode/exit_reasons.h)
  std::optional<double> from_s, to_s;  // window in seconds from the first event, as report's
};

class RipTracker : public ExitSampleSink {
 public:
  RipTracker(const TraceMeta& meta, RipFilter filter) : meta_(meta), vms_(meta), filter_(filter) {}
  RipTracker(const RipTracker&) = delete;  // its cache points into its maps
  RipTracker& operator=(const RipTracker&) = delete;
  void OnExitSample(const ExitSample& s) override;
  void SetOrigin(uint64_t first_ts_ns) { origin_ns_ = first_ts_ns; }

  // Exit RIPs with their class, for KASLR slide inference (one per distinct reason/RIP).
  std::vector<SiteRip> SiteRips() const;
  // Per reason (most time first), its `top` RIPs (0: all).
  RipSummary Summarize(const GuestSymbolizer& symbols, size_t top) const;
  // Labels of the VMs whose exits were kept, and how many vCPU threads (the context block's).
  std::vector<std::string> VmLabels() const;
  size_t Threads() const;
  // "vm;vcpu;reason;function count" lines (Brendan Gregg's folded format), sorted.
  std::string RenderFolded(const GuestSymbolizer& symbols) const;
  // The same stacks as RenderFolded, merged alike, with exits and handling time.
  std::vector<FoldedRow> Folded(const GuestSymbolizer& symbols) const;

 private:
  using ReasonKey = std::pair<Isa, uint32_t>;
  std::string VmLabel(int32_t tid) const;
  std::string VcpuLabel(int32_t tid, int32_t vcpu) const;

  const TraceMeta& meta_;
  VmGrouper vms_;  // the one thread -> VM / vCPU identity, shared with report --by vm
  RipFilter filter_;
  std::map<ReasonKey, std::map<uint64_t, RipStat>> by_reason_;
  std::map<ReasonKey, RipStat> reason_totals_;
  std::map<std::tuple<int32_t, int32_t, ReasonKey, uint64_t>, RipStat> by_thread_;  // tid, vcpu, reason, rip
  // The three entries an exit adds to, for recent (thread, reason, RIP) keys: a loop's few sites
  // repeat, and three tree lookups per exit were most of --by rip's cost over report's. std::map
  // entries never move, and none is erased.
  struct CachedKey {
    int32_t tid = 0, vcpu = 0;
    ReasonKey reason{};
    uint64_t rip = 0;
    RipStat* stats[3] = {};
  };
  static constexpr size_t kCacheSlots = 256;
  std::array<CachedKey, kCacheSlots> cache_{};
  RipStat* const* Stats(int32_t tid, int32_t vcpu, ReasonKey reason, uint64_t rip);
  uint64_t exits_ = 0, time_ns_ = 0;
  uint64_t origin_ns_ = 0;
};

}  // namespace exitscope
