#include "advise/rule_support.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "decode/msr_names.h"

namespace exitscope::rules {

bool IsMsrExit(const AdvisedExit& e) {
  return e.exit_class == ExitClass::kMsrRead || e.exit_class == ExitClass::kMsrWrite || e.exit_class == ExitClass::kMsr;
}
bool IsPmuMsr(uint32_t msr) {
  // msr-index.h: MSR_P6_PERFCTR0.. / MSR_P6_EVNTSEL0.., IA32_PERFCTR/PMC, fixed counters & globals,
  // AMD MSR_K7_EVNTSEL0..PERFCTR3 and MSR_F15H_PERF_CTL/CTR.
  return (msr >= 0xc1 && msr <= 0xc8) || (msr >= 0x186 && msr <= 0x18d) || (msr >= 0x309 && msr <= 0x30c) ||
         (msr >= 0x38d && msr <= 0x391) || (msr >= 0x4c1 && msr <= 0x4c8) || (msr >= 0xc0010000 && msr <= 0xc0010007) ||
         (msr >= 0xc0010200 && msr <= 0xc001020b);
}
// The name from the one MSR table (decode/msr_names.h, msr-index.h's spelling), with the index.
std::string MsrLabel(uint32_t msr) {
  std::string name = exitscope::MsrName(msr);
  if (!name.empty()) return fmt::format("{} ({:#x})", name, msr);
  if (IsPmuMsr(msr)) return fmt::format("PMU {:#x}", msr);
  return fmt::format("{:#x}", msr);
}

// The cost of an exit KVM handles without leaving the kernel: the median of the trace's own
// in-kernel, non-HLT exits. Used to price a fix that turns an expensive exit into a cheap one.
uint64_t CheapExitNs(const ExitProfile& p) { return p.in_kernel.Median(); }
// What CheapExitNs is, said only as far as the trace knows: without kvm_userspace_exit the exits
// that went out to the VMM cannot be told apart.
std::string CheapExitLabel(const ExitProfile& p) {
  return p.VmmTripsRecorded() ? "median in-kernel exit" : fmt::format("median non-{} exit", HaltName(ProfileIsa(p)));
}
Isa ProfileIsa(const ExitProfile& p) { return p.isas.size() == 1 ? *p.isas.begin() : Isa::kUnknown; }
uint64_t FastPathNs(const ExitProfile& p) { return p.in_kernel.Quantile(kFastPathQuantile); }

std::vector<EvidenceItem> CountTime(const MatchedExits& m, const ExitProfile& p) {
  uint64_t timed = TimedCount(m);
  std::vector<EvidenceItem> ev = {
      {"exits", timed == m.size() ? fmt::format("{}", m.size()) : fmt::format("{} ({} timed)", m.size(), timed)}};
  if (timed) {
    ev.push_back({"exit time", FormatDuration(SumHandlingNs(m))});
    ev.push_back({"mean per exit", FormatDuration(SumHandlingNs(m) / timed)});
  } else {
    ev.push_back({"exit time", "unknown (no exit timed)"});
  }
  ev.push_back({"rate", DescribeRate(BusiestThread(m, p))});
  return ev;
}

// Bench prices: n exits × one round trip of `test`, or the extra of `with` over `without`.
Pricing BenchEach(uint64_t n, std::optional<uint64_t> each, std::string_view what) {
  if (!each) return Unpriced(fmt::format("the bench has no usable {} test", what));
  Pricing pr;
  pr.source = PriceSource::kBench;
  pr.saving_ns = n * *each;
  pr.how = fmt::format("{} exits × {} ({} on the bench host)", n, FormatDuration(*each), what);
  pr.confidence = Confidence::kLow;
  return pr;
}
Pricing BenchInKernelExit(const MatchedExits& m, const ExitProfile&, const BenchCosts& b) {
  return BenchEach(m.size(), b.RoundTripNs(kBenchInKernelExit), "an in-kernel exit's round trip (cpuid)");
}
// An MSR access's round trip by direction: RDMSR/WRMSR of IA32_TSC_DEADLINE, which KVM answers itself.
Pricing BenchMsrExitOf(const ExitSetStats& m, const BenchCosts& b) {
  const uint64_t writes = m.msr_writes, reads = m.n - m.msr_writes;
  auto r = b.RoundTripNs(kBenchMsrRead), w = b.RoundTripNs(kBenchMsrWrite);
  if ((reads && !r) || (writes && !w)) return Unpriced("the bench has no usable in-kernel MSR test");
  Pricing pr;
  pr.source = PriceSource::kBench;
  pr.saving_ns = reads * r.value_or(0) + writes * w.value_or(0);
  pr.how = fmt::format("{} writes × {} + {} reads × {} (in-kernel WRMSR/RDMSR round trips on the bench host)", writes,
                       FormatDuration(w.value_or(0)), reads, FormatDuration(r.value_or(0)));
  pr.confidence = Confidence::kLow;
  return pr;
}

std::string TopBy(const MatchedExits& m, std::string (*name)(const ExitKey&), size_t n) {
  std::map<std::string, std::pair<uint64_t, uint64_t>> g;
  for (const auto& [key, k] : m.keys.entries()) {
    auto& v = g[name(key)];
    v.first += k.n;
    v.second += k.time_ns;
  }
  const bool timed = m.timed > 0;
  std::vector<std::pair<std::string, std::pair<uint64_t, uint64_t>>> v(g.begin(), g.end());
  std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.second.second > b.second.second; });
  std::string out;
  for (size_t i = 0; i < v.size() && i < n; ++i) {
    out += fmt::format("{}{} ×{}", i ? ", " : "", v[i].first, v[i].second.first);
    if (timed) out += fmt::format(" ({})", FormatDuration(v[i].second.second));
  }
  if (!m.keys.exact()) out += fmt::format(" (approximate: more than {} distinct keys)", m.keys.capacity());
  return out;
}

}  // namespace exitscope::rules
