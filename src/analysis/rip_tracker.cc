#include "analysis/rip_tracker.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "base/json_schema.h"
#include "base/units.h"
#include "decode/exit_reason_codes.h"
#include "decode/exit_reasons.h"

namespace exitscope {
namespace {

template <typename Map>
std::vector<std::pair<typename Map::key_type, RipStat>> ByTime(const Map& m) {
  std::vector<std::pair<typename Map::key_type, RipStat>> v(m.begin(), m.end());
  std::stable_sort(v.begin(), v.end(), [](const auto& a, const auto& b) {
    return a.second.time_ns != b.second.time_ns ? a.second.time_ns > b.second.time_ns
                                                : a.second.exits > b.second.exits;
  });
  return v;
}

// The symbol column: "-" when nothing names the RIP (no symbols, user space, outside the table).
std::string SymbolColumn(const GuestSymbolizer& symbols, uint64_t rip) {
  std::string name = symbols.Name(rip);
  return name == fmt::format("{:#x}", rip) ? "-" : name;
}

}  // namespace

void RipTracker::OnExitSample(const ExitSample& s) {
  Isa isa = s.isa != Isa::kUnknown ? s.isa : meta_.isa_hint;
  if (filter_.reason && !filter_.reason->Matches(s.isa, s.reason)) return;
  if (filter_.vcpu && *filter_.vcpu != s.vcpu_id) return;
  if (filter_.pid) {
    if (s.tid != *filter_.pid && vms_.VmId(s.tid) != *filter_.pid) return;
  }
  ReasonKey key{isa, s.reason};
  for (RipStat* r : {&by_reason_[key][s.rip], &reason_totals_[key], &by_thread_[{s.tid, s.vcpu_id, key, s.rip}]}) {
    ++r->exits;
    r->time_ns += s.dur_ns;
    r->handling_ns += s.handling_ns();
  }
  ++exits_;
  time_ns_ += s.dur_ns;
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

std::string RipTracker::RenderText(const GuestSymbolizer& symbols, size_t top, const std::string& source) const {
  const TimeUnit u = meta_.time_unit;
  std::string out = fmt::format("exitscope report --by rip: {}\n", source);
  for (const auto& note : meta_.clock_notes) out += fmt::format("warning: {}\n", note);
  out += fmt::format("{} timed exits, {} of exit time\n{}\n", exits_, FormatDuration(time_ns_, u), symbols.Describe());
  for (const auto& [key, total] : ByTime(reason_totals_)) {
    const auto& rips = by_reason_.at(key);
    out += fmt::format("\n{} — {} exits, {} ({:.1f}% of exit time), {} distinct RIPs\n",
                       ExitReasonName(key.first, key.second), total.exits, FormatDuration(total.time_ns, u),
                       time_ns_ ? 100.0 * total.time_ns / time_ns_ : 0.0, rips.size());
    out += fmt::format("  {:>9} {:>8} {:>11} {:>10}  {:<6} {:<18}  {}\n", "EXITS", "%REASON", "TIME", "MEAN", "SPACE",
                       "RIP", "SYMBOL");
    size_t n = 0;
    for (const auto& [rip, st] : ByTime(rips)) {
      if (top && n++ == top) break;
      out += fmt::format("  {:>9} {:>7.1f}% {:>11} {:>10}  {:<6} {:<18}  {}\n", st.exits,
                         100.0 * st.exits / total.exits, FormatDuration(st.time_ns, u), FormatDuration(st.time_ns / st.exits, u),
                         GuestSymbolizer::Space(rip), fmt::format("{:#x}", rip), SymbolColumn(symbols, rip));
    }
  }
  return out;
}

std::string RipTracker::RenderJson(const GuestSymbolizer& symbols, size_t top, const std::string& source) const {
  nlohmann::ordered_json j;
  TagSchema(&j, "rip", 1);
  j["kind"] = "exitscope.report.rip";
  j["source"] = source;
  j["symbols"] = symbols.Describe();
  j["kaslr_slide"] = symbols.slide().slide;
  j["exits"] = exits_;
  j["time_ns"] = time_ns_;
  j["time_unit"] = TimeUnitName(meta_.time_unit);  // of every *_ns value
  j["reasons"] = nlohmann::ordered_json::array();
  for (const auto& [key, total] : ByTime(reason_totals_)) {
    nlohmann::ordered_json r = {{"reason", ExitReasonName(key.first, key.second)},
                                {"isa", IsaName(key.first)},
                                {"exits", total.exits},
                                {"time_ns", total.time_ns}};
    r["rips"] = nlohmann::ordered_json::array();
    size_t n = 0;
    for (const auto& [rip, st] : ByTime(by_reason_.at(key))) {
      if (top && n++ == top) break;
      r["rips"].push_back({{"rip", fmt::format("{:#x}", rip)},
                           {"symbol", symbols.Name(rip)},
                           {"space", GuestSymbolizer::Space(rip)},
                           {"exits", st.exits},
                           {"time_ns", st.time_ns}});
    }
    j["reasons"].push_back(std::move(r));
  }
  return j.dump(2) + "\n";
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
  for (const FoldedRow& r : Folded(symbols)) lines[fmt::format("{};{};{};{}", r.vm, r.vcpu, r.reason, r.frame)] += r.exits;
  std::string out;
  for (const auto& [l, n] : lines) out += fmt::format("{} {}\n", l, n);
  return out;
}

}  // namespace exitscope
