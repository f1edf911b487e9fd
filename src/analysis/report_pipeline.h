// The whole `report` flow on one source: events → the driver (exit_driver.h) → ExitAggregator → Report.
// In: an opened KvmEventSource and ReportOptions. Out: a Report with context, totals, groups,
// details and every non-zero Diagnostics counter (the source's and the pairer's).
// Assumption: one pass, memory flat in trace size (nothing per exit is kept).
#pragma once

#include <functional>

#include "analysis/exit_aggregator.h"
#include "analysis/exit_driver.h"
#include "model/report_model.h"
#include "model/event_source.h"

namespace exitscope {

// The context block of every output that reads a trace (report, --by rip, advise): the source, its
// clock and span over every record; vms / vcpu_threads and filters are the caller's.
// The context block's "filters": what --pid/--vcpu/--reason/--from/--to selected, in words.
std::string FilterSummary(const ReportOptions& options, Isa isa);

ReportContext BuildContext(const TraceMeta& meta, const ExitRun& run);

Report BuildReport(KvmEventSource& source, const ReportOptions& options, const ProgressFn& progress = {});

}  // namespace exitscope
