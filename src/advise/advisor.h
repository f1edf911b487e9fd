// The advisor: a table of rules, each recognising one known exit-cost pattern in an ExitProfile and
// pricing its fix from the trace's own measured exit times. In: ExitProfile (+ optional guest
// symbols for RIP evidence). Out: Findings, biggest saving first, and for every rule not flagged the
// reason why (so a clean trace says what was checked). Adding a rule = one Rule entry in
// advise_rules.cc with its match/price/evidence functions and thresholds as named constants.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

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
  std::string symbol;   // func+0xoff, or hex
  std::string space;    // "kernel" / "user"
  uint64_t exits = 0;
  uint64_t time_ns = 0;
};

struct Pricing {
  uint64_t saving_ns = 0;   // exit time the fix would remove, from measured exits
  std::string how;          // one line: how saving_ns was computed
  Confidence confidence = Confidence::kMedium;
  bool flagged = true;      // a rule may decline after looking closer (e.g. bursts of one)
  std::string why_not;      // when !flagged
};

struct Finding {
  std::string id, title, fix;
  uint64_t exits = 0, time_ns = 0;   // matched exits and their handling time
  double share = 0;                  // of all exit time
  double count_share = 0;            // of all exits
  Pricing pricing;
  double saving_share = 0;           // saving_ns / all exit time
  std::vector<EvidenceItem> evidence;
  std::vector<RipEvidence> rips;     // top guest RIPs of the matched exits
};

struct NotFlagged {
  std::string id, reason;
};

using MatchedExits = std::vector<const AdvisedExit*>;

struct Rule {
  std::string_view id;
  std::string_view title;
  std::string_view fix;
  // Which exits the pattern is about.
  bool (*match)(const AdvisedExit& e, const ExitProfile& p);
  uint64_t min_exits;   // fewer matched exits: not a pattern worth a line
  double min_share;     // of total exit time; below it (and below kMinCountShare of exits) not worth doing
  Pricing (*price)(const MatchedExits& m, const ExitProfile& p);
  std::vector<EvidenceItem> (*evidence)(const MatchedExits& m, const ExitProfile& p);
};

std::span<const Rule> AdviseRules();

// A pattern that makes this share of all exits is worth naming even when each exit is cheap (exit time
// is dominated by halted vCPUs, so frequent cheap exits would never reach a time threshold).
inline constexpr double kMinCountShare = 0.05;

struct Advice {
  uint64_t exits = 0, exit_time_ns = 0, span_ns = 0;
  uint64_t vmm_exits = 0, vmm_time_ns = 0;  // exits that went out to the VMM (kvm_userspace_exit)
  bool vmm_known = false;                   // the trace had kvm_userspace_exit events
  struct ClassShare {
    ExitClass exit_class;
    uint64_t exits = 0, time_ns = 0;
  };
  std::vector<ClassShare> classes;          // every exit class present, most exits first
  std::vector<Finding> findings;
  std::vector<NotFlagged> not_flagged;
  std::string symbols;                      // GuestSymbolizer::Describe()
};

Advice RunAdvisor(const ExitProfile& profile, const GuestSymbolizer& symbols,
                  std::span<const Rule> rules = AdviseRules());

// Shared helpers for rule functions.
uint64_t SumDurNs(const MatchedExits& m);
std::string FormatNs(uint64_t ns);            // "1.23 ms", "850 ns"
std::string FormatPercent(double fraction);   // "12.3 %"
uint64_t MedianDurNs(const MatchedExits& m);
// Splits a thread's matched exits into back-to-back bursts: an exit joins the burst when it starts
// within gap_ns of the previous one's end and no other exit of that thread came between.
std::vector<MatchedExits> Bursts(const MatchedExits& m, const ExitProfile& p, uint64_t gap_ns);

}  // namespace exitscope
