// The format-neutral report: what `exitscope report` shows, before any rendering. Built by
// analysis/exit_aggregator from ExitSamples; rendered by report/text_reporter and json_reporter.
// All durations in ns; names already resolved (exit reasons, MSRs, ports, KVM_EXIT_*).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/diagnostics.h"
#include "model/kvm_event.h"
#include "model/trace_meta.h"

namespace exitscope {

// Bump when a field of the JSON output changes meaning or goes away (additions keep the version).
// 2: "count" is every exit (timed or not), "timed_count" the exits with a time (1 had timed only).
// 3: the *_ns stats (total, mean, percentiles, min/max) and "userspace_ns"/"in_kernel_ns" are handling
//    time, without the time a vCPU was blocked (HLT waiting for work), which is in "blocked_ns";
//    stats of an exit set without timed exits and the VMM split of a trace without kvm_userspace_exit
//    are null (they were 0).
inline constexpr int kReportSchemaVersion = 3;

// Handling time (ExitSample::handling_ns: exit -> entry minus the time the vCPU was blocked).
struct DurationStats {
  uint64_t count = 0;
  uint64_t total_ns = 0;
  uint64_t min_ns = 0, max_ns = 0;
  double mean_ns = 0;
  uint64_t p50_ns = 0, p90_ns = 0, p99_ns = 0, p999_ns = 0;
};

// One non-empty bucket of a handling-time histogram (analysis/log_histogram.h buckets: ~0.4 % wide,
// the same bounds in every report, so two reports' bins line up by lo_ns).
struct HistogramBin {
  uint64_t lo_ns = 0, hi_ns = 0;  // inclusive bounds
  uint64_t count = 0;
};

struct ReasonRow {
  std::string name;  // kernel spelling, e.g. "EPT_VIOLATION", "npf"
  Isa isa = Isa::kUnknown;
  uint32_t code = 0;
  uint64_t count = 0;                              // every exit of the reason (timed or not)
  DurationStats stats;                             // over the timed ones (stats.count of them)
  double pct_count = 0, pct_time = 0;              // of the group's exits / timed handling time
  uint64_t blocked_ns = 0;                         // summed blocked time of the timed ones (apart from stats)
  uint64_t userspace_count = 0, userspace_ns = 0;  // exits that went to the VMM
  std::vector<HistogramBin> histogram;             // handling time, ascending; only with ReportOptions::histograms
};

struct GroupReport {
  std::string kind;     // "all", "vm", "vcpu", "cpu"
  int64_t id = 0;       // tgid / tid / cpu
  std::string label;    // "Salamander4 (pid 60250)", "tid 506 kvmprobe (vcpu 0)", "CPU 1"
  uint64_t count = 0;   // every exit (timed or not)
  DurationStats total;  // over the timed ones
  uint64_t blocked_ns = 0;
  uint64_t userspace_count = 0, userspace_ns = 0;
  std::vector<ReasonRow> reasons;  // most exits first (perf kvm stat order), ties by time
  uint64_t reasons_hidden = 0;     // rows cut by --top
};

struct DetailRow {
  std::string kind;       // "msr", "pio", "mmio", "cr", "hypercall", "userspace"; from the exit itself
                          // (decode/exit_qualification.h): "apic", "vector", "dr", "cr_exit", "io_exit", "ept"
  uint64_t key = 0;       // MSR index, port, GPA, CR number, hypercall nr, KVM_EXIT_*
  std::string key_text;   // how text shows the key when not as the kind's default ("-": unknown)
  bool key_known = true;  // false: JSON prints the key as null
  std::string name;       // resolved name, may be empty
  std::string access;     // "read"/"write", "in"/"out", "unsatisfied-read", "" …
  uint32_t size = 0;      // pio/mmio bytes
  uint64_t count = 0;
  uint64_t exit_ns = 0;  // summed handling time of the exits that carried this detail
  uint64_t failed = 0;   // kvm_msr accesses that raised #GP
  // Handling time of the timed exits that carried it; only with ReportOptions::histograms.
  DurationStats stats;
  std::vector<HistogramBin> histogram;
};

// How a detail row's key is written for people ("0x6e0", "TMICT"'s "0x380", "6", "*" for the row of
// keys past the cap); text tables, CSV and the diff show the same words.
std::string DetailKeyText(const DetailRow& d);

struct ReportContext {
  std::string source, format, kernel, isa, clock, cpu_description;
  int cpu_count = 0;
  // Of every record the source read (kvm events or not). In time_unit, as every *_ns of the report.
  uint64_t first_ts_ns = 0, last_ts_ns = 0;
  TimeUnit time_unit = TimeUnit::kNs;
  std::vector<std::string> clock_notes;  // the clock's unit, conversions not applied
  std::vector<std::string> vms;          // labels of the VMs seen
  uint64_t vcpu_threads = 0;
  std::string filters;  // human summary of active filters, "" for none
};

struct ReportTotals {
  uint64_t events = 0;                               // KvmEvents read
  uint64_t kvm_first_ts_ns = 0, kvm_last_ts_ns = 0;  // of the first / last kvm event (the --from origin)
  uint64_t records = 0;                              // records the source read, kvm events or not
  uint64_t exits = 0;                                // kvm_exit events
  uint64_t entries = 0;                              // kvm_entry events
  uint64_t timed = 0;                                // exits paired with their entry (before filters)
  uint64_t untimed = 0;                              // exits without a time (before filters)
  uint64_t filtered_out = 0;
  uint64_t reported = 0;          // exits reported (after filters), timed or not
  uint64_t reported_threads = 0;  // vCPU threads with a reported exit (after filters)
  DurationStats all;              // over reported timed exits
  uint64_t blocked_ns = 0;
  uint64_t userspace_count = 0, userspace_ns = 0;
  // The in-kernel vs VMM split is only claimed when kvm_userspace_exit was recorded (one was seen).
  bool userspace_known = false;
  uint64_t wakeups = 0, wakeups_polled = 0, wakeups_invalid = 0;  // kvm_vcpu_wakeup (0: not recorded)
  uint64_t silences = 0, silence_ns = 0;                          // gaps of every CPU >= kSilenceNs (exit_pairer.h)
  uint64_t timer_irqs = 0, vgic_irqs = 0;  // arm64 kvm_timer_update_irq / vgic_update_irq_pending
};

struct Report {
  int schema_version = kReportSchemaVersion;
  ReportContext context;
  std::string group_by = "reason";
  ReportTotals totals;
  std::vector<GroupReport> groups;
  std::vector<DetailRow> details;  // by kind, then count descending
  uint64_t details_hidden = 0;
  std::vector<DiagnosticCounter> diagnostics;
  bool partial = false;  // a data-loss or error counter is non-zero
};

}  // namespace exitscope
