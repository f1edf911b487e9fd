// What the rule table (advise_rules.cc) is written with: MSR names, the trace's reference costs
// (a median in-kernel exit, a fast-path exit), the common evidence lines, and the bench prices several
// rules share. In: a rule's matched-exit summary (advise/exit_summary.h) and the profile. Out: numbers and human lines.
// Assumption: costs are handling times of timed exits; an untimed exit adds to counts and rates only.
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

// The median of ExitProfile::in_kernel (timed exits KVM kept in the kernel, HLT aside): the price of
// a fix that turns an expensive exit into a cheap one.
uint64_t CheapExitNs(const ExitProfile& p);
// The exits' ISA when they have one, else kUnknown (rules name halts and faults in its words).
Isa ProfileIsa(const ExitProfile& p);
std::string CheapExitLabel(const ExitProfile& p);  // what CheapExitNs is, as far as the trace knows
uint64_t FastPathNs(const ExitProfile& p);         // kFastPathQuantile of ExitProfile::in_kernel

// exits, exit time, mean per exit, and the busiest thread's rate.
std::vector<EvidenceItem> CountTime(const MatchedExits& m, const ExitProfile& p);

// Bench prices: n exits × one round trip (`what` names the test), kNone when the bench lacks it.
Pricing BenchEach(uint64_t n, std::optional<uint64_t> each, std::string_view what);
Pricing BenchInKernelExit(const MatchedExits& m, const ExitProfile& p, const BenchCosts& b);
// An MSR access's round trip by direction: RDMSR/WRMSR of IA32_TSC_DEADLINE, which KVM answers itself.
Pricing BenchMsrExitOf(const ExitSetStats& m, const BenchCosts& b);
inline Pricing BenchMsrExit(const MatchedExits& m, const ExitProfile&, const BenchCosts& b) {
  return BenchMsrExitOf(m, b);
}

// The matched exits grouped by the rule's key (SummarySpec::key), named by `name`; the top few by time
// with count (and time when any is timed). Keys with the same name are one group.
std::string TopBy(const MatchedExits& m, std::string (*name)(const ExitKey&), size_t n = 3);

}  // namespace exitscope::rules
