#include "advise/advisor.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "advise/rule_support.h"

namespace exitscope {
namespace {

constexpr size_t kTopRips = 5;  // RIPs listed as evidence per finding
// A thread active for less than this is rated over the trace's span: a rate over a few exits in a
// moment says nothing about the thread.
constexpr uint64_t kMinRateSpanNs = 10000000;

Confidence Lower(Confidence c) { return c == Confidence::kHigh ? Confidence::kMedium : Confidence::kLow; }

// Ranked findings (saving ≥ kMinRankedSavingShare) first, then the unpriced, then the minor ones.
int RankGroup(const Finding& f) {
  if (f.pricing.source == PriceSource::kNone) return 1;
  return f.minor ? 2 : 0;
}

std::vector<RipEvidence> TopRips(const MatchedExits& m, const GuestSymbolizer& symbols) {
  std::vector<RipEvidence> out;
  out.reserve(m.rips.size());
  for (const auto& [rip, r] : m.rips.entries()) {
    RipEvidence ev;
    ev.rip = rip;
    ev.exits = r.exits;
    ev.timed_exits = r.timed;
    ev.time_ns = r.time_ns;
    out.push_back(ev);
  }
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

std::string_view RemovesName(Removes r) {
  switch (r) {
    case Removes::kExit: return "the exit";
    case Removes::kVmmTrip: return "the trip to the VMM (the exit stays)";
    case Removes::kHandling: return "part of the handling (the exit stays)";
  }
  return "?";
}

std::string_view RemovesId(Removes r) {
  switch (r) {
    case Removes::kExit: return "exit";
    case Removes::kVmmTrip: return "vmm_trip";
    case Removes::kHandling: return "handling";
  }
  return "?";
}

Pricing Unpriced(std::string why) {
  Pricing pr;
  pr.source = PriceSource::kNone;
  pr.how = std::move(why);
  return pr;
}

ThreadRate BusiestThread(const ExitSetStats& m, const ExitProfile& p) {
  const std::map<int32_t, uint64_t>& per_tid = m.per_tid;
  ThreadRate best;
  best.threads = per_tid.size();
  for (const auto& [tid, n] : per_tid) {
    ThreadRate r;
    r.tid = tid;
    r.exits = n;
    auto it = p.threads.find(tid);
    uint64_t own = it != p.threads.end() ? it->second.SpanNs() : 0;
    r.vcpu = it != p.threads.end() ? it->second.vcpu : -1;
    r.own_span = own >= kMinRateSpanNs;
    r.span_ns = r.own_span ? own : p.SpanNs();
    r.per_s = r.span_ns ? n / (r.span_ns / 1e9) : 0;
    if (best.tid < 0 || r.per_s > best.per_s) {
      size_t threads = best.threads;
      best = r;
      best.threads = threads;
    }
  }
  return best;
}

std::string DescribeRate(const ThreadRate& r) {
  if (r.tid < 0) return "none";
  std::string who = r.vcpu >= 0 ? fmt::format("thread {} (vCPU {})", r.tid, r.vcpu) : fmt::format("thread {}", r.tid);
  return fmt::format("{:.1f} /s on the busiest vCPU thread, {}: {} exits over {} {}; {} thread{} with these exits",
                     r.per_s, who, r.exits, r.own_span ? "its active span" : "the trace's span",
                     FormatDuration(r.span_ns), r.threads, r.threads == 1 ? "" : "s");
}

std::string FormatPercent(double fraction) { return fmt::format("{:.1f} %", fraction * 100.0); }

namespace {

// What the advice says of the trace before any rule: counts, times, VMM trips, the bench's
// fit to it, and the exits per class. Returns the ISAs the exits came from.
std::set<Isa> DescribeTrace(const ExitProfile& profile, const GuestSymbolizer& symbols, const BenchCosts* bench,
                            Advice* out) {
  Advice& a = *out;
  a.exits = profile.exits;
  a.timed_exits = profile.timed_exits;
  a.exit_time_ns = profile.total_exit_ns;
  a.blocked_ns = profile.blocked_ns;
  a.span_ns = profile.SpanNs();
  a.partial = profile.partial;
  a.partial_counters = profile.partial_counters;
  a.vmm_known = profile.VmmTripsRecorded();
  a.vmm_inferred = profile.VmmTripsInferred();
  a.symbols = symbols.Describe();
  const std::set<Isa>& isas = profile.isas;
  a.vmm_exits = profile.vmm_exits;
  a.vmm_time_ns = profile.vmm_time_ns;
  if (bench) {
    a.bench = bench->Describe();
    Isa host = bench->HostIsa();
    if (bench->emulated) {
      a.bench_warning = "the bench ran without VMX/SVM (emulated guest): its round trips are emulator costs";
    } else if (host != Isa::kUnknown && !isas.empty() && !isas.count(host)) {
      auto name = [](Isa i) { return i == Isa::kVmx ? "an Intel VMX" : i == Isa::kSvm ? "an AMD SVM" : "an arm64"; };
      a.bench_warning = fmt::format(
          "the bench ran on {} host ({}), the trace on {} one: the prices come from "
          "another machine",
          name(host), bench->vendor, name(*isas.begin()));
    }
  }
  for (const auto& [k, c] : profile.classes) a.classes.push_back({k, c.exits, c.time_ns});
  a.isa = rules::ProfileIsa(profile);
  std::stable_sort(a.classes.begin(), a.classes.end(), [](const auto& x, const auto& y) { return x.exits > y.exits; });
  return isas;
}

// One rule over the profile: its finding, or why it was not flagged (pushed to *not_flagged).
std::optional<Finding> ApplyRule(const Rule& r, const MatchedExits& m, const ExitProfile& profile,
                                 const GuestSymbolizer& symbols, const BenchCosts* bench,
                                 std::vector<NotFlagged>* not_flagged) {
  const double total = profile.total_exit_ns ? double(profile.total_exit_ns) : 1.0;
  uint64_t t = SumHandlingNs(m);
  if (m.size() < r.min_exits) {
    not_flagged->push_back(
        {std::string(r.id),
         m.empty() ? "no matching exits" : fmt::format("only {} matching exits (needs {})", m.size(), r.min_exits)});
    return std::nullopt;
  }
  double count_share = profile.exits == 0 ? 0 : double(m.size()) / profile.exits;
  if (t / total < r.min_share && count_share < kMinCountShare) {
    not_flagged->push_back(
        {std::string(r.id),
         fmt::format("{} exits ({} of exits, {} of exit time: below {} / {})", m.size(), FormatPercent(count_share),
                     FormatPercent(t / total), FormatPercent(kMinCountShare), FormatPercent(r.min_share))});
    return std::nullopt;
  }
  Pricing pr = r.price(m, profile);
  if (!pr.flagged) {
    not_flagged->push_back(
        {std::string(r.id), fmt::format("{} of exits, {} of exit time; {}", FormatPercent(count_share),
                                        FormatPercent(t / total), pr.why_not)});
    return std::nullopt;
  }
  Finding f;
  f.id = r.id;
  const bool arm64 = rules::ProfileIsa(profile) == Isa::kArm64;
  f.title = !pr.title.empty()                 ? pr.title
            : arm64 && !r.arm64_title.empty() ? std::string(r.arm64_title)
                                              : std::string(r.title);
  f.fix = arm64 && !r.arm64_fix.empty() ? r.arm64_fix : r.fix;
  f.removes = pr.removes.value_or(r.removes);
  f.exits = m.size();
  f.timed_exits = TimedCount(m);
  f.time_ns = t;
  f.share = t / total;
  f.count_share = count_share;
  f.evidence = r.evidence(m, profile);
  if (bench && r.bench_price) {
    Pricing bp = r.bench_price(m, profile, *bench);
    if (pr.source == PriceSource::kNone && bp.source == PriceSource::kBench) {
      bp.how += fmt::format(" (the trace could not price it: {})", pr.how);
      pr = std::move(bp);
    } else if (bp.source == PriceSource::kBench) {
      f.evidence.push_back(
          {"priced from the bench instead", fmt::format("{}: {}", FormatDuration(bp.saving_ns), bp.how)});
    }
  }
  if (profile.partial) {
    pr.confidence = Lower(pr.confidence);
    pr.how += "; confidence lowered a step: the trace is PARTIAL";
  }
  f.pricing = std::move(pr);
  bool priced = f.pricing.source != PriceSource::kNone;
  f.saving_share = priced && profile.total_exit_ns ? f.pricing.saving_ns / total : 0;
  f.minor = priced && profile.total_exit_ns && f.saving_share < kMinRankedSavingShare;
  f.rips = TopRips(m, symbols);
  if (!m.rips.exact()) {
    f.evidence.push_back(
        {"RIPs (approximate)",
         fmt::format("more than {} distinct RIPs: {} dropped, each with at most {} of "
                     "time and exits; the RIPs listed are lower bounds",
                     m.rips.capacity(), m.rips.dropped_keys(), FormatDuration(m.rips.dropped_max_weight()))});
  }
  return f;
}

}  // namespace

Advice RunAdvisor(const ExitProfile& profile, const GuestSymbolizer& symbols, const BenchCosts* bench) {
  const std::span<const Rule> rules = profile.rules;
  Advice a;
  const std::set<Isa> isas = DescribeTrace(profile, symbols, bench, &a);
  const bool arm64 = isas.count(Isa::kArm64) != 0;
  const bool x86 = isas.count(Isa::kVmx) || isas.count(Isa::kSvm) || !arm64;
  for (size_t i = 0; i < rules.size(); ++i) {
    const Rule& r = rules[i];
    if ((r.isa == RuleIsa::kX86 && !x86) || (r.isa == RuleIsa::kArm64 && !arm64)) continue;
    if (auto f = ApplyRule(r, profile.Matched(i), profile, symbols, bench, &a.not_flagged))
      a.findings.push_back(std::move(*f));
  }
  std::stable_sort(a.findings.begin(), a.findings.end(), [](const Finding& x, const Finding& y) {
    if (RankGroup(x) != RankGroup(y)) return RankGroup(x) < RankGroup(y);
    if (x.pricing.saving_ns != y.pricing.saving_ns) return x.pricing.saving_ns > y.pricing.saving_ns;
    return x.time_ns != y.time_ns ? x.time_ns > y.time_ns : x.exits > y.exits;
  });
  return a;
}

}  // namespace exitscope
