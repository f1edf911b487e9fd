// The advisor: a table of rules, each recognising one known exit-cost pattern in an ExitProfile (by
// counts and per-thread rates, so an untimed kvm_exit-only capture is advised on too) and pricing its
// fix by what the fix removes — the exit, the trip to the VMM, or part of the handling — from the
// trace's own handling times, or from this host's bench round trips when the trace has none.
// In: ExitProfile (+ optional guest symbols for RIP evidence, optional BenchCosts). Out: Findings,
// biggest saving first (a saving under kMinRankedSavingShare is never ranked first), and for every rule
// not flagged the reason why. Adding a rule = one Rule entry in advise_rules.cc with its
// match/price/evidence functions and thresholds as named constants.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/units.h"  // FormatDuration: every duration advise prints
#include "advise/bench_costs.h"
#include "advise/exit_collector.h"
#include "symbols/guest_symbolizer.h"

namespace exitscope {

enum class Confidence : uint8_t { kLow, kMedium, kHigh };
std::string_view ConfidenceName(Confidence c);

struct EvidenceItem {
  std::string name;   // "bursts", "mean burst length" …
  std::string value;  // already formatted for humans; JSON carries it as a string too
};

struct RipEvidence {
  uint64_t rip = 0;
  std::string symbol;  // func+0xoff, or hex
  std::string space;   // "kernel" / "user"
  uint64_t exits = 0;
  uint64_t timed_exits = 0;  // time_ns is theirs; none timed: time unknown
  uint64_t time_ns = 0;
};

// What a fix takes away, which decides its price: an avoided exit costs its whole handling; a fix
// that keeps the exit but ends the trip to the VMM saves the VMM's part; one that keeps the exit on
// a faster path saves the difference.
enum class Removes : uint8_t { kExit, kVmmTrip, kHandling };
std::string_view RemovesName(Removes r);  // for humans: "the exit", …
std::string_view RemovesId(Removes r);    // for JSON: "exit", "vmm_trip", "handling"

enum class PriceSource : uint8_t { kTrace, kBench, kNone };  // kNone: unpriced, `how` says why

struct Pricing {
  uint64_t saving_ns = 0;  // handling time the fix would remove
  PriceSource source = PriceSource::kTrace;
  std::string how;  // one line: how saving_ns was computed
  Confidence confidence = Confidence::kMedium;
  bool flagged = true;             // a rule may decline after looking closer (e.g. bursts of one)
  std::string why_not;             // when !flagged
  std::string title;               // replaces the rule's title when the trace cannot confirm its premise
  std::optional<Removes> removes;  // replaces the rule's when this trace's saving comes from elsewhere
};

struct Finding {
  std::string id, title, fix;
  Removes removes = Removes::kExit;
  uint64_t exits = 0, time_ns = 0;  // matched exits (timed or not) and their handling time
  uint64_t timed_exits = 0;
  double share = 0;        // of all exit time
  double count_share = 0;  // of all exits
  Pricing pricing;
  double saving_share = 0;  // saving_ns / all exit time (0 when either is unknown)
  // Priced, but saving under kMinRankedSavingShare of exit time: listed after the ranked findings.
  bool minor = false;
  std::vector<EvidenceItem> evidence;
  std::vector<RipEvidence> rips;  // top guest RIPs of the matched exits
};

struct NotFlagged {
  std::string id, reason;
};

// What a rule's match may know of the trace beyond the exit: only facts a streaming pass cannot know
// before its end are here, and a rule that reads one is kept under both answers (SummarySpec::
// vmm_dependent) until the end says which.
struct MatchContext {
  bool vmm_known = false;  // ExitProfile::VmmTripsRecorded()
};

// The host ISAs a rule is about: x86 rules (APIC, MSRs, DRs) are not checked on an arm64 trace, nor
// arm64's (system registers) on an x86 one; kAny rules run on every trace.
enum class RuleIsa : uint8_t { kAny, kX86, kArm64 };

struct Rule {
  std::string_view id;
  std::string_view title;
  std::string_view fix;
  // Which exits the pattern is about.
  bool (*match)(const AdvisedExit& e, const MatchContext& c);
  uint64_t min_exits;  // fewer matched exits: not a pattern worth a line
  double min_share;    // of total exit time; below it (and below kMinCountShare of exits) not worth doing
  Removes removes;     // what the fix takes away
  // From the trace's own times; source kNone when they cannot price it (no timed exits, …).
  Pricing (*price)(const MatchedExits& m, const ExitProfile& p);
  std::vector<EvidenceItem> (*evidence)(const MatchedExits& m, const ExitProfile& p);
  // From the bench's round trips (source kBench), or nullptr when no bench test measures this fix.
  Pricing (*bench_price)(const MatchedExits& m, const ExitProfile& p, const BenchCosts& b);
  RuleIsa isa = RuleIsa::kAny;
  // The state price/evidence read beyond the common counts, kept per rule while the trace streams by.
  SummarySpec summary = {};
  // The title in arm64's words, for a rule of both ISAs whose title names x86's (HLT, EPT/NPF).
  std::string_view arm64_title = {};
  // The fix on arm64, for a rule of both ISAs whose fix names x86-only remedies (guest
  // cpuidle-haltpoll, fast MMIO).
  std::string_view arm64_fix = {};
};

std::span<const Rule> AdviseRules();
// Every rule of AdviseRules() matched against one exit in one call, each match inlined: bit i is
// AdviseRules()[i].match(e, c). Valid only while MatchAdviseRulesInOrder() (the list it inlines is
// the table's, in order), which the collector checks before using it.
uint32_t MatchAdviseRules(const AdvisedExit& e, const MatchContext& c);
bool MatchAdviseRulesInOrder();

// A pattern that makes this share of all exits is worth naming even when each exit is cheap (exit time
// is dominated by halted vCPUs, so frequent cheap exits would never reach a time threshold).
inline constexpr double kMinCountShare = 0.05;
// A finding saving less than this share of exit time is never ranked first (issue 12): it is listed
// as minor, after the findings that are worth doing and those that could not be priced.
inline constexpr double kMinRankedSavingShare = 0.005;

struct Advice {
  uint64_t exits = 0, exit_time_ns = 0, span_ns = 0;
  uint64_t timed_exits = 0, blocked_ns = 0;
  bool partial = false;  // confidence of every finding lowered a step
  std::vector<std::string> partial_counters;
  std::string bench;                        // BenchCosts::Describe() when --bench was given
  std::string bench_warning;                // the bench ran on another kind of host
  uint64_t vmm_exits = 0, vmm_time_ns = 0;  // exits that went out to the VMM (kvm_userspace_exit)
  bool vmm_known = false;                   // ExitProfile::VmmTripsRecorded
  bool vmm_inferred = false;                // … from KVM's other detail events, none of them a trip
  struct ClassShare {
    ExitClass exit_class;
    uint64_t exits = 0, time_ns = 0;
  };
  std::vector<ClassShare> classes;  // every exit class present, most exits first
  Isa isa = Isa::kUnknown;          // of the exits, when they have one (their classes are named in its words)
  std::vector<Finding> findings;
  std::vector<NotFlagged> not_flagged;
  std::string symbols;  // GuestSymbolizer::Describe()
};

// The rules are the profile's (ExitCollector's): their summaries were built while the trace streamed.
Advice RunAdvisor(const ExitProfile& profile, const GuestSymbolizer& symbols, const BenchCosts* bench = nullptr);

// Shared helpers for rule functions. Costs are handling times of timed exits (blocked time excluded).
inline uint64_t SumHandlingNs(const ExitSetStats& m) { return m.sum_ns; }
inline uint64_t TimedCount(const ExitSetStats& m) { return m.timed; }
std::string FormatPercent(double fraction);  // "12.3 %"
// Of the timed ones; 0 when none is timed.
inline uint64_t MedianHandlingNs(const ExitSetStats& m) { return m.handling.Median(); }
Pricing Unpriced(std::string why);

// The busiest host vCPU thread among the matched exits: its exit rate over its own active span (first
// to last exit of any reason), or over the trace's span when the thread's is too short to rate.
struct ThreadRate {
  int32_t tid = -1, vcpu = -1;
  uint64_t exits = 0;
  double per_s = 0;
  uint64_t span_ns = 0;
  bool own_span = true;  // false: the trace's span was used
  size_t threads = 0;    // threads with matched exits
};
ThreadRate BusiestThread(const ExitSetStats& m, const ExitProfile& p);
std::string DescribeRate(const ThreadRate& r);

}  // namespace exitscope
