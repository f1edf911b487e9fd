// The whole `report` flow on one source: events → the driver (exit_driver.h) → ExitAggregator → Report.
// In: an opened KvmEventSource and ReportOptions. Out: a Report with context, totals, groups,
// details and every non-zero Diagnostics counter (the source's and the pairer's).
// Assumption: one pass, memory flat in trace size (nothing per exit is kept).
#pragma once

#include <functional>
#include <vector>

#include "analysis/exit_aggregator.h"
#include "analysis/exit_driver.h"
#include "model/report_model.h"
#include "model/event_source.h"

namespace exitscope {

// The context block's "filters": what --pid/--vcpu/--reason/--from/--to selected, in words.
std::string FilterSummary(const ReportOptions& options, Isa isa);

// The context block of every output that reads a trace (report, --by rip, advise): the source, its
// clock and span over every record; vms / vcpu_threads and filters are the caller's.
ReportContext BuildContext(const TraceMeta& meta, const ExitRun& run);

// What else sees the report's pass: sinks fed every exit the report accepted (its filters applied),
// told the trace's origin first (the first event's time, from which --from/--to count).
struct ReportTaps {
  std::vector<ExitSampleSink*> accepted;
  KvmEventTap* events = nullptr;  // every kvm event (advise's collector), before the pairer
  std::function<void(uint64_t first_ts_ns)> on_start;
};

Report BuildReport(KvmEventSource& source, const ReportOptions& options, const ProgressFn& progress = {},
                   const ReportTaps& taps = {});

}  // namespace exitscope
