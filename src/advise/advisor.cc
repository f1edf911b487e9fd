#include "advise/advisor.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <unordered_map>
#include <unordered_set>

namespace exitscope {
namespace {

constexpr size_t kTopRips = 5;  // RIPs listed as evidence per finding

std::vector<RipEvidence> TopRips(const MatchedExits& m, const GuestSymbolizer& symbols) {
  std::map<uint64_t, RipEvidence> by_rip;
  for (const AdvisedExit* e : m) {
    RipEvidence& r = by_rip[e->rip];
    r.rip = e->rip;
    ++r.exits;
    r.time_ns += e->dur_ns;
  }
  std::vector<RipEvidence> out;
  for (auto& [rip, r] : by_rip) out.push_back(r);
  std::sort(out.begin(), out.end(), [](const RipEvidence& a, const RipEvidence& b) {
    return a.time_ns != b.time_ns ? a.time_ns > b.time_ns : a.rip < b.rip;
  });
  if (out.size() > kTopRips) out.resize(kTopRips);
  for (auto& r : out) {
    r.symbol = symbols.Name(r.rip);
    r.space = std::string(GuestSymbolizer::Space(r.rip));
  }
  return out;
}

}  // namespace

std::string_view ConfidenceName(Confidence c) {
  switch (c) {
    case Confidence::kLow: return "low";
    case Confidence::kMedium: return "medium";
    case Confidence::kHigh: return "high";
  }
  return "?";
}

uint64_t SumDurNs(const MatchedExits& m) {
  uint64_t s = 0;
  for (const AdvisedExit* e : m) s += e->dur_ns;
  return s;
}

std::string FormatNs(uint64_t ns) {
  if (ns >= 1000000000ull) return fmt::format("{:.2f} s", ns / 1e9);
  if (ns >= 1000000ull) return fmt::format("{:.2f} ms", ns / 1e6);
  if (ns >= 1000ull) return fmt::format("{:.1f} us", ns / 1e3);
  return fmt::format("{} ns", ns);
}

std::string FormatPercent(double fraction) { return fmt::format("{:.1f} %", fraction * 100.0); }

uint64_t MedianDurNs(const MatchedExits& m) {
  if (m.empty()) return 0;
  std::vector<uint64_t> v;
  v.reserve(m.size());
  for (const AdvisedExit* e : m) v.push_back(e->dur_ns);
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return v[v.size() / 2];
}

std::vector<MatchedExits> Bursts(const MatchedExits& m, const ExitProfile& p, uint64_t gap_ns) {
  std::unordered_set<const AdvisedExit*> matched(m.begin(), m.end());
  struct ThreadState {
    const AdvisedExit* last = nullptr;  // last exit of this thread, matched or not
    int burst = -1;                     // index of the open burst
  };
  std::unordered_map<int32_t, ThreadState> threads;
  std::vector<MatchedExits> bursts;
  for (const AdvisedExit& e : p.exits) {
    ThreadState& t = threads[e.tid];
    bool is_matched = matched.count(&e) > 0;
    if (is_matched) {
      bool joins = t.burst >= 0 && t.last && matched.count(t.last) &&
                   e.ts_ns <= t.last->ts_ns + t.last->dur_ns + gap_ns;
      if (!joins) {
        t.burst = static_cast<int>(bursts.size());
        bursts.emplace_back();
      }
      bursts[t.burst].push_back(&e);
    } else {
      t.burst = -1;
    }
    t.last = &e;
  }
  return bursts;
}

Advice RunAdvisor(const ExitProfile& profile, const GuestSymbolizer& symbols, std::span<const Rule> rules) {
  Advice a;
  a.exits = profile.exits.size();
  a.exit_time_ns = profile.total_exit_ns;
  a.span_ns = profile.SpanNs();
  a.vmm_known = profile.Has(EventKind::kUserspaceExit);
  a.symbols = symbols.Describe();
  for (const AdvisedExit& e : profile.exits) {
    if (e.userspace) {
      ++a.vmm_exits;
      a.vmm_time_ns += e.dur_ns;
    }
  }
  std::map<ExitClass, Advice::ClassShare> classes;
  for (const AdvisedExit& e : profile.exits) {
    auto& c = classes[e.exit_class];
    c.exit_class = e.exit_class;
    ++c.exits;
    c.time_ns += e.dur_ns;
  }
  for (const auto& [k, c] : classes) a.classes.push_back(c);
  std::stable_sort(a.classes.begin(), a.classes.end(),
                   [](const auto& x, const auto& y) { return x.exits > y.exits; });
  const double total = profile.total_exit_ns ? double(profile.total_exit_ns) : 1.0;
  for (const Rule& r : rules) {
    MatchedExits m;
    for (const AdvisedExit& e : profile.exits) {
      if (r.match(e, profile)) m.push_back(&e);
    }
    uint64_t t = SumDurNs(m);
    if (m.size() < r.min_exits) {
      a.not_flagged.push_back({std::string(r.id), m.empty() ? "no matching exits"
                                                            : fmt::format("only {} matching exits (needs {})",
                                                                          m.size(), r.min_exits)});
      continue;
    }
    double count_share = profile.exits.empty() ? 0 : double(m.size()) / profile.exits.size();
    if (t / total < r.min_share && count_share < kMinCountShare) {
      a.not_flagged.push_back({std::string(r.id), fmt::format("{} exits ({} of exits, {} of exit time: below {} / {})",
                                                              m.size(), FormatPercent(count_share),
                                                              FormatPercent(t / total), FormatPercent(kMinCountShare),
                                                              FormatPercent(r.min_share))});
      continue;
    }
    Pricing pr = r.price(m, profile);
    if (!pr.flagged) {
      a.not_flagged.push_back({std::string(r.id), fmt::format("{} of exits, {} of exit time; {}",
                                                              FormatPercent(count_share), FormatPercent(t / total),
                                                              pr.why_not)});
      continue;
    }
    Finding f;
    f.id = r.id;
    f.title = r.title;
    f.fix = r.fix;
    f.exits = m.size();
    f.time_ns = t;
    f.share = t / total;
    f.count_share = count_share;
    f.pricing = std::move(pr);
    f.saving_share = f.pricing.saving_ns / total;
    f.evidence = r.evidence(m, profile);
    f.rips = TopRips(m, symbols);
    a.findings.push_back(std::move(f));
  }
  std::stable_sort(a.findings.begin(), a.findings.end(), [](const Finding& x, const Finding& y) {
    return x.pricing.saving_ns != y.pricing.saving_ns ? x.pricing.saving_ns > y.pricing.saving_ns
                                                      : x.time_ns > y.time_ns;
  });
  return a;
}

}  // namespace exitscope
