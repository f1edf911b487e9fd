#include "analysis/rip_tracker.h"

#include <fmt/format.h>

#include <algorithm>

#include "base/units.h"
#include "decode/exit_reason_codes.h"
#include "decode/exit_reasons.h"

namespace exitscope {
namespace {

template <typename Map>
std::vector<std::pair<typename Map::key_type, RipStat>> ByTime(const Map& m) {
  std::vector<std::pair<typename Map::key_type, RipStat>> v(m.begin(), m.end());
  std::stable_sort(v.begin(), v.end(), [](const auto& a, const auto& b) {
    return a.second.time_ns != b.second.time_ns ? a.second.time_ns > b.second.time_ns : a.second.exits > b.second.exits;
  });
  return v;
}

}  // namespace

void RipTracker::OnExitSample(const ExitSample& s) {
  Isa isa = s.isa != Isa::kUnknown ? s.isa : meta_.isa_hint;
  if (filter_.reason && !filter_.reason->Matches(s.isa, s.reason)) return;
  // The vCPU index as report --vcpu reads it: kvm_entry's vcpu_id, else the GUEST option's.
  if (filter_.vcpu && vms_.VcpuIndex(s.tid, s.vcpu_id) != *filter_.vcpu) return;
  if (filter_.from_s || filter_.to_s) {
    double t_s = static_cast<double>(s.ts_ns - std::min(s.ts_ns, origin_ns_)) * 1e-9;
    if ((filter_.from_s && t_s < *filter_.from_s) || (filter_.to_s && t_s >= *filter_.to_s)) return;
  }
  if (filter_.pid) {
    if (s.tid != *filter_.pid && vms_.VmId(s.tid) != *filter_.pid) return;
  }
  RipStat* const* stats = Stats(s.tid, s.vcpu_id, ReasonKey{isa, s.reason}, s.rip);
  for (int i = 0; i < 3; ++i) {
    ++stats[i]->exits;
    stats[i]->time_ns += s.dur_ns;
    stats[i]->handling_ns += s.handling_ns();
  }
  ++exits_;
  time_ns_ += s.dur_ns;
}

RipStat* const* RipTracker::Stats(int32_t tid, int32_t vcpu, ReasonKey reason, uint64_t rip) {
  const uint64_t h = (rip ^ (uint64_t{static_cast<uint32_t>(tid)} << 32) ^ (uint64_t{reason.second} << 8) ^
                      static_cast<uint64_t>(reason.first)) *
                     0x9e3779b97f4a7c15ull;
  static_assert(kCacheSlots == 256, "the slot is the hash's top 8 bits");
  CachedKey& c = cache_[h >> 56];
  if (c.stats[0] && c.tid == tid && c.vcpu == vcpu && c.reason == reason && c.rip == rip) return c.stats;
  c = {tid,
       vcpu,
       reason,
       rip,
       {&by_reason_[reason][rip], &reason_totals_[reason], &by_thread_[{tid, vcpu, reason, rip}]}};
  return c.stats;
}

std::vector<SiteRip> RipTracker::SiteRips() const {
  std::vector<SiteRip> out;
  for (const auto& [key, rips] : by_reason_) {
    ExitClass c = ClassifyExit(key.first, key.second);
    for (const auto& [rip, st] : rips) {
      if (GuestSymbolizer::IsKernel(rip)) out.push_back({rip, c});
    }
  }
  return out;
}

std::string RipTracker::VmLabel(int32_t tid) const { return vms_.FrameLabel(tid); }

std::string RipTracker::VcpuLabel(int32_t tid, int32_t vcpu) const {
  auto index = vms_.VcpuIndex(tid, vcpu);
  return index ? fmt::format("vcpu{}", *index) : fmt::format("tid-{}", tid);
}

std::vector<std::string> RipTracker::VmLabels() const {
  std::vector<int32_t> tids;
  for (const auto& [k, st] : by_thread_) {
    if (tids.empty() || tids.back() != std::get<0>(k)) tids.push_back(std::get<0>(k));
  }
  tids.erase(std::unique(tids.begin(), tids.end()), tids.end());
  return vms_.Labels(tids);
}

size_t RipTracker::Threads() const {
  std::vector<int32_t> tids;
  for (const auto& [k, st] : by_thread_) tids.push_back(std::get<0>(k));
  std::sort(tids.begin(), tids.end());
  return std::unique(tids.begin(), tids.end()) - tids.begin();
}

RipSummary RipTracker::Summarize(const GuestSymbolizer& symbols, size_t top) const {
  RipSummary out;
  out.exits = exits_;
  out.time_ns = time_ns_;
  out.time_unit = meta_.time_unit;
  out.clock_notes = meta_.clock_notes;
  out.symbols = symbols.Describe();
  out.kaslr_slide = symbols.slide().slide;
  for (const auto& [key, total] : ByTime(reason_totals_)) {
    const auto& rips = by_reason_.at(key);
    RipReason r{key.first, key.second, ExitReasonName(key.first, key.second), total, rips.size(), {}};
    for (const auto& [rip, st] : ByTime(rips)) {
      if (top && r.rips.size() == top) break;
      std::string name = symbols.Name(rip);
      bool named = name != fmt::format("{:#x}", rip);
      r.rips.push_back({rip, std::move(name), named, std::string(GuestSymbolizer::Space(rip)), st});
    }
    out.reasons.push_back(std::move(r));
  }
  return out;
}

std::vector<FoldedRow> RipTracker::Folded(const GuestSymbolizer& symbols) const {
  // Merged: several RIPs of one function fold together.
  std::map<std::tuple<std::string, std::string, std::string, std::string>, FoldedRow> rows;
  for (const auto& [k, st] : by_thread_) {
    const auto& [tid, vcpu, key, rip] = k;
    std::string frame = GuestSymbolizer::IsKernel(rip) ? symbols.Function(rip) : fmt::format("[user] {:#x}", rip);
    FoldedRow& r = rows[{VmLabel(tid), VcpuLabel(tid, vcpu), ExitReasonName(key.first, key.second), frame}];
    r.exits += st.exits;
    r.handling_ns += st.handling_ns;
  }
  std::vector<FoldedRow> out;
  out.reserve(rows.size());
  for (auto& [k, r] : rows) {
    std::tie(r.vm, r.vcpu, r.reason, r.frame) = k;
    out.push_back(std::move(r));
  }
  return out;
}

std::string RipTracker::RenderFolded(const GuestSymbolizer& symbols) const {
  std::map<std::string, uint64_t> lines;  // sorted as whole lines, as flamegraph.pl's input was
  for (const FoldedRow& r : Folded(symbols))
    lines[fmt::format("{};{};{};{}", r.vm, r.vcpu, r.reason, r.frame)] += r.exits;
  std::string out;
  for (const auto& [l, n] : lines) out += fmt::format("{} {}\n", l, n);
  return out;
}

}  // namespace exitscope
