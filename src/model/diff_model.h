// The format-neutral diff of two reports (`exitscope diff BEFORE AFTER`): per exit reason and per
// detail key, each side's count, rate, share, handling-time mean/p50/p99, exit time and VMM split,
// the change, and whether it is beyond noise. Computed by analysis/report_diff from two Reports
// built by the one report pipeline; rendered by report/diff_reporter.h (text, JSON) and by any later
// reporter (HTML) from this struct alone.
// Assumption: both reports' times are in the same unit (the diff refuses otherwise).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/diagnostics.h"
#include "model/report_model.h"

namespace exitscope {

// Bump when a field of the diff JSON changes meaning or goes away (additions keep the version).
inline constexpr int kDiffSchemaVersion = 1;

// What a change is measured against: the raw counts of the run, per second of trace, or per second
// and vCPU thread.
enum class DiffNormalize { kRun, kSecond, kVcpuSecond };
constexpr std::string_view DiffNormalizeName(DiffNormalize n) {
  switch (n) {
    case DiffNormalize::kRun: return "run";
    case DiffNormalize::kSecond: return "second";
    case DiffNormalize::kVcpuSecond: return "vcpu-second";
  }
  return "?";
}

// One side of one row. Absent optionals are unknown (no timed exit; no kvm_userspace_exit recorded).
struct DiffCell {
  uint64_t count = 0;     // every exit of the row (timed or not)
  uint64_t timed = 0;     // exits with a handling time
  double rate_per_s = 0;  // count per second of trace (0 when the trace has no time in ns)
  double share_pct = 0;   // of the side's reported exits
  double per_unit = 0;    // count per normalisation unit (DiffNormalize): what the change compares
  std::optional<double> mean_ns, p50_ns, p99_ns;
  uint64_t total_ns = 0;                // summed handling time of the timed exits
  double time_per_unit = 0;             // total_ns per normalisation unit
  std::optional<uint64_t> vmm_count;    // exits that went to the VMM
  std::optional<double> vmm_share_pct;  // of the row's timed exits
  std::optional<uint64_t> vmm_ns, in_kernel_ns;
};

struct DiffRow {
  std::string kind;    // "reason", or a detail kind of DetailRow ("msr", "apic", "userspace" …)
  std::string key;     // reason name, or the detail key as text ("0x6e0", "0x40", "-")
  std::string name;    // detail: resolved name ("IA32_TSC_DEADLINE", "TMICT", "KVM_EXIT_MMIO")
  std::string access;  // detail: "read"/"write", "in"/"out" …
  uint32_t size = 0;
  Isa isa = Isa::kUnknown;  // reason rows: the reason's ISA and code (of the side that has it)
  uint32_t code = 0;
  DiffCell before, after;
  // Relative change of per_unit in % (after / before - 1); absent when before is 0 and after is not.
  std::optional<double> count_change_pct;
  double time_change_per_unit = 0;       // after.time_per_unit - before.time_per_unit (ns)
  double count_p = 1;                    // two-sided p of the count test (Holm-adjusted)
  std::optional<double> latency_p;       // of the latency test (Holm-adjusted); absent: too few exits
  std::optional<double> latency_effect;  // P(after exit slower than before exit), ties half; 0.5 = none
  bool count_beyond_noise = false, latency_beyond_noise = false;
  bool beyond_noise() const { return count_beyond_noise || latency_beyond_noise; }
};

struct DiffSide {
  ReportContext context;
  std::string selection;  // "pid 4242, vcpu 0" or "" for the whole trace
  // First to last kvm event (within --from/--to): what rates are per. 0 s when times are not ns.
  double duration_s = 0;
  uint64_t duration = 0;      // in the trace's unit
  uint64_t vcpu_threads = 0;  // vCPU threads with a reported exit
  uint64_t reported = 0;      // exits reported
  bool userspace_known = false;
  bool partial = false;
  std::vector<DiagnosticCounter> diagnostics;
};

// A --fail-if threshold: SUBJECT.METRIC OP VALUE, e.g. "HLT.p99 > +10%", "all.time > +1ms".
enum class DiffMetric { kCount, kRate, kMean, kP50, kP99, kTime };
constexpr std::string_view DiffMetricName(DiffMetric m) {
  switch (m) {
    case DiffMetric::kCount: return "count";
    case DiffMetric::kRate: return "rate";
    case DiffMetric::kMean: return "mean";
    case DiffMetric::kP50: return "p50";
    case DiffMetric::kP99: return "p99";
    case DiffMetric::kTime: return "time";
  }
  return "?";
}
struct DiffThreshold {
  std::string text;     // as given
  std::string subject;  // a reason name (any spelling), "all", or a detail "KIND:KEY" ("msr:0x6e0")
  DiffMetric metric = DiffMetric::kCount;
  bool greater = true, or_equal = false;  // OP: >, >=, <, <=
  bool relative = true;  // VALUE in % of the before value; else an absolute change in the metric's unit
  double value = 0;      // %, or ns (mean, p50, p99, time per unit), exits (count), exits/s (rate)
};
struct DiffThresholdResult {
  DiffThreshold threshold;
  bool matched = false;                         // the subject is in one of the traces
  std::optional<double> before, after, change;  // change: in % when relative
  bool tripped = false;
  bool beyond_noise = false;  // the row's change is beyond noise
};

struct DiffReport {
  int schema_version = kDiffSchemaVersion;
  DiffSide before, after;
  TimeUnit time_unit = TimeUnit::kNs;
  DiffNormalize normalize = DiffNormalize::kRun;
  std::string normalize_why;  // "the traces last 1.2 s and 3.4 s" …
  double alpha = 0.01, min_change_pct = 5, min_effect = 0.05;
  DiffRow total;                 // kind "total", key "all"
  std::vector<DiffRow> reasons;  // top movers first
  std::vector<DiffRow> details;  // top movers first
  std::string verdict;           // one line
  std::vector<DiffThresholdResult> thresholds;
  bool tripped = false;  // a threshold tripped
  bool partial = false;  // either side is PARTIAL
};

}  // namespace exitscope
