// What the rule table (advise_rules.cc) is written with: MSR names, the trace's reference costs
// (a median in-kernel exit, a fast-path exit), the common evidence lines, and the bench prices several
// rules share. In: matched exits and the profile. Out: numbers and human lines. Assumption: costs are
// handling times of timed exits; an untimed exit adds to counts and rates only.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "advise/advisor.h"

namespace exitscope::rules {

// The cost of an exit KVM completes on its fast path (handle_fastpath_set_msr_irqoff: TSC_DEADLINE and
// x2APIC ICR writes), taken as this quantile of the trace's timed non-HLT exits: its quickest exits.
inline constexpr double kFastPathQuantile = 0.1;

// `exitscope bench` test names (kvmbench/bench_tests.cc) whose round trips price a fix.
inline constexpr std::string_view kBenchInKernelExit = "cpuid";
inline constexpr std::string_view kBenchMsrRead = "rdmsr_tsc_deadline";
inline constexpr std::string_view kBenchMsrWrite = "wrmsr_tsc_deadline";
inline constexpr std::string_view kBenchMsrReadToUser = "rdmsr_to_user";
inline constexpr std::string_view kBenchMsrWriteToUser = "wrmsr_to_user";
inline constexpr std::string_view kBenchPioToUser = "outl_to_user";
inline constexpr std::string_view kBenchPioIoeventfd = "pio_ioeventfd";
inline constexpr std::string_view kBenchMmioToUser = "mmio_user";
inline constexpr std::string_view kBenchMmioIoeventfd = "mmio_ioeventfd";
inline constexpr std::string_view kBenchVmmHalt = "hlt";

// Why a saving is unpriced when no matched exit has a time; the page adds how to get times.
inline constexpr const char* kNoTimes = "no exit times (kvm_entry not recorded or lost)";

bool IsMsrExit(const AdvisedExit& e);
// msr-index.h performance-counter MSRs (Intel and AMD).
bool IsPmuMsr(uint32_t msr);
std::string MsrLabel(uint32_t msr);  // "IA32_TSC_DEADLINE (0x6e0)", "PMU 0xc1", "0x1234"

uint64_t MedianNs(std::vector<uint64_t> v);
uint64_t QuantileNs(std::vector<uint64_t> v, double q);
// Handling times of the timed exits KVM kept in the kernel (as far as the trace tells), HLT aside.
std::vector<uint64_t> InKernelHandling(const ExitProfile& p);
// The median of InKernelHandling: the price of a fix that turns an expensive exit into a cheap one.
uint64_t CheapExitNs(const ExitProfile& p);
std::string CheapExitLabel(const ExitProfile& p);  // what CheapExitNs is, as far as the trace knows
uint64_t FastPathNs(const ExitProfile& p);         // kFastPathQuantile of InKernelHandling

// exits, exit time, mean per exit, and the busiest thread's rate.
std::vector<EvidenceItem> CountTime(const MatchedExits& m, const ExitProfile& p);

// Bench prices: n exits × one round trip (`what` names the test), kNone when the bench lacks it.
Pricing BenchEach(uint64_t n, std::optional<uint64_t> each, std::string_view what);
Pricing BenchInKernelExit(const MatchedExits& m, const ExitProfile& p, const BenchCosts& b);
// An MSR access's round trip by direction: RDMSR/WRMSR of IA32_TSC_DEADLINE, which KVM answers itself.
Pricing BenchMsrExit(const MatchedExits& m, const ExitProfile& p, const BenchCosts& b);

// Groups matched exits by a key and lists the top few with count and time.
template <typename KeyFn>
std::string TopBy(const MatchedExits& m, KeyFn key, size_t n = 3) {
  std::map<std::string, std::pair<uint64_t, uint64_t>> g;
  bool timed = false;
  for (const AdvisedExit* e : m) {
    auto& v = g[key(*e)];
    ++v.first;
    v.second += e->handling_ns;
    timed |= e->timed;
  }
  std::vector<std::pair<std::string, std::pair<uint64_t, uint64_t>>> v(g.begin(), g.end());
  std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.second.second > b.second.second; });
  std::string out;
  for (size_t i = 0; i < v.size() && i < n; ++i) {
    out += fmt::format("{}{} ×{}", i ? ", " : "", v[i].first, v[i].second.first);
    if (timed) out += fmt::format(" ({})", FormatDuration(v[i].second.second));
  }
  return out;
}

}  // namespace exitscope::rules
